import { errorMessage } from '../errors.js';
import { NO_COUNTS, type RunCounts } from '../ledger/types.js';
import { claimsTakenOverText } from '../ledger/runOutcomes.js';
import type { IngestResult } from '../pipeline/runIngest.js';
import type { OverdueDelivery } from '../report/deliveries.js';
import { skewSummary } from '../ledger/ledgerClock.js';
import type { HeldLease, Starvation } from '../ledger/types.js';
import { ago } from '../report/status.js';
import type { PartnerOutcome as LoopOutcome } from '../pipeline/partnerLoop.js';
import { printable } from '../report/printable.js';
import { COUNT_FIELDS, countsText, seenBeforeText } from '../report/runCounts.js';
import { jsonDocument } from './jsonOutput.js';

/**
 * The one summary line scripts and people read: `run <id> done: loaded=1 skipped=1 …`. Exit 1
 * must always be explained on it: a non-zero count, or a tail naming what stopped the run
 * or which files have waited in the intake too long. A tail also names the moves this run
 * finished for earlier runs, and the claims another run took over from it (the rows it committed
 * all the same, and the run that recorded them), which no count holds.
 */
export function summaryLine(ingestResult: IngestResult, overdue: OverdueDelivery[] = []): string {
  const seenBefore = seenBeforeText(ingestResult.counts.seenBefore);
  const tails = [
    ...(seenBefore ? [seenBefore] : []),
    ...(ingestResult.clockSkew ? [skewSummary(ingestResult.clockSkew)] : []),
    ...(overdue.length > 0 ? [`overdue: ${overdue.map((d) => d.message).join('; ')}`] : []),
    ...(ingestResult.abortedBy ? [`stopped early: ${ingestResult.abortedBy}`] : []),
    ...(ingestResult.waitingTooLong.length > 0
      ? [`waiting too long: ${ingestResult.waitingTooLong.map((w) => `${w.name} for ${w.runs} runs`).join(', ')}`]
      : []),
    ...(ingestResult.changedAfterMove.length > 0
      ? [`changed after its move: ${ingestResult.changedAfterMove.map((c) => c.location).join(', ')}`]
      : []),
    ...(ingestResult.transferLogUnread !== undefined
      ? [`transfer log not read, files judged without it: ${ingestResult.transferLogUnread}`]
      : []),
    ...(movesFailed(ingestResult).length > 0 ? [`move failed: ${movesFailed(ingestResult).join('; ')}`] : []),
    ...(ingestResult.finishedMoves.length > 0
      ? [`finished the move of ${ingestResult.finishedMoves.map((m) => `${m.name} for run ${m.decidedBy}`).join(', ')}`]
      : []),
    ...(ingestResult.claimsTakenOver.length > 0 ? [claimsTakenOverText(ingestResult.claimsTakenOver)] : []),
  ];
  const tail = tails.map((t) => ` (${printable(t)})`).join('');
  return `run ${ingestResult.runId} ${ingestResult.abortedBy ? 'stopped' : 'done'}: ${countsText(ingestResult.counts)}${tail}`;
}

/** How much of a reason a file's line shows: a reject of many bad rows is cut at a row, and says where the rest is. */
const REASON_SHOWN = 300;

/**
 * A line for each file a person must look at (rejected: the partner must send it again; failed:
 * a cause to fix), naming it and why, for the cron mail and the journal:
 * `rejected settle_x.csv: line 5, field gross_amount: "12.5O" is not a decimal amount …`. A long
 * reason (a reject lists up to 100 bad rows) is cut after a whole row, naming the report that has
 * it all.
 */
export function fileLines(ingestResult: IngestResult): string[] {
  return ingestResult.files.flatMap((f) => {
    if ((f.outcome !== 'rejected' && f.outcome !== 'failed') || f.error === undefined) return [];
    const reason = printable(f.error);
    if (reason.length <= REASON_SHOWN) return [`${f.outcome} ${printable(f.name)}: ${reason}`];
    const cut = reason.lastIndexOf('; ', REASON_SHOWN);
    const shown = `${reason.slice(0, cut > 0 ? cut : REASON_SHOWN)}; … (all of it: settle-ingest report run ${ingestResult.runId})`;
    return [`${f.outcome} ${printable(f.name)}: ${shown}`];
  });
}

/** A run's lines as a person reads them: each file to look at, then the summary line. */
export function runText(ingestResult: IngestResult, overdue: OverdueDelivery[] = []): string {
  return [...fileLines(ingestResult), summaryLine(ingestResult, overdue)].join('\n');
}

/**
 * Each decided file this run could not move, named with its outcome, where it was going and
 * why: `settle_x.csv (skipped) to duplicates: Permission denied`; a file an earlier run decided,
 * with that run.
 */
function movesFailed(ingestResult: IngestResult): string[] {
  return [
    ...ingestResult.files.flatMap((f) => (f.moveFailed ? [`${f.name} (${f.outcome}) to ${f.moveFailed.to}: ${f.moveFailed.reason}`] : [])),
    ...ingestResult.failedMoves.map((m) => `${m.name} (decided by run ${m.decidedBy}) to ${m.to}: ${m.reason}`),
  ];
}

/** `--json`: the same counts at top level plus one entry per file. */
export function summaryJson(ingestResult: IngestResult, overdue?: OverdueDelivery[]): string {
  return jsonDocument(summaryObject(ingestResult, overdue));
}

/** `overdue`: the partner's deliveries past `warnAfter` (when it has `expect`); past `errorAfter`, exit 1. */
function summaryObject(ingestResult: IngestResult, overdue?: OverdueDelivery[]): Record<string, unknown> {
  const late = overdue?.some((overdueDelivery) => overdueDelivery.level === 'critical') ? 1 : 0;
  return {
    run: ingestResult.runId,
    mode: ingestResult.mode,
    ...Object.fromEntries(COUNT_FIELDS.map(([label, key]) => [label, ingestResult.counts[key]])),
    seen_before: ingestResult.counts.seenBefore,
    exit_status: Math.max(ingestResult.exitStatus, late),
    ...(ingestResult.abortedBy ? { stopped_early: ingestResult.abortedBy } : {}),
    ...(overdue ? { overdue_deliveries: overdue } : {}),
    waiting_too_long: ingestResult.waitingTooLong,
    changed_after_move: ingestResult.changedAfterMove,
    ...(ingestResult.transferLogUnread !== undefined ? { transfer_log_unread: ingestResult.transferLogUnread } : {}),
    ...(ingestResult.clockSkew ? { clock_skew_seconds: Number(ingestResult.clockSkew.seconds.toFixed(1)) } : {}),
    finished_moves: ingestResult.finishedMoves,
    failed_moves: ingestResult.failedMoves,
    ...(ingestResult.claimsTakenOver.length > 0
      ? {
          claims_taken_over: ingestResult.claimsTakenOver.map((t) => ({
            name: t.name,
            by: t.by,
            committed_rows: t.committedRows,
          })),
        }
      : {}),
    files: ingestResult.files.map((fileOutcome) => ({
      name: fileOutcome.name,
      sha256: fileOutcome.sha256,
      outcome: fileOutcome.outcome,
      rows: fileOutcome.rows,
      ...(fileOutcome.outcome === 'loaded' ? { seen_before: fileOutcome.seenBefore ?? 0 } : {}),
      ...(fileOutcome.duplicateOf ? { duplicate_of: fileOutcome.duplicateOf } : {}),
      ...(fileOutcome.heldFor ? { held_for: fileOutcome.heldFor } : {}),
      ...(fileOutcome.error ? { error: fileOutcome.error } : {}),
      ...(fileOutcome.totals ? { totals: fileOutcome.totals } : {}),
      ...(fileOutcome.moveFailed ? { move_failed: fileOutcome.moveFailed } : {}),
    })),
  };
}

/** One partner's part of a run of several: its result, or why it could not start. */
/** One partner's outcome in a run of several (pipeline/partnerLoop.ts), with its overdue deliveries as report/deliveries.ts judges them. */
export type PartnerOutcome = LoopOutcome<OverdueDelivery>;

const partnerCounts = (o: PartnerOutcome) => o.result?.counts ?? NO_COUNTS;

/** The partners' counts added up, in the summary line's fields. */
function totalCounts(outcomes: PartnerOutcome[]): RunCounts {
  const total = { ...NO_COUNTS };
  for (const o of outcomes)
    for (const [, key] of [...COUNT_FIELDS, ['', 'seenBefore'] as const]) (total[key] as number) += partnerCounts(o)[key] ?? 0;
  return total;
}

/**
 * A run of several partners: one line per partner (`adyen: run ID done: loaded=1 …`), a partner
 * that could not start saying why, then the total line in the same fields and order.
 */
/**
 * A partner skipped because another run holds its lease (a shared PostgreSQL ledger): who, and
 * until when; a lease this host would not take over for its clock; starved (no success past
 * --max-age: exit 1), with the files waiting; this host's clock off the ledger's.
 */
export function leasedText(outcome: Pick<PartnerOutcome, 'starved' | 'clockSkew'> & { leasedBy: HeldLease }): string {
  const held = outcome.leasedBy;
  const tails = [
    ...(held.runOut ? [`${held.runOut}: not taken over, this host's clock is off the ledger's`] : []),
    ...(outcome.starved ? [starvedText(outcome.starved)] : []),
    ...(outcome.clockSkew ? [skewSummary(outcome.clockSkew)] : []),
  ];
  const tail = tails.map((t) => ` (${printable(t)})`).join('');
  return `skipped: leased to run ${held.runId ?? '(starting)'} on ${printable(held.host)} (pid ${held.pid}) until ${held.leaseUntil}${tail}`;
}

/** `starved: no successful run for 30h, past --max-age 26h; 3 files waiting: a.csv, b.csv, c.csv` */
function starvedText(starved: Starvation): string {
  const none = starved.lastSuccessRun === null ? 'no successful run ever' : `no successful run for ${ago(starved.seconds)}`;
  const waiting = starved.waiting;
  const files =
    'error' in waiting
      ? `its intake could not be listed: ${waiting.error}`
      : `${waiting.count} ${waiting.count === 1 ? 'file' : 'files'} waiting${waiting.count > 0 ? `: ${waiting.names.join(', ')}${waiting.count > waiting.names.length ? ', …' : ''}` : ''}`;
  return `starved: ${none}, past --max-age ${ago(starved.maxAgeSeconds)}; ${files}`;
}

export function partnersText(outcomes: PartnerOutcome[]): string {
  const lines = outcomes.flatMap((o) => {
    if (o.result) {
      const ended = o.error !== undefined ? ` (ended: ${printable(errorMessage(o.error))})` : '';
      return [...fileLines(o.result).map((line) => `${o.partner}: ${line}`), `${o.partner}: ${summaryLine(o.result, o.overdue)}${ended}`];
    }
    if (o.leasedBy) return `${o.partner}: ${leasedText({ ...o, leasedBy: o.leasedBy })}`;
    const what = o.notBegun ? 'not begun' : 'could not start';
    const run = o.runId ? `run ${o.runId} ` : '';
    return `${o.partner}: ${run}not started: ${countsText(NO_COUNTS)} (${printable(`${what}: ${errorMessage(o.error)}`)})`;
  });
  const notStarted = outcomes.filter((o) => !o.result && !o.leasedBy).map((o) => o.partner);
  const leased = outcomes.filter((o) => o.leasedBy).map((o) => o.partner);
  const starved = outcomes.filter((o) => o.starved).map((o) => o.partner);
  const stopped = outcomes.some((o) => o.result?.abortedBy || o.notBegun);
  const tail =
    (notStarted.length > 0 ? ` (not started: ${notStarted.join(', ')})` : '') +
    (leased.length > 0 ? ` (leased elsewhere: ${leased.join(', ')})` : '') +
    (starved.length > 0 ? ` (starved: ${starved.join(', ')})` : '');
  const seenBefore = seenBeforeText(totalCounts(outcomes).seenBefore);
  const partners = `${outcomes.length} partner${outcomes.length === 1 ? '' : 's'}`;
  lines.push(
    `total (${partners}) ${stopped ? 'stopped' : 'done'}: ${countsText(totalCounts(outcomes))}${seenBefore ? ` (${seenBefore})` : ''}${tail}`,
  );
  return lines.join('\n');
}

/** `--json` of a run of several: one object per partner (as a one-partner run's) and the totals. */
export function partnersJson(outcomes: PartnerOutcome[]): string {
  const counts = (runCounts: RunCounts) => ({
    ...Object.fromEntries(COUNT_FIELDS.map(([label, key]) => [label, runCounts[key]])),
    seen_before: runCounts.seenBefore,
  });
  return jsonDocument({
    partners: outcomes.map((partnerOutcome) =>
      partnerOutcome.leasedBy
        ? {
            partner: partnerOutcome.partner,
            status: 'leased',
            leased_by: {
              host: partnerOutcome.leasedBy.host,
              pid: partnerOutcome.leasedBy.pid,
              run: partnerOutcome.leasedBy.runId,
              lease_until: partnerOutcome.leasedBy.leaseUntil,
              ...(partnerOutcome.leasedBy.runOut ? { run_out: partnerOutcome.leasedBy.runOut } : {}),
            },
            ...(partnerOutcome.starved
              ? {
                  starved: {
                    seconds: Math.round(partnerOutcome.starved.seconds),
                    max_age_seconds: partnerOutcome.starved.maxAgeSeconds,
                    last_success_run: partnerOutcome.starved.lastSuccessRun,
                    waiting: partnerOutcome.starved.waiting,
                  },
                }
              : {}),
            ...(partnerOutcome.clockSkew ? { clock_skew_seconds: Number(partnerOutcome.clockSkew.seconds.toFixed(1)) } : {}),
            ...counts(NO_COUNTS),
            exit_status: partnerOutcome.exitStatus,
            files: [],
          }
        : partnerOutcome.result
          ? {
              partner: partnerOutcome.partner,
              status: partnerOutcome.error !== undefined ? 'ended' : partnerOutcome.result.abortedBy ? 'stopped' : 'finished',
              ...summaryObject(partnerOutcome.result, partnerOutcome.overdue),
              ...(partnerOutcome.error !== undefined ? { error: errorMessage(partnerOutcome.error) } : {}),
            }
          : {
              partner: partnerOutcome.partner,
              status: partnerOutcome.notBegun ? 'not_begun' : 'not_started',
              run: partnerOutcome.runId ?? null,
              ...counts(NO_COUNTS),
              exit_status: partnerOutcome.exitStatus,
              error: errorMessage(partnerOutcome.error),
              files: [],
            },
    ),
    ...counts(totalCounts(outcomes)),
    exit_status: Math.max(...outcomes.map((o) => o.exitStatus)),
  });
}
