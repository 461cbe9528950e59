import { formatDuration } from '../durations.js';
import { DEFAULT_PARTNER, type RunRow, type RunStatus } from '../ledger/types.js';
import { COUNT_FIELDS, recordedCounts } from './runCounts.js';
import { textTable } from './textTable.js';

/** Runs recorded before statuses were kept have none: their end tells. */
export const statusOf = (runRow: RunRow): RunStatus => runRow.status ?? (runRow.endedAt ? 'finished' : 'running');

/** The status, with the tries a run that could not start stands for: `not_started (5 tries)`. */
export const statusText = (runRow: RunRow): string =>
  runRow.attempts > 1 ? `${statusOf(runRow)} (${runRow.attempts} tries)` : statusOf(runRow);

/**
 * How long the run worked; null while it runs, and for a run that died (its end is when a
 * later run found it dead, not when it stopped).
 */
export function durationSeconds(runRow: RunRow): number | null {
  if (!runRow.endedAt || statusOf(runRow) === 'died' || statusOf(runRow) === 'running') return null;
  return Math.max(0, (Date.parse(runRow.endedAt) - Date.parse(runRow.startedAt)) / 1000);
}

/** How long a run took: `4.2s`, `3m05s`, `1h02m`; `-` when it has no duration. */
export const runTimeText = (seconds: number | null): string =>
  seconds === null ? '-' : formatDuration(seconds, { tenthsUnderMinute: true, parts: 2, padded: true });

/** Whether rows come from a config of several partners (a partner column is worth its width), not only from `default`. */
export const manyPartners = (rows: { partner: string }[]) => rows.some((r) => r.partner !== DEFAULT_PARTNER);

export const utcTime = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 19) : '-');

/** One run for `--json` (`report runs`, `report run`, `status`): the counts under the summary line's names. */
export function runJson(runRow: RunRow): Record<string, unknown> {
  const counts = recordedCounts(runRow);
  return {
    run: runRow.runId,
    partner: runRow.partner,
    mode: runRow.mode,
    status: statusOf(runRow),
    reason: runRow.reason,
    host: runRow.host,
    pid: runRow.pid,
    startedAt: runRow.startedAt,
    endedAt: runRow.endedAt,
    durationSeconds: durationSeconds(runRow),
    ...Object.fromEntries(COUNT_FIELDS.map(([label, key]) => [label, counts[key]])),
    seenBefore: runRow.seenBefore,
    reprocessed: runRow.reprocessed,
    // the loads' own outcome, as documented since version 1; the scheduler's view beside it
    exitStatus: runRow.exitStatus,
    processExitStatus: runRow.processExitStatus,
    attempts: runRow.attempts,
  };
}

/**
 * `report runs`: the recent runs, newest first, with how each ended and why, as the ledger recorded
 * them. `exit` is what the process exited with, as the scheduler saw it (also 1 for an overdue
 * delivery, or another partner's trouble in the same command); `loads` the outcome of the run's own files.
 */
export function formatRuns(runs: RunRow[]): string {
  if (runs.length === 0) return 'no runs recorded yet';
  const byPartner = manyPartners(runs);
  return textTable(
    [
      ...(byPartner ? ['partner'] : []),
      'run',
      'mode',
      'host',
      'started (UTC)',
      'took',
      'status',
      'exit',
      'loads',
      ...COUNT_FIELDS.map(([label]) => label),
      'seen_before',
      'reason',
    ],
    runs.map((runRow) => {
      const counts = recordedCounts(runRow);
      return [
        ...(byPartner ? [runRow.partner] : []),
        runRow.runId,
        runRow.mode,
        runRow.host,
        utcTime(runRow.startedAt),
        runTimeText(durationSeconds(runRow)),
        statusText(runRow),
        runRow.processExitStatus ?? '-',
        runRow.exitStatus ?? '-',
        ...COUNT_FIELDS.map(([, key]) => counts[key] ?? '-'),
        runRow.seenBefore ?? (runRow.status === 'finished' ? 0 : '-'),
        runRow.reason ?? '',
      ];
    }),
  );
}
