import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { DEFAULT_MAX_RECORD_BYTES, type Layout } from '../model/layout.js';
import { footerLines, LineHoldback } from './lineHoldback.js';
import { TextChunks, type Undecodable } from './textDecoding.js';

/** What is wrong with a record that cannot be read as CSV, said short: never the whole field. */
export const CSV_PROBLEMS = {
  openingQuote: 'a double quote inside an unquoted value (quote the whole value and double the quote)',
  closingQuote: 'a closing double quote is followed by something other than a delimiter or a line end',
  spaceAfterQuote:
    'a closing double quote is followed by white space before the delimiter or the line end (where the partner writes it so, set the layout\'s "spaceAfterQuote": true)',
  quoteNotClosed: 'a quoted value is not closed before the end of the file',
} as const;

/**
 * A record that cannot be read. `line` is the file's line of the problem itself (for a record
 * over the size limit, the line it starts on); `column` the 0-based field it is in, absent when
 * the record as a whole is at fault.
 */
export class CsvRecordError extends Error {
  /** bytes that are not text in the file's encoding, and what to say of them (`problem` is then their short name) */
  readonly undecodable: Undecodable | undefined;

  constructor(
    readonly line: number,
    readonly column: number | undefined,
    readonly problem: string,
    undecodable?: Undecodable,
  ) {
    const told = problemTold(problem, undecodable);
    super(column === undefined ? `line ${line}: ${told}` : `line ${line}, column ${column + 1}: ${told}`);
    this.name = 'CsvRecordError';
    this.undecodable = undecodable;
  }

  /** The problem as a message tells it: with what the bytes were and what to do, for bytes that could not be decoded. */
  get told(): string {
    return problemTold(this.problem, this.undecodable);
  }
}

const problemTold = (problem: string, undecodable: Undecodable | undefined) => `${problem}${undecodable?.detail ?? ''}`;

export interface CsvRecord {
  fields: string[];
  /** the record's own text, for a record without quotes (its fields joined by the delimiter) */
  text?: string;
  /** the file's line where the record starts: the first line is 1, preamble lines count */
  line: number;
}

export interface CsvOptions {
  delimiter: string;
  /** the file's encoding, as the layout's `encoding` names it (textDecoding.ts); UTF-8 when absent */
  encoding?: string;
  /** bytes of one record (quotes, delimiters and quoted line breaks count; its line end does not) */
  maxRecordBytes: number;
  /** lines before the header that are not records (a partner's preamble) */
  skipLines?: number;
  /** read size; small values only to prove that chunk boundaries change nothing */
  chunkBytes?: number;
  /** bytes of the file read so far, updated after each read (a progress line's share) */
  progress?: { bytes: number };
  /** spaces and tabs between a closing quote and the delimiter or line end are no part of anything (`"3985734"\t,`) */
  spaceAfterQuote?: boolean;
  /** a line of spaces and tabs only is a blank line: counted, not a record */
  whiteLinesBlank?: boolean;
  /** each line of the preamble, as read (a layout's `captures` look for their figures there) */
  preambleLine?: (text: string, line: number) => void;
  /** a record cut short by a line break in a value is joined with the lines that continue it (ContinuationLines) */
  continuationLines?: boolean;
  /** each join made, as it is made: the record's first line and the lines joined to it */
  joins?: Join[];
  /**
   * A footer that a line begins (the layout's `"footer": {"startsAt"}`): the first line, at the
   * start of a record after the first `footerAfter` records (the header and the records above it),
   * that the pattern matches ends the records; it and every line after it are the footer's.
   */
  footerStartsAt?: RegExp;
  footerAfter?: number;
  /** a footer of the file's last N lines that are not blank (`"footer": {"lines"}`): held back as the text streams (lineHoldback.ts) */
  footerLines?: number;
  /** each line of the footer that is not blank, as read: never a record (a layout's `captures` read their figures there) */
  footerLine?: (text: string, line: number) => void;
}

/** One record that continued over physical lines: the line it starts on, and the lines joined to it. */
export interface Join {
  line: number;
  continuedOn: number[];
}

const QUOTE = 0x22;
const SPACE = 0x20;
const TAB = 0x09;
/** a line of spaces and tabs only */
const WHITE_LINE = /^[ \t]*$/;
const LF = 0x0a;
const CR = 0x0d;
/** "not found": above any index, so that Math.min picks whatever was found */
const NONE = Number.MAX_SAFE_INTEGER;
const found = (i: number) => (i === -1 ? NONE : i);

type Parsed = { fields: string[]; end: number; lfs: number } | { incomplete: true; column: number; lfs: number };

/**
 * RFC 4180 records over decoded text, with csv-parse's reading of it: doubled quotes, quoted
 * delimiters and line breaks, CRLF, LF and CR each ending a record. Text arrives chunk by
 * chunk; a record cut by the chunk end is kept (bounded by the size limit) and read again
 * whole with the next chunk. Searches go by indexOf, and the next quote, LF and CR are
 * remembered, so a line without quotes costs one native search for its end and one per delimiter.
 */
class RecordScanner implements RecordBlock {
  /** the text in hand, from the start of the record in progress on */
  private inHand = '';
  private pos = 0;
  /** the line `pos` is on */
  private line = 1;
  /** the text in hand ends the file */
  private final = false;
  /** the records still to come before a footer's first line is looked for (the header, the records above it) */
  private beforeRows: number;
  /** a footer's first line was read: every line from here on is the footer's, never a record */
  private inFooter = false;
  /** a CR ended the last text: an LF first in the next one belongs to it */
  private skipLF = false;
  private lf = NONE;
  private cr = NONE;
  private q = NONE;
  private readonly delimCode: number;

  constructor(
    private readonly delim: string,
    private readonly maxBytes: number,
    private preamble: number,
    private readonly dialect: Pick<
      CsvOptions,
      'spaceAfterQuote' | 'whiteLinesBlank' | 'preambleLine' | 'footerStartsAt' | 'footerAfter' | 'footerLine'
    > = {},
  ) {
    if (delim.length !== 1 || '"\r\n'.includes(delim)) throw new Error(`unusable CSV delimiter ${JSON.stringify(delim)}`);
    this.delimCode = delim.charCodeAt(0);
    this.beforeRows = dialect.footerAfter ?? 0;
  }

  /** The line the next record starts on: after the last text of a file, the line its footer held back starts on. */
  get nextLine(): number {
    return this.line;
  }

  /** More text: what is left of the record in progress is read again with it. `final`: the text ends the file. */
  feed(text: string, final: boolean): void {
    let inHand = this.pos < this.inHand.length ? this.inHand.slice(this.pos) + text : text;
    if (this.skipLF && inHand.length > 0) {
      if (inHand.charCodeAt(0) === LF) inHand = inHand.slice(1);
      this.skipLF = false;
    }
    this.inHand = inHand;
    this.pos = 0;
    this.final = final;
    this.lf = found(inHand.indexOf('\n'));
    this.cr = found(inHand.indexOf('\r'));
    this.q = found(inHand.indexOf('"'));
  }

  /**
   * The next complete record, or null when the text in hand holds no more. Records are
   * handed out one at a time, so that each dies young instead of a chunk's worth piling up.
   */
  next(): CsvRecord | null {
    const { inHand, final } = this;
    const len = inHand.length;
    while (this.pos < len) {
      const pos = this.pos;
      const line = this.line;
      let end = Math.min(this.lf, this.cr);
      let fields: string[];
      let text: string | undefined;
      let lfs = 0;
      const footerStart = this.dialect.footerStartsAt;
      if (footerStart !== undefined && !this.inFooter && this.beforeRows === 0 && this.preamble === 0) {
        // a record starts: its first line, quotes or not, may be the footer's first
        if (end === NONE && !final) return this.incomplete();
        this.inFooter = footerStart.test(inHand.slice(pos, end === NONE ? len : end));
      }
      const notRecords = this.preamble > 0 || this.inFooter;
      if (notRecords || this.q > end) {
        // no quote before the line end: the fast path
        if (end === NONE) {
          if (!final) return this.incomplete();
          end = len;
        }
        this.checkSize(pos, end, line);
        text = notRecords ? undefined : inHand.slice(pos, end);
        fields = text === undefined ? [] : this.split(pos, end);
        if (this.preamble > 0) {
          this.preamble--;
          this.dialect.preambleLine?.(inHand.slice(pos, end), line);
        } else if (this.inFooter) {
          const lineText = inHand.slice(pos, end);
          if (!WHITE_LINE.test(lineText)) this.dialect.footerLine?.(lineText, line);
        }
      } else {
        const parsed = this.quoted(pos, line, final);
        if ('incomplete' in parsed) return this.incomplete();
        this.checkSize(pos, parsed.end, line);
        fields = parsed.fields;
        end = parsed.end;
        lfs = parsed.lfs;
        if (this.q < end) this.q = found(inHand.indexOf('"', end));
      }
      this.line = line + 1 + lfs;
      let next = end + 1;
      if (end < len && inHand.charCodeAt(end) === CR) {
        if (next < len) {
          if (inHand.charCodeAt(next) === LF) next++;
        } else if (!final) this.skipLF = true;
      }
      this.pos = next;
      if (this.lf < next) this.lf = found(inHand.indexOf('\n', next));
      if (this.cr < next) this.cr = found(inHand.indexOf('\r', next));
      // a line holding nothing, or only "", is an empty line: counted, not a record (and one of
      // white space only, where the layout says so)
      const blank =
        (fields.length === 1 && fields[0] === '') || (this.dialect.whiteLinesBlank === true && text !== undefined && WHITE_LINE.test(text));
      if (fields.length > 0 && !blank) {
        if (this.beforeRows > 0) this.beforeRows--;
        return text === undefined ? { fields, line } : { fields, line, text };
      }
    }
    return null;
  }

  /** An unquoted record's fields, as `split` gives them: cut in place, `split` being a runtime call per record and slower. */
  private split(from: number, to: number): string[] {
    const { inHand, delim } = this;
    const fields: string[] = [];
    for (let i = from; ;) {
      const d = inHand.indexOf(delim, i);
      if (d === -1 || d >= to) {
        fields.push(inHand.slice(i, to));
        return fields;
      }
      fields.push(inHand.slice(i, d));
      i = d + 1;
    }
  }

  /** The record in progress waits for more text: it may not grow past the limit meanwhile. */
  private incomplete(): null {
    this.checkSize(this.pos, this.inHand.length, this.line);
    return null;
  }

  /** Where the end of the text in hand lies: the place of bytes that could not be decoded. */
  locateEnd(bad: Undecodable): CsvRecordError {
    if (this.preamble > 0 || this.inFooter) return new CsvRecordError(this.line, undefined, bad.problem, bad);
    const r = this.quoted(this.pos, this.line, false);
    if ('incomplete' in r) return new CsvRecordError(this.line + r.lfs, r.column, bad.problem, bad);
    return new CsvRecordError(this.line, undefined, bad.problem, bad);
  }

  /** A record with a quote in it, field by field, from `pos`; `line` is the line it starts on. */
  private quoted(pos: number, line: number, final: boolean): Parsed {
    const { inHand, delim, delimCode } = this;
    const len = inHand.length;
    const fields: string[] = [];
    let lfs = 0;
    let fieldStart = pos;
    for (;;) {
      if (fieldStart < len && inHand.charCodeAt(fieldStart) === QUOTE) {
        const openedOn = line + lfs;
        let value = '';
        let segmentStart = fieldStart + 1;
        for (;;) {
          const quoteAt = found(inHand.indexOf('"', segmentStart));
          // quoted line breaks move the line number; only LF counts, as an editor counts CRLF once
          while (this.lf < quoteAt && this.lf < len) {
            lfs++;
            this.lf = found(inHand.indexOf('\n', this.lf + 1));
          }
          if (quoteAt === NONE) {
            if (final) throw new CsvRecordError(openedOn, fields.length, CSV_PROBLEMS.quoteNotClosed);
            return { incomplete: true, column: fields.length, lfs };
          }
          if (quoteAt + 1 >= len) {
            if (!final) return { incomplete: true, column: fields.length, lfs };
            fields.push(value + inHand.slice(segmentStart, quoteAt));
            return { fields, end: len, lfs };
          }
          const next = inHand.charCodeAt(quoteAt + 1);
          if (next === QUOTE) {
            value += inHand.slice(segmentStart, quoteAt + 1);
            segmentStart = quoteAt + 2;
            continue;
          }
          value += inHand.slice(segmentStart, quoteAt);
          if ((next === SPACE || next === TAB) && next !== delimCode && this.dialect.spaceAfterQuote) {
            // white space after the closing quote, up to the delimiter or the line end: skipped
            let after = quoteAt + 1;
            while (
              after < len &&
              (inHand.charCodeAt(after) === SPACE || inHand.charCodeAt(after) === TAB) &&
              inHand.charCodeAt(after) !== delimCode
            )
              after++;
            if (after >= len) {
              if (!final) return { incomplete: true, column: fields.length, lfs };
              fields.push(value);
              return { fields, end: len, lfs };
            }
            const stop = inHand.charCodeAt(after);
            if (stop === delimCode) {
              fields.push(value);
              fieldStart = after + 1;
              break;
            }
            if (stop === LF || stop === CR) {
              fields.push(value);
              return { fields, end: after, lfs };
            }
            throw new CsvRecordError(line + lfs, fields.length, CSV_PROBLEMS.closingQuote);
          }
          if (next === delimCode) {
            fields.push(value);
            fieldStart = quoteAt + 2;
            break;
          }
          if (next === LF || next === CR) {
            fields.push(value);
            return { fields, end: quoteAt + 1, lfs };
          }
          const white = next === SPACE || next === TAB;
          throw new CsvRecordError(line + lfs, fields.length, white ? CSV_PROBLEMS.spaceAfterQuote : CSV_PROBLEMS.closingQuote);
        }
        continue;
      }
      if (this.q < fieldStart) this.q = found(inHand.indexOf('"', fieldStart));
      if (this.lf < fieldStart) this.lf = found(inHand.indexOf('\n', fieldStart));
      if (this.cr < fieldStart) this.cr = found(inHand.indexOf('\r', fieldStart));
      const delimiterAt = found(inHand.indexOf(delim, fieldStart));
      const stop = Math.min(delimiterAt, this.q, this.lf, this.cr);
      if (stop === NONE) {
        if (!final) return { incomplete: true, column: fields.length, lfs };
        fields.push(inHand.slice(fieldStart));
        return { fields, end: len, lfs };
      }
      if (stop === this.q) throw new CsvRecordError(line + lfs, fields.length, CSV_PROBLEMS.openingQuote);
      fields.push(inHand.slice(fieldStart, stop));
      if (stop !== delimiterAt) return { fields, end: stop, lfs };
      fieldStart = delimiterAt + 1;
    }
  }

  /**
   * The record from `from` to `to` must fit the limit in UTF-8 bytes. A UTF-16 unit is one to
   * three bytes, so only a record near the limit is measured.
   */
  private checkSize(from: number, to: number, line: number): void {
    const units = to - from;
    if (units * 3 <= this.maxBytes) return;
    if (units > this.maxBytes || Buffer.byteLength(this.inHand.slice(from, to), 'utf8') > this.maxBytes) {
      const limit = this.maxBytes.toLocaleString('en-US');
      throw new CsvRecordError(line, undefined, `the record is longer than ${limit} bytes (--max-record-bytes)`);
    }
  }
}

/**
 * The records of one read, handed out by `next()` until it returns null. A block is only good
 * until the next one is asked for: its records are read from the text in hand as they are
 * asked for, never gathered in an array (a chunk's worth of records outlives the young
 * generation and costs more to collect than to read).
 */
export interface RecordBlock {
  next(): CsvRecord | null;
}

/**
 * The fields a header names: up to its last non-empty name. Names left empty at its end (a
 * spreadsheet's trailing delimiters) name nothing, and a row may leave those fields out.
 */
export function namedWidth(header: readonly string[]): number {
  let width = header.length;
  while (width > 0 && header[width - 1]!.trim() === '') width--;
  return width;
}

/**
 * Records continued on the next physical line without quotes (a description broken by a line
 * end, as some banks export it), joined to the record they continue. The rule, where the layout
 * says `"continuationLines": true`: the first record after the preamble is the header, and its
 * named fields are the width. A record with fewer fields than that is held; a next line that
 * is itself narrower than the header, and whose fields, added to the held record's with its
 * first field continuing the held record's last value, come to no more than the header's
 * width, is joined to it: the two values become one, with a space between. Lines are joined
 * until the record is as wide as the header. A held record that the next line cannot complete
 * is handed out as it is (the reader refuses it as short, naming its line), and that line is
 * looked at afresh. A line as wide as the header is always a record of its own, so a file
 * without broken lines reads exactly as without the option. Every join is told (`joins`).
 */
class ContinuationLines implements RecordBlock {
  private width: number | undefined;
  private held: CsvRecord | undefined;
  private continuedOn: number[] = [];
  private records: RecordBlock = { next: () => null };
  private final = false;
  /** a record looked at that did not continue the held one: handed out after it */
  private waiting: CsvRecord | undefined;

  constructor(private readonly joins: Join[] | undefined) {}

  over(records: RecordBlock, final: boolean): RecordBlock {
    this.records = records;
    this.final = final;
    return this;
  }

  next(): CsvRecord | null {
    for (;;) {
      const record = this.waiting ?? this.records.next();
      this.waiting = undefined;
      if (record === null) {
        // the file's end completes nothing: the held record goes as it is
        if (this.final && this.held) return this.release();
        return null;
      }
      if (this.width === undefined) {
        this.width = namedWidth(record.fields);
        return record;
      }
      const width = this.width;
      if (this.held) {
        const held = this.held;
        if (record.fields.length < width && held.fields.length + record.fields.length - 1 <= width) {
          const fields = held.fields.slice(0, -1);
          fields.push(`${held.fields[held.fields.length - 1]!} ${record.fields[0]!}`, ...record.fields.slice(1));
          this.held = { fields, line: held.line };
          this.continuedOn.push(record.line);
          if (fields.length >= width) return this.release();
          continue;
        }
        this.waiting = record;
        return this.release();
      }
      if (record.fields.length >= width) return record;
      this.held = record;
    }
  }

  /** The held record, joined or not, and its join told. */
  private release(): CsvRecord {
    const record = this.held!;
    if (this.continuedOn.length > 0) this.joins?.push({ line: record.line, continuedOn: this.continuedOn });
    this.held = undefined;
    this.continuedOn = [];
    return record;
  }
}

/** How a layout's files are read as records: its delimiter, encoding, preamble and the size limit. */
export function layoutCsvOptions(layout: Layout): CsvOptions {
  return {
    delimiter: layout.delimiter,
    maxRecordBytes: layout.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES,
    skipLines: layout.skipLines,
    ...(layout.encoding !== undefined ? { encoding: layout.encoding } : {}),
    ...(layout.spaceAfterQuote ? { spaceAfterQuote: true } : {}),
    ...(layout.whiteLinesBlank ? { whiteLinesBlank: true } : {}),
    ...(layout.continuationLines ? { continuationLines: true } : {}),
    ...(layout.footer?.startsAt
      ? { footerStartsAt: layout.footer.startsAt, footerAfter: layout.header ? 1 + (layout.leadingRecords ?? 0) : 0 }
      : {}),
    ...(layout.footer?.lines !== undefined ? { footerLines: layout.footer.lines } : {}),
  };
}

/**
 * The bytes of one read. Each read's text is a new string, and V8 places a string of 128 KiB or
 * more (kMaxRegularHeapObjectSize) in its large-object space, one mapping of fresh memory each:
 * decoding 64 MiB of ASCII took 250 ms in 256 KiB reads and 13 ms in 64 KiB ones, and the run's
 * system time fell with it (bench/DIARY.md, 2026-12-06). 32 KiB keeps even a text of
 * two-byte characters, with the record carried over from the last read, in the young generation.
 */
export const READ_BYTES = 32 * 1024;

/**
 * The records of a CSV file, streaming, one block per read, each record with the line it
 * starts on. The bytes are decoded in the stream in `encoding` (textDecoding.ts: UTF-8 unless
 * the layout says otherwise, a leading byte-order mark dropped): no byte is ever replaced
 * silently, and one that cannot be decoded is named by line and field. Empty lines are skipped. Memory stays within a few chunks plus
 * one record. Blocks, not single records, cross the asynchronous boundary: an async generator
 * hop per record cost as much as reading it.
 */
export async function* csvRecordBlocks(path: string, opts: CsvOptions): AsyncGenerator<RecordBlock> {
  const scanner = new RecordScanner(opts.delimiter, opts.maxRecordBytes, opts.skipLines ?? 0, opts);
  // read on this thread: a staged file is local, and a read through the thread pool cost a small
  // file more in wake-ups than the read itself (src/syncFs.ts)
  const fileDescriptor = openSync(path, 'r');
  // one read buffer, no larger than the file: a run over thousands of small files must not
  // allocate (and collect) a large buffer for each; every chunk is decoded (copied) before the next read
  const text = new TextChunks(opts.encoding);
  const joined = opts.continuationLines ? new ContinuationLines(opts.joins) : undefined;
  const handed = (block: RecordBlock, final: boolean): RecordBlock => joined?.over(block, final) ?? block;
  // a footer of the last N lines: held back until the file's end shows which they are
  const holdback = opts.footerLines !== undefined ? new LineHoldback(opts.footerLines, opts.maxRecordBytes) : undefined;
  try {
    const readBuf = Buffer.allocUnsafe(Math.max(1, Math.min(opts.chunkBytes ?? READ_BYTES, fstatSync(fileDescriptor).size + 1)));
    for (;;) {
      const bytesRead = readSync(fileDescriptor, readBuf, 0, readBuf.length, null);
      if (bytesRead === 0) break;
      if (opts.progress) opts.progress.bytes += bytesRead;
      const decoded = text.write(readBuf.subarray(0, bytesRead));
      if (decoded.undecodable) {
        yield handed(undecodable(scanner, (holdback?.flush() ?? '') + decoded.text, decoded.undecodable), false);
        return;
      }
      const released = holdback ? holdback.push(decoded.text) : decoded.text;
      if (released === '') continue;
      scanner.feed(released, false);
      yield handed(scanner, false);
    }
    // what is left is a character cut off by the end of the file (a lone start of a BOM is nothing)
    const rest = text.end();
    if (rest.undecodable) {
      yield handed(undecodable(scanner, (holdback?.flush() ?? '') + rest.text, rest.undecodable), false);
      return;
    }
    if (!holdback) {
      scanner.feed(rest.text, true);
      yield handed(scanner, true);
      return;
    }
    const { rows, footer } = holdback.end(rest.text);
    scanner.feed(rows, true);
    yield handed(scanner, true);
    for (const footerLine of footerLines(footer, scanner.nextLine)) opts.footerLine?.(footerLine.text, footerLine.line);
  } finally {
    closeSync(fileDescriptor);
  }
}

/** The records before the bytes that could not be decoded, then the error naming their line and field. */
function undecodable(scanner: RecordScanner, text: string, bad: Undecodable): RecordBlock {
  // a stand-in that is no quote, delimiter or line end, so the scanner stops inside the bad byte's field
  scanner.feed(`${text}\uFFFD`, false);
  return {
    next() {
      const r = scanner.next();
      if (r === null) throw scanner.locateEnd(bad);
      return r;
    },
  };
}
