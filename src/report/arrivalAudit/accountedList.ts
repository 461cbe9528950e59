import { closeSync, readSync, writeSync } from 'node:fs';
import { unlinkedTemporaryFile } from '../../privateFiles.js';
import type { AccountedArrival } from './accountArrivals.js';

/** The bytes of one form held in memory before they go to a temporary file: an audit of a few thousand uploads never touches the disk. */
const SPILL_AFTER = 16 * 1024 * 1024;
/** How much of the temporary file one read brings back. */
const READ_CHUNK = 1024 * 1024;

/**
 * How an accounted upload is written out, one line each (never holding a line break): the text
 * output's line (null for an upload that line leaves out), the JSON output's object.
 */
export type AccountedForms = Partial<Record<'text' | 'json', (arrival: AccountedArrival) => string | null>>;

/**
 * One form's lines, as UTF-8 in a buffer (outside the heap) until they pass SPILL_AFTER bytes, then
 * in a temporary file of their own. Each line is written into the buffer as it comes, so its string
 * dies young: held as strings, a year's 16 MiB of pending lines were promoted and walked by every
 * full collection (a quarter of a `--json` audit's CPU went to the collector).
 */
class SpilledLines {
  private pending: Buffer = Buffer.alloc(0);
  private pendingBytes = 0;
  private file: number | null = null;
  private written = 0;

  constructor(private readonly spillAfter: number) {}

  add(line: string): void {
    // a UTF-16 code unit is at most 3 bytes of UTF-8: the line is measured only where that bound does not fit
    if (this.pendingBytes + line.length * 3 + 1 > this.pending.length) {
      const need = Buffer.byteLength(line) + 1;
      if (this.pendingBytes + need > this.pending.length) this.grow(need);
    }
    this.pendingBytes += this.pending.write(line, this.pendingBytes);
    this.pending[this.pendingBytes++] = 0x0a;
    if (this.pendingBytes > this.spillAfter) this.flush();
  }

  /** Room for `need` more bytes: twice as much until spillAfter, then what the line needs. */
  private grow(need: number): void {
    const size = Math.max(this.pendingBytes + need, Math.min(Math.max(this.pending.length * 2, 64 * 1024), this.spillAfter + 1));
    const bigger = Buffer.allocUnsafe(size);
    this.pending.copy(bigger, 0, 0, this.pendingBytes);
    this.pending = bigger;
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    this.file ??= unlinkedTemporaryFile('audit');
    const bytes = this.pending;
    const length = this.pendingBytes;
    for (let done = 0; done < length;) done += writeSync(this.file, bytes, done, length - done, this.written + done);
    this.written += length;
    this.pendingBytes = 0;
  }

  /**
   * The lines in the order they were added, as UTF-8, several to a piece: `between` (one byte)
   * between two lines of a piece, nothing after its last. Those of the file come first, read back
   * a megabyte at a time, each piece a buffer of its own (the caller may still hold the one
   * before), then those still in memory, copied (the list may be read again).
   */
  *joined(between: number): Generator<Buffer> {
    if (this.file !== null) {
      let carry: Buffer = Buffer.alloc(0);
      for (let position = 0; position < this.written;) {
        const chunk = Buffer.allocUnsafe(carry.length + Math.min(READ_CHUNK, this.written - position));
        carry.copy(chunk);
        const got = readSync(this.file, chunk, carry.length, chunk.length - carry.length, position);
        if (got === 0) throw new Error('the temporary file of accounted uploads ended early');
        position += got;
        const end = chunk.lastIndexOf(0x0a, carry.length + got - 1);
        if (end < 0) {
          // a line longer than a read: it waits for the next
          carry = chunk.subarray(0, carry.length + got);
          continue;
        }
        // what follows the last line break waits for the next read (a copy: this piece is handed on)
        carry = Buffer.from(chunk.subarray(end + 1, carry.length + got));
        yield separated(chunk.subarray(0, end), between);
      }
      if (carry.length > 0) throw new Error('the temporary file of accounted uploads ended within a line');
    }
    if (this.pendingBytes > 0) yield separated(Buffer.from(this.pending.subarray(0, this.pendingBytes - 1)), between);
  }

  close(): void {
    if (this.file !== null) closeSync(this.file);
    this.file = null;
  }
}

/** Lines held with a line break between them, given `between` there instead (in place). */
function separated(lines: Buffer, between: number): Buffer {
  if (between === 0x0a) return lines;
  for (let at = lines.indexOf(0x0a); at >= 0; at = lines.indexOf(0x0a, at + 1)) lines[at] = between;
  return lines;
}

/** A piece of a long answer: text, or lines already written out once as UTF-8 (AccountedList.joined), as they are. */
export type AnswerPiece = string | Buffer;

/** A piece as text (an answer made whole: an evidence pack's files). Whole lines only: no character is cut in two. */
export const pieceText = (piece: AnswerPiece): string => (typeof piece === 'string' ? piece : piece.toString('utf8'));

/**
 * Every upload a transfer log audit accounted, in the order it accounted them, written out as
 * it goes in the forms its caller will print, and never kept as objects: a year's million uploads
 * are a gigabyte of objects, a few hundred bytes each of text. A form past 16 MiB goes to a
 * temporary file, already unlinked (nothing is left behind however the process ends), and is read
 * back in order when printed. The uploads that count against the audit (`unmatched`) the audit
 * keeps whole as well, as its discrepancies.
 */
export class AccountedList {
  /** how many uploads were accounted, whatever the forms */
  count = 0;
  private readonly kept = new Map<keyof AccountedForms, { encode: (arrival: AccountedArrival) => string | null; lines: SpilledLines }>();

  /** `spillAfter` is for the tests (a file after a few uploads). */
  constructor(forms: AccountedForms = {}, opts: { spillAfter?: number } = {}) {
    for (const [form, encode] of Object.entries(forms) as [keyof AccountedForms, (arrival: AccountedArrival) => string | null][]) {
      this.kept.set(form, { encode, lines: new SpilledLines(opts.spillAfter ?? SPILL_AFTER) });
    }
  }

  add(arrival: AccountedArrival): void {
    this.count++;
    for (const { encode, lines } of this.kept.values()) {
      const line = encode(arrival);
      if (line !== null) lines.add(line);
    }
  }

  /**
   * The lines of one form, in order, as UTF-8, several to a piece: `between` between two lines of
   * a piece (`\n`, or `,` for the items of a JSON array), nothing after its last; none when the
   * form was not asked for. Written out as they are, they never become strings again.
   */
  joined(form: keyof AccountedForms, between: '\n' | ','): Iterable<Buffer> {
    return this.kept.get(form)?.lines.joined(between.charCodeAt(0)) ?? [];
  }

  /** The lines of one form, in order, each a string; none when it was not asked for. */
  *lines(form: keyof AccountedForms): Generator<string> {
    for (const piece of this.joined(form, '\n')) yield* piece.toString('utf8').split('\n');
  }

  /** Lets the temporary files go. */
  close(): void {
    for (const { lines } of this.kept.values()) lines.close();
  }
}
