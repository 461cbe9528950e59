import { RejectError } from '../errors.js';
import { keyName, type Layout } from '../layout/model/layout.js';
import { lastRecordCutShort } from '../layout/reader/lastRecord.js';
import { KeyClashes, KeyRepeats } from '../layout/reader/naturalKeys.js';
import { findBadRows } from '../layout/reader/readSettlement.js';
import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import { cutShortWords } from './pausedUpload.js';

/** What a run would make of a file's content, barring the database: its rows, or why it would be refused. */
export interface ContentCheck {
  /** the rows a load would put in (a good file) */
  rows: number;
  /** the rows the layout's skipRows leaves out, and records of a `skip` type */
  skippedRows: number;
  /** the file's own control totals its rows were proved against (layout/reader/totalsCheck.ts) */
  totals?: CheckedTotal[];
  /** its balance rules that found no group to check: nothing of them proved (said, never taken for proof) */
  totalsNotChecked?: string[];
  error: RejectError | null;
}

/**
 * Every check a run makes of a decoded content that needs neither a database nor a ledger, by
 * the run's own functions, in the run's order (`check` and `npm run conformance` judge by it):
 * 1. a plain delivery whose last record is cut short is an upload a run waits for and then
 *    rejects as incomplete (pausedUpload.ts); a wrapped one is whole by its own framing;
 * 2. the reader's checks, every bad row named (readSettlement.ts): the header (an empty file
 *    has none), each value by its column's type and width, record types, count records and
 *    the trailer (whose absence a run waits for, then rejects the same way);
 * 3. the natural key's repeats within the file, which the load's UNIQUE index refuses, named
 *    as the run names them (naturalKeys.ts).
 * Keys already loaded from other files are the one thing only the database can tell.
 */
export async function checkContent(
  path: string,
  layout: Layout,
  opts: {
    fileName: string;
    /** the delivered bytes are the content (no gzip, zip or OpenPGP) */ plain: boolean;
    /** when the file was delivered (its mtime): a layout may take a year from it */ deliveredAt?: number;
  },
): Promise<ContentCheck> {
  if (opts.plain) {
    const cut = await lastRecordCutShort(path, layout);
    if (cut) {
      const { stopped, shape } = cutShortWords(cut);
      const message = `${stopped} (${shape}): a run leaves it in the intake as not ready for --max-waiting-runs runs, then rejects it as incomplete`;
      return { rows: 0, skippedRows: 0, error: new RejectError(message, { line: cut.line, field: 'incomplete' }) };
    }
  }
  // with an occurrence, a repeated key is the next occurrence of it, never a clash
  const repeats = layout.occurrence === undefined ? new KeyRepeats(layout) : undefined;
  const clashes = new KeyClashes();
  const read = await findBadRows(path, layout, {
    fileName: opts.fileName,
    ...(opts.deliveredAt !== undefined ? { deliveredAt: opts.deliveredAt } : {}),
    ...(repeats ? { onRow: (row: { values: (string | null)[]; line: number }) => clashes.addRepeat(repeats, row.values, row.line) } : {}),
  }).finally(() => repeats?.close());
  if (read.error || clashes.count === 0) return read;
  const { message, line } = clashes.message(layout);
  return { ...read, error: new RejectError(message, { ...(line !== undefined ? { line } : {}), field: keyName(layout) }) };
}
