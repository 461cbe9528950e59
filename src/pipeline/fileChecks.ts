import { RejectError } from '../errors.js';
import type { Layout } from '../layout/model/layout.js';
import { lastRecordCutShort } from '../layout/reader/lastRecord.js';
import type { ContentCheck } from '../layout/reader/readSettlement.js';
import { checkRows } from '../layout/reader/rowChecks.js';
import { cutShortWords } from './pausedUpload.js';

/** What a run would make of a file's content, barring the database (layout/reader/readSettlement.ts). */
export type { ContentCheck };

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
  return checkRows(path, layout, { fileName: opts.fileName, ...(opts.deliveredAt !== undefined ? { deliveredAt: opts.deliveredAt } : {}) });
}
