import { RejectError } from '../errors.js';
import { CsvRecordError, csvRecords, type CsvRecord } from './csvRecords.js';
import { DEFAULT_MAX_RECORD_BYTES, type Layout } from './layout.js';
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
  /**
   * The record's own text when COPY may take it as it is: no quotes, no backslash, comma
   * separated, its columns in the layout's order and every value unchanged by the checks.
   */
  text?: string;
}

/** Whether a checked row's values are its fields as written (an empty field stands for NULL). */
function unchanged(values: (string | null)[], fields: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null ? fields[i] !== '' : v !== fields[i]) return false;
  }
  return true;
}

/** How messages name a record's field: by the layout column its header names, else by position and header text. */
function fieldName(layout: Layout, header: string[] | undefined, i: number): string {
  const text = header?.[i]?.trim();
  if (text === undefined) return layout.columns[i]?.name ?? `column ${i + 1}`;
  return layout.columns.find((c) => c.from === text)?.name ?? `column ${i + 1} (${text.slice(0, 40)})`;
}

/** A record that cannot be read, as the reject that names its line and field. */
function csvReject(err: CsvRecordError, layout: Layout, header: string[] | undefined): RejectError {
  const { line, column } = err;
  const field = column === undefined ? 'record' : fieldName(layout, header, column);
  const where = column === undefined ? `line ${line}` : `line ${line}, field ${field}`;
  return new RejectError(`${where}: ${err.problem}`, { line, field }, { cause: err });
}

/** The file's records after its preamble, each with the line it starts on (csvRecords.ts: quoting, line ends, UTF-8, size limit). */
function records(path: string, layout: Layout): AsyncGenerator<CsvRecord> {
  return csvRecords(path, {
    delimiter: layout.delimiter,
    maxRecordBytes: layout.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES,
    skipLines: layout.skipLines,
  });
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
  let header: string[] | undefined;
  const bad = new BadRows();
  const trailer = layout.trailer ? new TrailerCheck(layout) : undefined;
  try {
    const asWritten = layout.delimiter === ',';
    for await (const { fields, line, text } of records(path, layout)) {
      if (!plan) {
        header = fields;
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
      if (bad.count > 0) continue;
      if (asWritten && text !== undefined && plan.inOrder && !text.includes('\\') && unchanged(values, fields))
        yield { line, values, text };
      else yield { line, values };
    }
    if (!plan)
      throw new RejectError(`line ${layout.skipLines + 1}: the file is empty (no header)`, { line: layout.skipLines + 1, field: 'header' });
    trailer?.finish(bad.count);
  } catch (err) {
    const fatal = err instanceof CsvRecordError ? csvReject(err, layout, header) : err;
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
