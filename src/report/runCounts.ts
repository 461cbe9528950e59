import type { RunCounts, RunRow } from '../ledger/types.js';

/** A run's counts in the summary line's fixed order (docs/DESIGN.md), each with its printed name. */
export const COUNT_FIELDS: readonly (readonly [string, keyof RunCounts])[] = [
  ['loaded', 'loaded'],
  ['skipped', 'skipped'],
  ['held', 'held'],
  ['rejected', 'rejected'],
  ['failed', 'failed'],
  ['not_ready', 'notReady'],
  ['ignored', 'ignored'],
  ['stale', 'stale'],
  ['move_failed', 'moveFailed'],
  ['rows', 'rows'],
];

/**
 * Rows seen before (identical to rows other files had loaded, not loaded again) are no field of
 * the summary line, whose fields are fixed (docs/DESIGN.md "Nothing silent"): a tail says them
 * where there were any, `--json` and `report runs` always.
 */
export const seenBeforeText = (rows: number | null | undefined): string | undefined =>
  rows ? `rows seen before: ${rows}, identical to rows loaded from other files, not loaded again` : undefined;

/** `loaded=1 skipped=0 … rows=1240`: the same fields, in the same order, wherever counts are printed. */
export function countsText(partial: Partial<Record<keyof RunCounts, number | null>>): string {
  return COUNT_FIELDS.map(([label, key]) => `${label}=${partial[key] ?? '-'}`).join(' ');
}

/** The counts `runs` kept for a run; null where it kept none (still running, died, or an older release). */
export function recordedCounts(runRow: RunRow): Record<keyof RunCounts, number | null> {
  return {
    loaded: runRow.loaded,
    skipped: runRow.skipped,
    held: runRow.held,
    rejected: runRow.rejected,
    failed: runRow.failed,
    notReady: runRow.notReady,
    ignored: runRow.ignored,
    stale: runRow.stale,
    moveFailed: runRow.moveFailed,
    rows: runRow.rowCount,
    seenBefore: runRow.seenBefore,
    reprocessed: runRow.reprocessed,
  };
}
