import { isUtf8 } from 'node:buffer';
import { Transform, type TransformCallback } from 'node:stream';

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export class InvalidUtf8Error extends Error {
  constructor() {
    super('the file is not valid UTF-8');
    this.name = 'InvalidUtf8Error';
  }
}

/** Where the bytes stop forming complete UTF-8 sequences: a sequence cut by the chunk end waits for the next chunk. */
function completePrefix(buf: Buffer): number {
  let i = buf.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return buf.length;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i < need ? i : buf.length;
}

/**
 * Passes the bytes through unchanged, minus a leading byte-order mark, and fails the stream
 * at the first byte that is not UTF-8, so that the parser can work on strings (twice as fast
 * as on bytes) without invalid bytes ever being replaced silently.
 */
export class Utf8Gate extends Transform {
  private carry: Buffer = Buffer.alloc(0);
  private atStart = true;

  /** `check: false` only strips the byte-order mark (for reading raw bytes on purpose). */
  constructor(private readonly check = true) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let buf = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    if (this.atStart) {
      if (buf.length < UTF8_BOM.length && UTF8_BOM.subarray(0, buf.length).equals(buf)) {
        this.carry = buf;
        return done();
      }
      this.atStart = false;
      if (buf.subarray(0, 3).equals(UTF8_BOM)) buf = buf.subarray(3);
    }
    const cut = completePrefix(buf);
    const ready = buf.subarray(0, cut);
    this.carry = Buffer.from(buf.subarray(cut));
    if (this.check && !isUtf8(ready)) return done(new InvalidUtf8Error());
    done(null, ready);
  }

  override _flush(done: TransformCallback): void {
    const bomOnly = this.atStart && UTF8_BOM.subarray(0, this.carry.length).equals(this.carry);
    if (this.carry.length > 0 && !bomOnly) {
      if (this.check) return done(new InvalidUtf8Error()); // a sequence cut off by the end of the file
      return done(null, this.carry);
    }
    done();
  }
}
