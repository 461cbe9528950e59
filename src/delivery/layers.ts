import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { RejectError, errorMessage } from '../errors.js';
import { ByteCounter } from './meter.js';

/**
 * One wrapping being taken off, as a stream: `output` gives the bytes inside, `consumed` how
 * many of the layer's own input bytes it has read so far (the ratio limit is judged on it).
 */
export interface OpenLayer {
  output: Readable;
  consumed: () => number;
  /** an OpenPGP layer that checked the signature --pgp-verify-key requires */
  verified?: boolean;
}

/** Chained streams carry the first failure to the last one, which is read; the callback has nothing to add. */
export const ignore = () => undefined;

/**
 * The decoder's failures, said as the file's fault (`damaged` names the layer), except those
 * that are not: a limit already judged (a RejectError) and a failed system call (the staging
 * disk full, an I/O error), which is ours and makes the file wait instead of being rejected.
 */
export function guarded(decoder: Readable, damaged: (err: unknown) => RejectError | Promise<RejectError>): Readable {
  async function* bytes(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of decoder) yield chunk as Buffer;
    } catch (err) {
      if (err instanceof RejectError || (err as NodeJS.ErrnoException).syscall !== undefined) throw err;
      throw await damaged(err);
    }
  }
  return Readable.from(bytes(), { objectMode: false });
}

/** gzip, several members one after the other included (zlib reads them all). */
export function gunzipLayer(input: Readable): OpenLayer {
  const counter = new ByteCounter();
  // zlib's default 16 KiB pieces cost more in stream hops than the inflating itself: 128 KiB halves the time
  const inflated = pipeline(input, counter, createGunzip({ chunkSize: 128 * 1024 }), ignore);
  const damaged = (err: unknown) => new RejectError(`not a readable gzip stream: ${errorMessage(err)}`, {}, { cause: err });
  return { output: guarded(inflated, damaged), consumed: () => counter.bytes };
}

/**
 * The first `byteCount` bytes of a stream (fewer when it is shorter), and a stream of all its bytes,
 * those included: what a layer's leading bytes say is read without losing them.
 */
export async function peek(stream: Readable, byteCount: number): Promise<{ head: Buffer; stream: Readable }> {
  const iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const taken: Buffer[] = [];
  let got = 0;
  let ended = false;
  while (got < byteCount) {
    const result = await iterator.next();
    if (result.done) {
      ended = true;
      break;
    }
    taken.push(result.value);
    got += result.value.length;
  }
  const head = Buffer.concat(taken);
  async function* all(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) yield head;
      if (ended) return;
      for (let r = await iterator.next(); !r.done; r = await iterator.next()) yield r.value;
    } finally {
      // a reader that stops early (a rejected layer) ends the stream underneath too
      await iterator.return?.();
    }
  }
  return { head, stream: Readable.from(all(), { objectMode: false }) };
}
