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

/** `loaded=1 skipped=0 … rows=1240`: the same fields, in the same order, wherever counts are printed. */
export function countsText(c: Partial<Record<keyof RunCounts, number | null>>): string {
  return COUNT_FIELDS.map(([label, key]) => `${label}=${c[key] ?? '-'}`).join(' ');
}

/** The counts `runs` kept for a run; null where it kept none (still running, died, or an older release). */
export function recordedCounts(r: RunRow): Record<keyof RunCounts, number | null> {
  return {
    loaded: r.loaded,
    skipped: r.skipped,
    held: r.held,
    rejected: r.rejected,
    failed: r.failed,
    notReady: r.notReady,
    ignored: r.ignored,
    stale: r.stale,
    moveFailed: r.moveFailed,
    rows: r.rowCount,
    reprocessed: r.reprocessed,
  };
}
