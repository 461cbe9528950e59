import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { TextDecoderStream, type ReadableStream as WebReadableStream } from 'node:stream/web';
import * as openpgp from 'openpgp';
import { RejectError, SettleError, EXIT_PROBLEM, errorMessage } from '../../errors.js';
import { fingerprintOf, type DecodeOptions } from './decodeSettings.js';
import { writeLayer, type LayerOutput } from './layers.js';
import { ByteCounter, type MeterLimits } from './meter.js';

/**
 * An encrypted delivery while no --pgp-key is configured: not the file's fault, so it is not
 * rejected: it fails and stays in the intake (exit 1, named every run) until the key is set.
 */
export class NoDecryptionKeyError extends SettleError {
  constructor(recipients: string) {
    super(`it is OpenPGP-encrypted (for key ${recipients}) and no --pgp-key is configured`, EXIT_PROBLEM);
    this.name = 'NoDecryptionKeyError';
  }
}

const hexIds = (ids: openpgp.KeyID[]) => ids.map((k) => k.toHex().toUpperCase()).join(', ') || 'unknown';

/** openpgp's messages, said as what they mean for the delivery, with the keys involved. */
function explain(err: unknown, message: openpgp.Message<unknown> | undefined, o: DecodeOptions): RejectError {
  const text = errorMessage(err);
  const required = o.verificationKey ? fingerprintOf(o.verificationKey) : '';
  const signer = /signing key with key ID ([0-9a-f]+)/i.exec(text);
  let why: string;
  if (signer) why = `signed by key ${signer[1]!.toUpperCase()}, not by the required key ${required} (--pgp-verify-key)`;
  else if (/not signed/i.test(text)) why = `not signed: a signature by key ${required} is required (--pgp-verify-key)`;
  else if (/session key decryption failed|no decryption key|decryption key packet/i.test(text)) {
    const recipients = message ? hexIds(message.getEncryptionKeyIDs()) : 'unknown';
    why = `cannot be decrypted with --pgp-key ${o.decryptionKey ? fingerprintOf(o.decryptionKey) : ''}: it is encrypted for key ${recipients}`;
  } else if (/signature|digest/i.test(text)) why = `its signature does not verify (tampered with, or damaged): ${text}`;
  else why = `damaged or tampered with (${text})`;
  return new RejectError(`OpenPGP: ${why}`, {}, { cause: err });
}

/**
 * Decrypts and/or verifies one OpenPGP message, streaming. Plaintext is released before the
 * integrity check at the end (allowUnauthenticatedStream) only because it goes to a private
 * staging file that is used after the whole stream, and its check, succeeded: memory stays flat.
 */
export async function pgpLayer(
  input: string,
  output: string,
  armored: boolean,
  limits: Omit<MeterLimits, 'consumed'>,
  o: DecodeOptions,
): Promise<LayerOutput & { verified: boolean }> {
  const counter = new ByteCounter();
  const file = createReadStream(input);
  const source = file.pipe(counter);
  file.on('error', (err) => counter.destroy(err));
  let message: openpgp.Message<unknown> | undefined;
  try {
    const bytes = Readable.toWeb(source) as WebReadableStream<Uint8Array>;
    // armour is text to openpgp: decoded here, after the counter (a byte stream) has seen it
    message = armored
      ? await openpgp.readMessage({ armoredMessage: bytes.pipeThrough(new TextDecoderStream()) as unknown as ReadableStream<string> })
      : await openpgp.readMessage({ binaryMessage: bytes as unknown as ReadableStream<Uint8Array> });
  } catch (err) {
    source.destroy();
    throw explain(err, undefined, o);
  }
  const encrypted =
    message.getEncryptionKeyIDs().length > 0 || message.packets.filterByTag(openpgp.enums.packet.symEncryptedSessionKey).length > 0;
  if (encrypted && !o.decryptionKey) {
    source.destroy();
    throw new NoDecryptionKeyError(hexIds(message.getEncryptionKeyIDs()));
  }
  const verify = o.verificationKey
    ? { verificationKeys: o.verificationKey, expectSigned: true }
    : { verificationKeys: [] as openpgp.PublicKey[], expectSigned: false };
  const config = { allowUnauthenticatedStream: true };
  let data: WebReadableStream<Uint8Array>;
  try {
    const r = encrypted
      ? await openpgp.decrypt({
          message: message as openpgp.Message<ReadableStream<Uint8Array>>,
          decryptionKeys: o.decryptionKey,
          ...verify,
          format: 'binary',
          config,
        })
      : await openpgp.verify({ message: message as openpgp.Message<ReadableStream<Uint8Array>>, ...verify, format: 'binary', config });
    data = r.data as unknown as WebReadableStream<Uint8Array>;
  } catch (err) {
    source.destroy();
    throw explain(err, message, o);
  }
  const out = await writeLayer(
    output,
    Readable.fromWeb(data),
    limits,
    () => counter.bytes,
    (err) => explain(err, message, o),
  );
  return { ...out, verified: o.verificationKey !== undefined };
}
