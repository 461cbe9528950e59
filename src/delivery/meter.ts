import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { RejectError } from '../errors.js';

/**
 * Below this much output the ratio is not judged yet: a file's first block (a header and a
 * few rows) may compress far better than the file as a whole.
 */
const RATIO_GRACE_BYTES = 1024 * 1024;

export interface MeterLimits {
  maxInflateRatio: number;
  maxDecodedBytes: number;
  /** the delivered file's size: no layer may give more than ratio times it */
  deliveredSize: number;
  /** how much of this layer's input has been consumed so far (its compressed bytes) */
  consumed: () => number;
}

/** Counts the input a decoder has taken: the ratio is judged as it goes, not at the end. */
export class ByteCounter extends Transform {
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/** Which limit a layer's output has passed, and against what: null while it keeps to them all. */
export type InflateOverrun = { limit: 'size' } | { limit: 'ratio'; compressed: number };

/**
 * The rule every decoder is held to, as its output grows to `bytes`: over the absolute limit,
 * over the ratio to the whole delivered file (nested layers cannot multiply it), or, past a
 * first megabyte, over the ratio to the input consumed so far (so a 10 MB bomb is stopped after
 * megabytes, not gigabytes). The delivery's meter and the transfer log's reader both judge by it.
 */
export function inflateOverrun(bytes: number, limits: MeterLimits): InflateOverrun | null {
  if (bytes > limits.maxDecodedBytes) return { limit: 'size' };
  const overWhole = bytes > limits.maxInflateRatio * limits.deliveredSize;
  const overSoFar = bytes > RATIO_GRACE_BYTES && bytes > limits.maxInflateRatio * Math.max(limits.consumed(), 1);
  if (overWhole || overSoFar) return { limit: 'ratio', compressed: overWhole ? limits.deliveredSize : limits.consumed() };
  return null;
}

/**
 * Hashes and counts one layer's output while it streams to its staging file, and stops a
 * decompression bomb as soon as it shows (`inflateOverrun`).
 */
export class Meter extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;

  constructor(private readonly limits: MeterLimits) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    const l = this.limits;
    const overrun = inflateOverrun(this.bytes, l);
    if (overrun?.limit === 'size') {
      done(new RejectError(`decoded content is over the limit of ${l.maxDecodedBytes} bytes (--max-decoded-bytes): not loaded`));
      return;
    }
    if (overrun) {
      done(
        new RejectError(
          `inflates more than ${l.maxInflateRatio}:1 (${this.bytes} bytes from ${overrun.compressed} compressed, --max-inflate-ratio): a decompression bomb is not loaded`,
        ),
      );
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
