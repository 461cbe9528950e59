import pg from 'pg';
import { TransientError } from '../errors.js';
import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import { endLoad, explainFailure, loadRows, startReload } from './copyRows.js';
import type { FinanceTarget, LoadRequest } from './target.js';

const { escapeIdentifier } = pg;

export interface ReloadResult {
  previousRows: number;
  rows: number;
  /** rows identical to rows other files loaded: not loaded again (a layout comparing rows seen before) */
  seenBefore: number;
  /** the control totals the fresh load proved (layout/reader/totalsCheck.ts); absent when its layout states none */
  totals?: CheckedTotal[];
}

/**
 * Replaces a loaded content's rows with a fresh load of the same staged bytes, in ONE
 * transaction: its file marker is locked, the old rows deleted, the new ones (carrying
 * `req.runId`) copied in. A bad row or a dry run rolls back, leaving the old rows.
 */
export async function reloadRows(
  financeTarget: FinanceTarget,
  req: LoadRequest,
  opts: { dryRun: boolean; reason: string },
): Promise<ReloadResult> {
  const { client, schema, layout } = financeTarget;
  const quotedSchema = escapeIdentifier(schema);
  await client.query('BEGIN');
  try {
    const marker = await client.query<{ target_table: string }>(
      `SELECT target_table FROM ${quotedSchema}.file_loads WHERE sha256 = $1 FOR UPDATE`,
      [req.sha256],
    );
    if (marker.rowCount === 0) {
      throw new TransientError(`content ${req.sha256} has no file marker in ${schema}.file_loads: nothing to replace (run audit)`);
    }
    // its rows are where they were loaded, whatever today's layout names: they are replaced there
    const oldTable = `${quotedSchema}.${escapeIdentifier(marker.rows[0]!.target_table)}`;
    const removed = await client.query(
      `DELETE FROM ${oldTable} WHERE load_id IN (SELECT load_id FROM ${quotedSchema}.loads WHERE sha256 = $1)`,
      [req.sha256],
    );
    await client.query(`UPDATE ${quotedSchema}.file_loads SET target_table = $2 WHERE sha256 = $1`, [req.sha256, layout.table]);
    const loadId = await startReload(financeTarget, req, opts.reason);
    const { rows, seenBefore, totals } = await loadRows(financeTarget, req, loadId);
    await endLoad(financeTarget, req, loadId, rows, opts.dryRun ? 'ROLLBACK' : 'COMMIT');
    return { previousRows: removed.rowCount ?? 0, rows, seenBefore, ...(totals ? { totals } : {}) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await explainFailure(financeTarget, req, err);
  }
}
