import type { RunRow } from '../ledger/types.js';
import { textTable } from './textTable.js';

const time = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 19) : '(running or died)');

/** `report runs`: the recent runs, newest first, with their counts as the ledger recorded them. */
export function formatRuns(runs: RunRow[]): string {
  if (runs.length === 0) return 'no runs recorded yet';
  return textTable(
    ['run', 'mode', 'started (UTC)', 'ended (UTC)', 'loaded', 'skipped', 'held', 'rejected', 'failed', 'not_ready', 'rows', 'exit'],
    runs.map((r) => [
      r.runId,
      r.mode,
      time(r.startedAt),
      time(r.endedAt),
      r.loaded ?? '-',
      r.skipped ?? '-',
      r.held ?? '-',
      r.rejected ?? '-',
      r.failed ?? '-',
      r.notReady ?? '-',
      r.rowCount ?? '-',
      r.exitStatus ?? '-',
    ]),
  );
}
