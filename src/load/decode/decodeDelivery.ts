import { unlink } from 'node:fs/promises';
import { RejectError } from '../../errors.js';
import { fingerprintOf, type DecodeOptions } from './decodeSettings.js';
import { gunzipLayer, type LayerOutput } from './layers.js';
import { sniff, type Wrapping } from './sniff.js';

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

/**
 * Unwraps a staged delivery, layer by layer, chosen by each layer's leading bytes: gzip, zip
 * (one member), OpenPGP (decrypted with --pgp-key, its signature checked with
 * --pgp-verify-key). Each layer streams into its own private staging file named after
 * `outBase` (`<seq>.content1`, …), so memory stays flat and zip gets the random access it
 * needs; a layer's file is removed once the next one is written. Bad content throws a
 * RejectError; a missing key throws NoDecryptionKeyError; anything else (disk full) propagates.
 */
export async function decodeDelivery(delivered: DeliveredFile, o: DecodeOptions, outBase = delivered.path): Promise<DecodedContent> {
  const layers: Wrapping[] = [];
  let current: LayerOutput & { path: string } = { path: delivered.path, sha256: delivered.sha256, size: delivered.size };
  let verified = false;
  const limits = { maxInflateRatio: o.maxInflateRatio, maxDecodedBytes: o.maxDecodedBytes, deliveredSize: delivered.size };
  try {
    for (;;) {
      const wrapping = await sniff(current.path);
      if (wrapping === null) break;
      if (layers.length === MAX_LAYERS) throw new RejectError(`more than ${MAX_LAYERS} layers of wrapping (${layers.join(' > ')} > …)`);
      const output = `${outBase}.content${layers.length + 1}`;
      let next: LayerOutput;
      if (wrapping === 'gzip') next = await gunzipLayer(current.path, output, limits);
      // the zip and OpenPGP libraries are loaded only for a delivery that needs them
      else if (wrapping === 'zip') next = await (await import('./zipLayer.js')).unzipLayer(current.path, output, limits, o.memberPattern);
      else {
        const { pgpLayer } = await import('./pgpLayer.js');
        const r = await pgpLayer(current.path, output, wrapping === 'pgp-armored', limits, o);
        verified ||= r.verified;
        next = r;
      }
      if (current.path !== delivered.path) await unlink(current.path);
      current = { ...next, path: output };
      layers.push(wrapping);
    }
    if (o.verificationKey && !verified) {
      throw new RejectError(
        `not an OpenPGP-signed delivery: a signature by key ${fingerprintOf(o.verificationKey)} is required (--pgp-verify-key)`,
      );
    }
    return { ...current, layers };
  } catch (err) {
    if (current.path !== delivered.path) await unlink(current.path).catch(() => undefined);
    await unlink(`${outBase}.content${layers.length + 1}`).catch(() => undefined);
    throw err;
  }
}
