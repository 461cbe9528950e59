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

/**
 * Hashes and counts one layer's output while it streams to its staging file, and stops a
 * decompression bomb as soon as it shows: output over the absolute limit, over the ratio to the
 * whole delivered file (nested layers cannot multiply it), or, past a first megabyte, over the
 * ratio to the input consumed so far (so a 10 MB bomb is stopped after megabytes, not gigabytes).
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
    if (this.bytes > l.maxDecodedBytes) {
      done(new RejectError(`decoded content is over the limit of ${l.maxDecodedBytes} bytes (--max-decoded-bytes): not loaded`));
      return;
    }
    const overWhole = this.bytes > l.maxInflateRatio * l.deliveredSize;
    const overSoFar = this.bytes > RATIO_GRACE_BYTES && this.bytes > l.maxInflateRatio * Math.max(l.consumed(), 1);
    if (overWhole || overSoFar) {
      done(
        new RejectError(
          `inflates more than ${l.maxInflateRatio}:1 (${this.bytes} bytes from ${overWhole ? l.deliveredSize : l.consumed()} compressed, --max-inflate-ratio): a decompression bomb is not loaded`,
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
