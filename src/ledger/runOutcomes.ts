import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type { LedgerReads } from './ledger.js';
import { COUNT_KEY, NO_COUNTS, OUTCOME_EVENTS, type LedgerEvent, type OutcomeEvent, type RunCounts } from './types.js';

export interface FileOutcome {
  name: string;
  sha256: string | null;
  outcome: OutcomeEvent;
  rows: number;
  /** for a load: its rows identical to rows other files had loaded, not loaded again */
  seenBefore?: number;
  /** for a skip: the file whose load this content duplicates */
  duplicateOf?: { name: string; run: string; source: string };
  /** for a hold: the twin being loaded by another run */
  heldFor?: { name: string; run: string };
  /** for a reject or failure, or why a file was not ready */
  error?: string;
  /** for a load: the control totals the file proved (layout/reader/totalsCheck.ts) */
  totals?: CheckedTotal[];
  /** its outcome stands, its move out of the intake failed: where it was going and why (the next run tries again) */
  moveFailed?: { to: string; reason: string };
}

/** A move this run finished for a file whose outcome an earlier run decided (that run died, or its move failed). */
export interface FinishedMove {
  name: string;
  location: string;
  decidedBy: string;
}

/** A move this run tried for a file whose outcome an earlier run decided, and which failed again. */
export interface FailedMove {
  name: string;
  to: string;
  reason: string;
  decidedBy: string;
}

/**
 * A file this run claimed whose claim another run settled or took before this run could record
 * its outcome (this run was paused past its lease): the run that has it, and the rows this run
 * committed when its COMMIT landed all the same (that run recorded the load).
 */
export interface ClaimTakenOver {
  name: string;
  by: { run: string; state: string } | null;
  committedRows: number | null;
}

export interface RunOutcomes {
  runId: string;
  mode: string;
  counts: RunCounts;
  files: FileOutcome[];
  finishedMoves: FinishedMove[];
  failedMoves: FailedMove[];
  claimsTakenOver: ClaimTakenOver[];
}

/** What the summary line and the run's ledger row say of claims taken over: who has each file, what this run committed. */
export function claimsTakenOverText(taken: ClaimTakenOver[]): string {
  const each = taken.map((t) => {
    const committed = t.committedRows !== null ? `its ${t.committedRows} rows committed by this run, ` : '';
    const by = t.by
      ? t.by.state === 'loaded'
        ? `loaded as run ${t.by.run} recorded`
        : `with run ${t.by.run} (${t.by.state})`
      : 'with no run';
    return `${t.name}: ${committed}${by}`;
  });
  return `claim taken over after its lease: ${each.join(', ')}`;
}

/** Settling another run's stale claim: counted, and it makes the run's exit 1 (worth a look). */
const STALE_EVENTS: readonly string[] = ['expired', 'recovered'];

/** What a run did, read back from the ledger's events rather than from the run's memory. */
export async function runOutcomes(ledger: LedgerReads, runId: string): Promise<RunOutcomes> {
  const run = await ledger.run(runId);
  const counts: RunCounts = { ...NO_COUNTS };
  const files: FileOutcome[] = [];
  const finishedMoves: FinishedMove[] = [];
  const failedMoves: FailedMove[] = [];
  const moveFailures: LedgerEvent[] = [];
  const claimsTakenOver: ClaimTakenOver[] = [];
  // ignored names are recorded once: this run's are those it was the last to see (older runs keep their first sightings' events)
  const ignored = await ledger.ignoredSeenBy(runId);
  const ignoredNames = new Set(ignored.map((i) => i.name));
  for (const ledgerEvent of await ledger.eventsOfRun(runId)) {
    if (ledgerEvent.event === 'ignored' && ignoredNames.has(ledgerEvent.name)) continue;
    if (STALE_EVENTS.includes(ledgerEvent.event)) counts.stale++;
    const decidedBy = ledgerEvent.event === 'moved' ? (ledgerEvent.details as { decidedBy?: unknown }).decidedBy : undefined;
    if (typeof decidedBy === 'string' && decidedBy !== runId) {
      finishedMoves.push({ name: ledgerEvent.name, location: String((ledgerEvent.details as { to?: unknown }).to ?? ''), decidedBy });
    }
    if (ledgerEvent.event === 'move_failed') moveFailures.push(ledgerEvent);
    const taken = ledgerEvent.details as { takenOver?: unknown; by?: { run: string; state: string }; committedRows?: number };
    if (ledgerEvent.event === 'released' && taken.takenOver === true) {
      claimsTakenOver.push({ name: ledgerEvent.name, by: taken.by ?? null, committedRows: taken.committedRows ?? null });
    }
    if (!(OUTCOME_EVENTS as readonly string[]).includes(ledgerEvent.event)) continue;
    const outcome = ledgerEvent.event as OutcomeEvent;
    const details = ledgerEvent.details as {
      rows?: number;
      seenBefore?: number;
      reason?: string;
      duplicateOf?: FileOutcome['duplicateOf'];
      heldFor?: FileOutcome['heldFor'];
      totals?: CheckedTotal[];
    };
    const rows = outcome === 'loaded' ? (details.rows ?? 0) : 0;
    counts[COUNT_KEY[outcome]]++;
    counts.rows += rows;
    const seenBefore = outcome === 'loaded' ? (details.seenBefore ?? 0) : 0;
    counts.seenBefore += seenBefore;
    files.push({
      name: ledgerEvent.name,
      sha256: ledgerEvent.sha256,
      outcome,
      rows,
      ...(seenBefore > 0 ? { seenBefore } : {}),
      ...(details.duplicateOf ? { duplicateOf: details.duplicateOf } : {}),
      ...(details.heldFor ? { heldFor: details.heldFor } : {}),
      ...(outcome === 'loaded' && details.totals ? { totals: details.totals } : {}),
      ...(details.reason && outcome !== 'loaded' && outcome !== 'skipped' ? { error: details.reason } : {}),
    });
  }
  // a failed move is named on the file this run decided, or listed apart when an earlier run decided it
  for (const failure of moveFailures) {
    const failed = failure.details as { to?: unknown; reason?: unknown; decidedBy?: unknown };
    const moveFailed = { to: String(failed.to ?? ''), reason: String(failed.reason ?? '') };
    const decidedBy = typeof failed.decidedBy === 'string' ? failed.decidedBy : runId;
    const decided =
      decidedBy === runId ? files.find((f) => f.name === failure.name && f.sha256 === failure.sha256 && !f.moveFailed) : undefined;
    if (decided) decided.moveFailed = moveFailed;
    else failedMoves.push({ name: failure.name, ...moveFailed, decidedBy });
  }
  for (const ignoredEntry of ignored) {
    counts.ignored++;
    files.push({ name: ignoredEntry.name, sha256: null, outcome: 'ignored', rows: 0, error: ignoredEntry.reason });
  }
  return { runId, mode: run?.mode ?? 'manual', counts, files, finishedMoves, failedMoves, claimsTakenOver };
}
