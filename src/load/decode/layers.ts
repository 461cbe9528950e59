import { createReadStream, createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { RejectError, errorMessage } from '../../errors.js';
import { ByteCounter, Meter, type MeterLimits } from './meter.js';

/** One unwrapped layer: its output's SHA-256 and size, written to the output path. */
export interface LayerOutput {
  sha256: string;
  size: number;
}

/**
 * Streams a decoder's output through the meter into a new private staging file. A failure of
 * the decoder itself (a corrupt stream) is the file's fault: `damaged` names the layer.
 */
export async function writeLayer(
  output: string,
  source: Readable,
  limits: Omit<MeterLimits, 'consumed'>,
  consumed: () => number,
  damaged: (err: unknown) => RejectError,
): Promise<LayerOutput> {
  const meter = new Meter({ ...limits, consumed });
  try {
    await pipeline(source, meter, createWriteStream(output, { flags: 'wx', mode: 0o600 }));
  } catch (err) {
    if (err instanceof RejectError) throw err;
    // a system call that failed (the staging disk full, an I/O error) is ours, not the file's: it fails and waits
    if ((err as NodeJS.ErrnoException).syscall !== undefined) throw err;
    throw damaged(err);
  }
  return { sha256: meter.digest(), size: meter.bytes };
}

/** gzip, several members one after the other included (zlib reads them all). */
export async function gunzipLayer(input: string, output: string, limits: Omit<MeterLimits, 'consumed'>): Promise<LayerOutput> {
  const counter = new ByteCounter();
  const source = createReadStream(input).pipe(counter).pipe(createGunzip());
  counter.on('error', (err) => source.destroy(err));
  return writeLayer(
    output,
    source,
    limits,
    () => counter.bytes,
    (err) => new RejectError(`not a readable gzip stream: ${errorMessage(err)}`, {}, { cause: err }),
  );
}
