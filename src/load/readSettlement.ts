import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { parse, CsvError } from 'csv-parse';
import { RejectError } from '../errors.js';
import { DEFAULT_MAX_RECORD_BYTES, type Layout } from './layout.js';
import { RecordLimit } from './recordLimit.js';
import { InvalidUtf8Error, Utf8Gate } from './utf8Gate.js';
import { planRows, type RowPlan } from './rowPlan.js';
import { TrailerCheck } from './trailer.js';

/** What a read saw besides the rows it yielded. */
export interface ReadStats {
  /** data rows the layout's skipRows left out (counted, not loaded) */
  skipped: number;
}

export interface SettlementRow {
  /** the file's own line number, as an editor shows it (the header is line 1) */
  line: number;
  values: (string | null)[];
}

/** csv-parse's own messages can quote a whole field: each is said again here, short. */
const CSV_PROBLEMS: Record<string, string> = {
  INVALID_OPENING_QUOTE: 'a double quote inside an unquoted value (quote the whole value and double the quote)',
  CSV_INVALID_CLOSING_QUOTE: 'a closing double quote is followed by something other than a delimiter or a line end',
  CSV_QUOTE_NOT_CLOSED: 'a quoted value is not closed before the end of the file',
};

/**
 * How messages name a record's field: by the layout column its header names, else by position
 * and header text. A failure can surface before the reader has taken the header (the parser
 * reads ahead): the header is then read on its own, on that failure path only.
 */
class FieldNames {
  private names: string[] | undefined;

  constructor(
    private readonly path: string,
    private readonly layout: Layout,
  ) {}

  learn(header: string[]): void {
    this.names = header.map((h) => h.trim());
  }

  async ensure(): Promise<void> {
    if (this.names) return;
    const parser = createReadStream(this.path).pipe(
      parse({
        delimiter: this.layout.delimiter,
        bom: true,
        from_line: this.layout.skipLines + 1,
        to: 1,
        relax_quotes: true,
        relax_column_count: true,
      }),
    );
    try {
      for await (const header of parser as AsyncIterable<string[]>) this.learn(header);
    } catch {
      // an unreadable header: fields are then named by position
    }
    this.names ??= [];
  }

  name(i: number): string {
    const text = this.names?.[i];
    if (text === undefined) return `column ${i + 1}`;
    return this.layout.columns.find((c) => c.from === text)?.name ?? `column ${i + 1} (${text.slice(0, 40)})`;
  }
}

function csvReject(err: CsvError, line: number, names: FieldNames): RejectError {
  const column = (err as { column?: unknown }).column;
  const field = typeof column === 'number' ? names.name(column) : undefined;
  const where = field === undefined ? `line ${line}` : `line ${line}, field ${field}`;
  const problem = CSV_PROBLEMS[err.code] ?? `not readable as CSV (${err.code})`;
  return new RejectError(`${where}: ${problem}`, { line, field }, { cause: err });
}

/**
 * CRLF, LF and CR all end a record, wherever they appear: a file whose line endings are
 * mixed (a partner concatenating two exports) reads as its lines, not as merged records.
 */
const RECORD_DELIMITERS = ['\r\n', '\n', '\r'];

const newlines = (s: string) => {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * Records with the line each starts on. Line numbers are counted here rather than taken
 * from csv-parse's per-record info, which is slow and drifts after quoted line breaks.
 */
async function* records<T extends string | Buffer>(
  path: string,
  layout: Layout,
  encoding: 'utf8' | null,
  names: FieldNames,
): AsyncGenerator<{ fields: T[]; line: number }> {
  // in byte mode the gate only strips the byte-order mark: UTF-8 is then checked per field
  const gate = new Utf8Gate(encoding !== null);
  const limit = new RecordLimit(layout.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  const parser = parse({
    encoding,
    delimiter: layout.delimiter,
    relax_column_count: true,
    skip_empty_lines: false,
    record_delimiter: RECORD_DELIMITERS,
  });
  const source = createReadStream(path, { highWaterMark: 256 * 1024 });
  const fail = (err: Error) => parser.destroy(err);
  source.on('error', fail);
  limit.on('error', fail);
  gate.on('error', fail);
  source.pipe(limit).pipe(gate).pipe(parser);
  let line = 1;
  try {
    for await (const fields of parser as AsyncIterable<T[]>) {
      const start = line;
      const only = fields[0];
      line += 1 + fields.reduce((n, f) => n + newlines(typeof f === 'string' ? f : f.toString('latin1')), 0);
      if (fields.length === 1 && only !== undefined && only.length === 0) continue; // an empty line
      yield { fields, line: start };
    }
  } catch (err) {
    if (err instanceof CsvError) {
      // records parsed ahead of the failure are dropped with it, so `line` may lag: the parser's offset does not
      const offset = (err as { bytes?: unknown }).bytes;
      await names.ensure();
      throw csvReject(err, typeof offset === 'number' ? await lineAt(path, offset) : line, names);
    }
    throw err;
  } finally {
    source.destroy();
  }
}

/**
 * The line holding byte `offset` of what the parser read (the file less a leading BOM). Only
 * on the failure path; csv-parse's own line count counts a quoted CRLF twice.
 */
async function lineAt(path: string, offset: number): Promise<number> {
  let line = 1;
  let start = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    if (start === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) offset += 3;
    for (let i = chunk.indexOf(0x0a); i !== -1 && start + i < offset; i = chunk.indexOf(0x0a, i + 1)) line++;
    start += chunk.length;
    if (start >= offset) break;
  }
  return line;
}

/** Finds the line and field of the first byte that is not UTF-8: only on the failure path. */
async function locateInvalidUtf8(path: string, layout: Layout, names: FieldNames): Promise<RejectError> {
  await names.ensure();
  for await (const { fields, line } of records<Buffer>(path, layout, null, names)) {
    const i = fields.findIndex((f) => !isUtf8(f));
    if (i !== -1) {
      const field = names.name(i);
      return new RejectError(`line ${line}, field ${field}: not valid UTF-8`, { line, field });
    }
  }
  return new RejectError('the file is not valid UTF-8 (a character is cut off at its end)');
}

/** A rejected file names up to this many bad rows, then how many more there were. */
export const MAX_REPORTED_ROWS = 100;

/** The bad rows of one file: every one counted, the first hundred kept, one RejectError in the end. */
class BadRows {
  private readonly kept: RejectError[] = [];
  private more = 0;

  get count(): number {
    return this.kept.length + this.more;
  }

  add(err: RejectError): void {
    if (this.kept.length < MAX_REPORTED_ROWS) this.kept.push(err);
    else this.more++;
  }

  /** One bad row keeps its own message; several are named one after the other, "and N more" past 100. */
  toError(): RejectError {
    const first = this.kept[0]!;
    if (this.count === 1) return first;
    const more = this.more > 0 ? `; and ${this.more} more` : '';
    const message = `${this.count} bad rows: ${this.kept.map((e) => e.message).join('; ')}${more}`;
    return new RejectError(message, {
      ...(first.line !== undefined ? { line: first.line } : {}),
      ...(first.field ? { field: first.field } : {}),
    });
  }
}

/**
 * Reads a settlement file row by row, streaming: skips the preamble, matches the header to the
 * layout by name, checks every row, leaves out the rows `skipRows` names (counted in `stats`)
 * and checks the trailer when the layout has one. Throws a RejectError at the first bad row (a
 * load stops there: its COPY must not wait while the rest of a large file is read). With
 * `every`, good rows are yielded until the first bad one and the rest of the file is still
 * checked, so that the RejectError at the end names every bad row (up to 100, then "and N
 * more") and a partner fixes them in one round trip. A file that cannot be parsed further (an
 * unclosed quote, a record over the size limit) ends the reading there.
 */
export async function* readSettlement(
  path: string,
  layout: Layout,
  opts: { every?: boolean; stats?: ReadStats } = {},
): AsyncGenerator<SettlementRow> {
  let plan: RowPlan | undefined;
  const names = new FieldNames(path, layout);
  const bad = new BadRows();
  const trailer = layout.trailer ? new TrailerCheck(layout) : undefined;
  let preamble = layout.skipLines;
  try {
    for await (const { fields, line } of records<string>(path, layout, 'utf8', names)) {
      if (preamble > 0) {
        preamble--;
        continue;
      }
      if (!plan) {
        names.learn(fields);
        plan = planRows(layout, fields, line);
        continue;
      }
      if (trailer?.isTrailer(fields, line)) continue;
      let values: (string | null)[] | 'skip';
      trailer?.countRow();
      try {
        values = plan.row(fields, line);
        trailer?.addAmount(plan, fields, values, line);
      } catch (err) {
        if (!(err instanceof RejectError) || !opts.every) throw err;
        bad.add(err);
        continue;
      }
      if (values === 'skip') {
        if (opts.stats) opts.stats.skipped++;
        continue;
      }
      if (bad.count === 0) yield { line, values };
    }
    if (!plan)
      throw new RejectError(`line ${layout.skipLines + 1}: the file is empty (no header)`, { line: layout.skipLines + 1, field: 'header' });
    trailer?.finish(bad.count);
  } catch (err) {
    const fatal = err instanceof InvalidUtf8Error ? await locateInvalidUtf8(path, layout, names) : err;
    if (!(fatal instanceof RejectError) || bad.count === 0) throw fatal;
    bad.add(fatal);
    throw bad.toError();
  }
  if (bad.count > 0) throw bad.toError();
}

/**
 * Every bad row of a file, as one RejectError (null when the file is good), read without a
 * database: what `check` prints, and what a rejected load reports after its rollback.
 */
export async function findBadRows(path: string, layout: Layout): Promise<{ rows: number; skippedRows: number; error: RejectError | null }> {
  let rows = 0;
  const stats = { skipped: 0 };
  try {
    for await (const row of readSettlement(path, layout, { every: true, stats })) if (row) rows++;
    return { rows, skippedRows: stats.skipped, error: null };
  } catch (err) {
    if (err instanceof RejectError) return { rows, skippedRows: stats.skipped, error: err };
    throw err;
  }
}
