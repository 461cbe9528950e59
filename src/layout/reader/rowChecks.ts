import { RejectError } from '../../errors.js';
import { keyName, type Layout } from '../model/layout.js';
import { KeyClashes, KeyRepeats } from './naturalKeys.js';
import { findBadRows, type ContentCheck } from './readSettlement.js';

/**
 * A file's rows checked as a run checks them before its load, barring the database: every bad
 * row named with its line and field (readSettlement.ts: the header, each value, record types,
 * count records, the trailer), then the natural key's repeats within the file, which the load's
 * UNIQUE index refuses, named as the run names them (naturalKeys.ts). What `check` runs (through
 * pipeline/fileChecks.ts) and what `layout suggest` proves its draft by.
 */
export async function checkRows(
  path: string,
  layout: Layout,
  opts: { fileName: string; /** when the file was delivered (its mtime): a layout may take a year from it */ deliveredAt?: number },
): Promise<ContentCheck> {
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
