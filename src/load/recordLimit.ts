import { Transform, type TransformCallback } from 'node:stream';
import { RejectError } from '../errors.js';

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/** Where the next `byte` is at or after `from`, or the buffer's length: a search done once per occurrence. */
function nextAt(buf: Buffer, byte: number, from: number): number {
  const i = buf.indexOf(byte, from);
  return i === -1 ? buf.length : i;
}

/**
 * Passes the bytes through unchanged and fails the stream, before the parser buffers it, at
 * the first record longer than `maxBytes`: delimiters, quotes and quoted line breaks count,
 * so neither one endless line nor a record of endless empty fields can take the memory.
 * A record ends at a CR or LF outside quotes; inside quotes is told by the parity of the
 * double quotes seen (an escaped quote is two, so it changes nothing). Searches go by
 * `indexOf`, once per quote and line end, so the cost per byte stays native.
 */
export class RecordLimit extends Transform {
  private inQuotes = false;
  /** bytes of the record in progress so far */
  private recordBytes = 0;
  /** the file's line number at the read position, and where the record in progress began */
  private line = 1;
  private recordLine = 1;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let quote = nextAt(chunk, QUOTE, 0);
    let lf = nextAt(chunk, LF, 0);
    let cr = nextAt(chunk, CR, 0);
    let pos = 0;
    while (pos < chunk.length) {
      if (this.inQuotes) {
        // quoted line breaks belong to the record but still move the line number
        while (lf < quote) {
          this.line++;
          lf = nextAt(chunk, LF, lf + 1);
        }
        this.recordBytes += Math.min(quote + 1, chunk.length) - pos;
        if (quote < chunk.length) this.inQuotes = false;
        pos = quote + 1;
        quote = nextAt(chunk, QUOTE, pos);
      } else {
        // a line end seen earlier may have been inside the quotes just left
        if (cr < pos) cr = nextAt(chunk, CR, pos);
        if (lf < pos) lf = nextAt(chunk, LF, pos);
        const end = Math.min(lf, cr);
        if (end < quote) {
          this.recordBytes += end - pos;
          if (this.recordBytes > this.maxBytes) break;
          if (end === lf) this.line++;
          this.recordBytes = 0;
          this.recordLine = this.line;
          pos = end + 1;
          if (end === lf) lf = nextAt(chunk, LF, pos);
          else cr = nextAt(chunk, CR, pos);
        } else {
          this.recordBytes += Math.min(quote + 1, chunk.length) - pos;
          if (quote < chunk.length) this.inQuotes = true;
          pos = quote + 1;
          quote = nextAt(chunk, QUOTE, pos);
        }
      }
      if (this.recordBytes > this.maxBytes) break;
    }
    if (this.recordBytes > this.maxBytes) {
      const limit = this.maxBytes.toLocaleString('en-US');
      const where = { line: this.recordLine, field: 'record' };
      return done(new RejectError(`line ${this.recordLine}: the record is longer than ${limit} bytes (--max-record-bytes)`, where));
    }
    done(null, chunk);
  }
}
