import { createReadStream, createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { pipeline as pipelineDone } from 'node:stream/promises';
import { RejectError } from '../errors.js';
import { fingerprintOf, type DecodeOptions } from './decodeSettings.js';
import { gunzipLayer, ignore, peek, type OpenLayer } from './layers.js';
import { Meter } from './meter.js';
import { HEAD_BYTES, sniff, sniffHead, type Wrapping } from './sniff.js';

/** gzip in PGP in zip is already unusual; deeper is a file built to hurt, not a delivery. */
const MAX_LAYERS = 4;

export interface DeliveredFile {
  /** the staged copy of the delivered bytes */
  path: string;
  sha256: string;
  size: number;
}

/** The content inside a delivery: for a plain file, the delivered file itself (no second copy). */
export interface DecodedContent {
  path: string;
  sha256: string;
  size: number;
  /** the wrappings taken off, outermost first (`pgp`, `gzip`, `zip`); empty for a plain file */
  layers: Wrapping[];
}

/** Where a delivery's bytes come from: a stream, and the file that holds them when there is one. */
export interface DeliveredBytes {
  stream: Readable;
  /** a zip is read from a file (its directory is at the end): without one, its bytes are spooled to one */
  file?: string;
  /** the delivered file's size: no layer may give more than the ratio limit times it */
  size: number;
}

async function openLayer(wrapping: Wrapping, input: DeliveredBytes, o: DecodeOptions, spool: string): Promise<OpenLayer> {
  if (wrapping === 'gzip') return gunzipLayer(input.stream);
  // the zip and OpenPGP libraries are loaded only for a delivery that needs them
  if (wrapping === 'zip') {
    let file = input.file;
    if (file === undefined) {
      file = spool;
      await pipelineDone(input.stream, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } else input.stream.destroy(); // read from the file instead
    return (await import('./zipLayer.js')).unzipLayer(file, o.maxDecodedBytes, o.memberPattern);
  }
  return (await import('./pgpLayer.js')).pgpLayer(input.stream, wrapping === 'pgp-armored', o);
}

/**
 * Unwraps a delivery whose leading bytes showed `outermost`, layer by layer, each chosen by its
 * own leading bytes: gzip, zip (one member), OpenPGP (decrypted with --pgp-key, its signature
 * checked with --pgp-verify-key). The layers are streams chained to one another, so the bytes
 * can be decoded as they arrive (while they download) with flat memory; only the content is
 * written, to `<outBase>.content`, hashed and measured by the meter as it goes (a
 * decompression bomb is stopped as soon as it shows). A zip inside another layer is spooled to
 * `<outBase>.spoolN` first. Bad content throws a RejectError; a missing key throws
 * NoDecryptionKeyError; anything else (disk full) propagates. Nothing is left behind on failure.
 */
export async function decodeStream(
  outermost: Wrapping,
  delivered: DeliveredBytes,
  decodeOptions: DecodeOptions,
  outBase: string,
): Promise<DecodedContent> {
  const limits = {
    maxInflateRatio: decodeOptions.maxInflateRatio,
    maxDecodedBytes: decodeOptions.maxDecodedBytes,
    deliveredSize: delivered.size,
  };
  const layers: Wrapping[] = [];
  const spools: string[] = [];
  const path = `${outBase}.content`;
  let input = delivered;
  let wrapping: Wrapping | null = outermost;
  let verified = false;
  let meter: Meter | undefined;
  let writing = false;
  try {
    while (wrapping !== null) {
      if (layers.length === MAX_LAYERS) throw new RejectError(`more than ${MAX_LAYERS} layers of wrapping (${layers.join(' > ')} > …)`);
      spools.push(`${outBase}.spool${spools.length + 1}`);
      const layer = await openLayer(wrapping, input, decodeOptions, spools.at(-1)!);
      verified ||= layer.verified === true;
      layers.push(wrapping);
      meter = new Meter({ ...limits, consumed: layer.consumed });
      const { head, stream } = await peek(pipeline(layer.output, meter, ignore), HEAD_BYTES);
      input = { stream, size: delivered.size };
      wrapping = sniffHead(head);
    }
    if (!verified) refuseUnsigned(decodeOptions);
    writing = true;
    await pipelineDone(input.stream, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    return { path, sha256: meter!.digest(), size: meter!.bytes, layers };
  } catch (err) {
    input.stream.destroy();
    if (writing) await unlink(path).catch(() => undefined);
    throw err;
  } finally {
    for (const spool of spools) await unlink(spool).catch(() => undefined);
  }
}

/** With --pgp-verify-key, a delivery none of whose layers is a signed OpenPGP message is refused, a plain one included. */
function refuseUnsigned(o: DecodeOptions): void {
  if (!o.verificationKey) return;
  throw new RejectError(
    `not an OpenPGP-signed delivery: a signature by key ${fingerprintOf(o.verificationKey)} is required (--pgp-verify-key)`,
  );
}

/** The content of a staged delivery: the file itself when its leading bytes show no wrapping. */
export async function decodeDelivery(
  delivered: DeliveredFile,
  decodeOptions: DecodeOptions,
  outBase = delivered.path,
): Promise<DecodedContent> {
  const outermost = await sniff(delivered.path);
  if (outermost === null) {
    refuseUnsigned(decodeOptions);
    return { ...delivered, layers: [] };
  }
  const bytes = { stream: createReadStream(delivered.path), file: delivered.path, size: delivered.size };
  return decodeStream(outermost, bytes, decodeOptions, outBase);
}
