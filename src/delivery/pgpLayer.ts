import { pipeline, Readable } from 'node:stream';
import { TextDecoderStream, type ReadableStream as WebReadableStream } from 'node:stream/web';
import * as openpgp from 'openpgp';
import { RejectError, SettleError, EXIT_PROBLEM, errorMessage } from '../errors.js';
import { fingerprintOf, type DecodeOptions } from './decodeSettings.js';
import { guarded, ignore, type OpenLayer } from './layers.js';
import { ByteCounter } from './meter.js';

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

/**
 * Who signed, as precisely as the signature says: the issuer's fingerprint (RFC 9580's Issuer
 * Fingerprint, which GnuPG writes), else its key ID. Known only once the signature, at the end
 * of the message, has been read.
 */
async function signerOf(signatures: openpgp.VerifyMessageResult['signatures'] | undefined): Promise<string | undefined> {
  const first = signatures?.[0];
  if (!first) return undefined;
  // settled by now when the message got that far; a message cut before its signature never settles it
  const notRead = new Promise<undefined>((resolve) => setImmediate(resolve, undefined));
  const sig = await Promise.race([first.signature.catch(() => undefined), notRead]);
  const fingerprint = sig?.packets[0]?.issuerFingerprint;
  return fingerprint ? Buffer.from(fingerprint).toString('hex').toUpperCase() : first.keyID.toHex().toUpperCase();
}

interface Context {
  message?: openpgp.Message<unknown>;
  signatures?: openpgp.VerifyMessageResult['signatures'];
}

/** openpgp's messages, said as what they mean for the delivery, with the keys involved. */
async function explain(err: unknown, c: Context, o: DecodeOptions): Promise<RejectError> {
  const text = errorMessage(err);
  const required = o.verificationKey ? fingerprintOf(o.verificationKey) : '';
  const signedBy = /signing key with key ID ([0-9a-f]+)/i.exec(text);
  let why: string;
  if (signedBy) {
    const signer = (await signerOf(c.signatures)) ?? signedBy[1]!.toUpperCase();
    why = `signed by key ${signer}, not by the required key ${required} (--pgp-verify-key)`;
  } else if (/not signed/i.test(text)) why = `not signed: a signature by key ${required} is required (--pgp-verify-key)`;
  else if (/session key decryption failed|no decryption key|decryption key packet/i.test(text)) {
    const recipients = c.message ? hexIds(c.message.getEncryptionKeyIDs()) : 'unknown';
    why = `cannot be decrypted with --pgp-key ${o.decryptionKey ? fingerprintOf(o.decryptionKey) : ''}: it is encrypted for key ${recipients}`;
  } else {
    const signer = await signerOf(c.signatures);
    const by = signer ? ` (signed by key ${signer})` : '';
    if (/signature|digest/i.test(text)) why = `its signature does not verify (tampered with, or damaged)${by}: ${text}`;
    else why = `damaged or tampered with${by} (${text})`;
  }
  return new RejectError(`OpenPGP: ${why}`, {}, { cause: err });
}

/**
 * Decrypts and/or verifies one OpenPGP message as it streams in. Plaintext is released before
 * the integrity check at the end (allowUnauthenticatedStream) only because it goes to a
 * private staging file that is used after the whole stream, and its check, succeeded: memory
 * stays flat.
 */
export async function pgpLayer(input: Readable, armored: boolean, decodeOptions: DecodeOptions): Promise<OpenLayer> {
  const counter = new ByteCounter();
  const source = pipeline(input, counter, ignore);
  const context: Context = {};
  const fail = async (err: unknown) => {
    source.destroy();
    throw await explain(err, context, decodeOptions);
  };
  try {
    const bytes = Readable.toWeb(source) as WebReadableStream<Uint8Array>;
    // armour is text to openpgp: decoded here, after the counter (a byte stream) has seen it
    context.message = armored
      ? await openpgp.readMessage({ armoredMessage: bytes.pipeThrough(new TextDecoderStream()) as unknown as ReadableStream<string> })
      : await openpgp.readMessage({ binaryMessage: bytes as unknown as ReadableStream<Uint8Array> });
  } catch (err) {
    return fail(err);
  }
  const message = context.message;
  const encrypted =
    message.getEncryptionKeyIDs().length > 0 || message.packets.filterByTag(openpgp.enums.packet.symEncryptedSessionKey).length > 0;
  if (encrypted && !decodeOptions.decryptionKey) {
    source.destroy();
    throw new NoDecryptionKeyError(hexIds(message.getEncryptionKeyIDs()));
  }
  const verify = decodeOptions.verificationKey
    ? { verificationKeys: decodeOptions.verificationKey, expectSigned: true }
    : { verificationKeys: [] as openpgp.PublicKey[], expectSigned: false };
  const config = { allowUnauthenticatedStream: true };
  let data: WebReadableStream<Uint8Array>;
  try {
    const verifyMessageResult = encrypted
      ? await openpgp.decrypt({
          message: message as openpgp.Message<ReadableStream<Uint8Array>>,
          decryptionKeys: decodeOptions.decryptionKey,
          ...verify,
          format: 'binary',
          config,
        })
      : await openpgp.verify({ message: message as openpgp.Message<ReadableStream<Uint8Array>>, ...verify, format: 'binary', config });
    context.signatures = verifyMessageResult.signatures;
    // openpgp types its streams from @openpgp/web-stream-tools, which is not installed: r.data reads as `any`
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- the cast says what r.data is
    data = verifyMessageResult.data as unknown as WebReadableStream<Uint8Array>;
  } catch (err) {
    return fail(err);
  }
  return {
    output: guarded(Readable.fromWeb(data), (err) => explain(err, context, decodeOptions)),
    consumed: () => counter.bytes,
    verified: decodeOptions.verificationKey !== undefined,
  };
}
