import { RejectError } from '../errors.js';
import { CsvRecordError, csvRecords } from './csvRecords.js';
import { DEFAULT_MAX_RECORD_BYTES, type Layout } from './layout.js';
import { validateHeader, validateRow } from './validateRow.js';

export interface SettlementRow {
  /** the file's own line number, as an editor shows it (the header is line 1) */
  line: number;
  values: (string | null)[];
}

/** A record that cannot be read, as the reject that names its line and field. */
function csvReject(err: CsvRecordError, layout: Layout): RejectError {
  const { line, column } = err;
  const field = column === undefined ? 'record' : (layout.columns[column]?.name ?? `column ${column + 1}`);
  const where = column === undefined ? `line ${line}` : `line ${line}, field ${field}`;
  return new RejectError(`${where}: ${err.problem}`, { line, field }, { cause: err });
}

/** The file's records, each with the line it starts on (csvRecords.ts: quoting, line ends, UTF-8, size limit). */
function records(path: string, layout: Layout): AsyncGenerator<{ fields: string[]; line: number }> {
  return csvRecords(path, { delimiter: ',', maxRecordBytes: layout.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES });
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
 * Reads a settlement file row by row, streaming: checks the header and every row against the
 * layout, and throws a RejectError at the first bad row (a load stops there: its COPY must not
 * wait while the rest of a large file is read). With `every`, good rows are yielded until the
 * first bad one and the rest of the file is still checked, so that the RejectError at the end
 * names every bad row (up to 100, then "and N more") and a partner fixes them in one round
 * trip. A file that cannot be parsed further (an unclosed quote, a record over the size limit)
 * ends the reading there.
 */
export async function* readSettlement(path: string, layout: Layout, opts: { every?: boolean } = {}): AsyncGenerator<SettlementRow> {
  let sawHeader = false;
  const bad = new BadRows();
  try {
    for await (const { fields, line } of records(path, layout)) {
      if (!sawHeader) {
        validateHeader(layout, fields, line);
        sawHeader = true;
        continue;
      }
      let values: (string | null)[];
      try {
        values = validateRow(layout, fields, line);
      } catch (err) {
        if (!(err instanceof RejectError) || !opts.every) throw err;
        bad.add(err);
        continue;
      }
      if (bad.count === 0) yield { line, values };
    }
  } catch (err) {
    const fatal = err instanceof CsvRecordError ? csvReject(err, layout) : err;
    if (!(fatal instanceof RejectError) || bad.count === 0) throw fatal;
    bad.add(fatal);
    throw bad.toError();
  }
  if (!sawHeader) throw new RejectError('line 1: the file is empty (no header)', { line: 1, field: 'header' });
  if (bad.count > 0) throw bad.toError();
}

/**
 * Every bad row of a file, as one RejectError (null when the file is good), read without a
 * database: what `check` prints, and what a rejected load reports after its rollback.
 */
export async function findBadRows(path: string, layout: Layout): Promise<{ rows: number; error: RejectError | null }> {
  let rows = 0;
  try {
    for await (const row of readSettlement(path, layout, { every: true })) if (row) rows++;
    return { rows, error: null };
  } catch (err) {
    if (err instanceof RejectError) return { rows, error: err };
    throw err;
  }
}
