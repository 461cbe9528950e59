/** Large batches: each is one CopyData message and one write, whatever the rows' size. */
export const BATCH_BYTES = 256 * 1024;

/**
 * The bytes of a COPY, written straight into Buffers of 256 KiB that go to the server as they
 * are: a row's text or fields die young instead of living in a long string until their batch is
 * full, and the COPY stream gets bytes it need not encode again. COPY's stream may be cut
 * anywhere (the server joins its CopyData messages), so a row may span two batches; each write
 * asks for room first and starts a new batch when the current one has none.
 */
export class CopyBatches {
  buf: Buffer = Buffer.allocUnsafe(BATCH_BYTES);
  used = 0;
  private readonly full: Buffer[] = [];

  /** Room for `bytes` more in `buf` from `used` on: the full batch is put aside when it has less. */
  room(bytes: number): void {
    if (this.used + bytes <= this.buf.length) return;
    if (this.used > 0) this.full.push(this.buf.subarray(0, this.used));
    this.buf = Buffer.allocUnsafe(Math.max(BATCH_BYTES, bytes));
    this.used = 0;
  }

  /** Whether a batch was filled since the last `take` (the caller hands them on between rows). */
  get hasFull(): boolean {
    return this.full.length > 0;
  }

  /** The filled batches, oldest first; with `all`, the one being written too (the end of the COPY). */
  take(all = false): Buffer[] {
    if (all && this.used > 0) {
      this.full.push(this.buf.subarray(0, this.used));
      this.buf = Buffer.allocUnsafe(0);
      this.used = 0;
    }
    return this.full.splice(0);
  }
}
