import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type { Destination } from '../destination.js';

/** The partner of a config without "partners", and of every row from before partners were kept. */
export const DEFAULT_PARTNER = 'default';

export type FileState = 'claimed' | 'loaded' | 'duplicate' | 'held' | 'rejected' | 'failed';

export type EventKind =
  | 'arrived'
  | 'claimed'
  | 'loaded'
  | 'skipped'
  | 'held'
  | 'rejected'
  | 'failed'
  | 'released'
  | 'expired'
  | 'recovered'
  | 'reprocessed'
  | 'moved'
  | 'not_ready'
  | 'ignored'
  /** an owed day waived by an operator (named by the day: `YYYY-MM-DD`), and taken back */
  | 'waived'
  | 'unwaived'
  /** a decided file (loaded, skipped, rejected) whose move out of the intake failed: where it was going, why, who decided it */
  | 'move_failed';

export type RunMode = 'scheduled' | 'manual' | 'reprocess';

export interface FileRow {
  id: number;
  /** the partner whose intake it came from (the latest to decide it) */
  partner: string;
  name: string;
  /** the bytes as delivered: the claim key */
  sha256: string;
  /** the content inside them (decoded gzip, zip, OpenPGP): the finance database's file marker; null on rows from before it was kept */
  contentSha256: string | null;
  state: FileState;
  runId: string;
  size: number;
  rowCount: number | null;
  /** a loaded file's rows identical to rows another file had loaded, not loaded again (null: none, or from before they were kept) */
  seenBefore: number | null;
  /** the control totals the loaded file proved before its rows were loaded; null when its layout states none (or before they were kept) */
  totals: CheckedTotal[] | null;
  reason: string | null;
  ownerHost: string | null;
  ownerPid: number | null;
  ownerStartedAt: string | null;
  leaseUntil: string | null;
  location: string | null;
  /** size:mtime of the upload this row was last decided for (null on rows from before it was kept) */
  arrival: string | null;
  firstSeenAt: string;
  updatedAt: string;
}

/** The hash the finance database's file marker has for a row: its content's (rows from before it was kept: their bytes were their content). */
export const contentOf = (row: Pick<FileRow, 'sha256' | 'contentSha256'>): string => row.contentSha256 ?? row.sha256;

export interface LedgerEvent {
  id: number;
  partner: string;
  runId: string | null;
  at: string;
  event: EventKind;
  name: string;
  sha256: string | null;
  details: Record<string, unknown>;
}

/** How a run ended: `not_started` (could not reach its database, intake or staging), `died` (closed by a later run). */
export type RunStatus = 'running' | 'finished' | 'not_started' | 'died';

export interface RunRow {
  runId: string;
  partner: string;
  /** null on runs recorded before statuses were kept */
  status: RunStatus | null;
  reason: string | null;
  mode: RunMode;
  host: string;
  pid: number;
  startedAt: string;
  endedAt: string | null;
  loaded: number | null;
  skipped: number | null;
  held: number | null;
  rejected: number | null;
  failed: number | null;
  notReady: number | null;
  ignored: number | null;
  stale: number | null;
  moveFailed: number | null;
  reprocessed: number | null;
  rowCount: number | null;
  /** rows of the run's loaded files identical to rows loaded before, not loaded again (null on runs from before it was kept) */
  seenBefore: number | null;
  /** the outcome of the run's own loads (0 ok, 1 a problem among its files, 2 configuration) */
  exitStatus: number | null;
  /**
   * what the process exited with, as the scheduler saw it: also 1 for an overdue delivery past
   * errorAfter, or another partner's trouble in the same command; null while it runs and on runs
   * from before it was kept
   */
  processExitStatus: number | null;
  /** a run that could not start: the tries it stands for (`watch` counts an outage's retries on its one run); 1 otherwise */
  attempts: number;
}

/** The outcomes a run counts: each ready file gets exactly one of these per run. */
export const OUTCOME_EVENTS = ['loaded', 'skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored'] as const;
export type OutcomeEvent = (typeof OUTCOME_EVENTS)[number];

/** What a run counts, as `runs` keeps it. */
export interface RunCounts {
  loaded: number;
  skipped: number;
  held: number;
  rejected: number;
  failed: number;
  notReady: number;
  ignored: number;
  /** stale claims this run found and settled (expired or recovered) */
  stale: number;
  /** decided files whose move out of the intake failed (the next run finishes it) */
  moveFailed: number;
  /** new rows loaded */
  rows: number;
  /** rows identical to rows other files had loaded: counted, not loaded again (a layout's `seenBefore`) */
  seenBefore: number;
  reprocessed?: number;
}

/** Where each outcome event is counted in RunCounts. */
export const COUNT_KEY: Record<OutcomeEvent, keyof RunCounts> = {
  loaded: 'loaded',
  skipped: 'skipped',
  held: 'held',
  rejected: 'rejected',
  failed: 'failed',
  not_ready: 'notReady',
  ignored: 'ignored',
};

export const NO_COUNTS: RunCounts = {
  loaded: 0,
  skipped: 0,
  held: 0,
  rejected: 0,
  failed: 0,
  notReady: 0,
  ignored: 0,
  stale: 0,
  moveFailed: 0,
  rows: 0,
  seenBefore: 0,
};

/** What one partner's run of this process leaves for the metrics (report/metricsFile.ts), filled by the partner loop (pipeline/partnerLoop.ts). */
export interface PartnerRunMetrics {
  partner: string;
  /** the run recorded for it, once one was */
  runId?: string;
  startedAt: number;
  endedAt: number;
  /** the outcome of its loads, as the ledger's run row keeps it */
  exitStatus: number;
  /** what the process exited with (the scheduler's view): also 1 for an overdue day past errorAfter */
  processExitStatus: number;
  counts: RunCounts;
  /** age of the oldest file still in the partner's intake; undefined when it could not be listed */
  oldestWaitingSeconds?: number;
}

/** Who asks for a partner's lease: this process, and the run it records once it holds the lease. */
export interface LeaseHolder {
  /** this process's own token (host, pid and a random part): renewing or releasing needs it */
  holder: string;
  host: string;
  pid: number;
  /** the process's start time (owner.ts): tells a reused pid from the holder */
  startedAt: string;
}

/** A partner's lease as another holds it: what a host that skips the partner says. */
export interface HeldLease {
  /** the holding process's token (LeaseHolder.holder) */
  holder: string;
  host: string;
  pid: number;
  runId: string | null;
  /** when its holder took it, by the ledger's clock */
  takenAt: string;
  leaseUntil: string;
  /**
   * why it no longer holds (leaseRunOut: its end passed, or lies past any lease) when the asking
   * run did not take it over: this host's clock is off the ledger's (ledgerClock.ts)
   */
  runOut?: string;
}

/** How a lease is asked for: how long, and whether another holder's lease that no longer holds may be taken over. */
export interface LeaseTerms {
  /** --claim-lease: the lease ends this long after the ledger's now */
  leaseSeconds: number;
  /** false when this host's clock is off the ledger's by more than the limit: another's lease is never taken then */
  takeRunOut: boolean;
}

/** The files a run that skipped a starved partner found waiting in its intake, or why it could not list them. */
export type WaitingInIntake = { count: number; names: string[]; oldestAt: string | null } | { error: string };

/** A run's note on the lease it skipped (partner_leases.skipped_at, skipped_by, waiting). */
export interface SkipNote {
  /** the host and pid of the run that skipped it */
  by: string;
  waiting: WaitingInIntake;
}

/**
 * A partner skipped, its lease another's, with no successful run for longer than --max-age (by
 * the ledger's clock): starved. What the run that skipped it says, and exits 1 for.
 */
export interface Starvation {
  /** seconds since its last successful run ended (else its first run started, else its lease was taken) */
  seconds: number;
  maxAgeSeconds: number;
  /** its last successful run, if it ever had one */
  lastSuccessRun: string | null;
  waiting: WaitingInIntake;
}

/** A partner's lease row as `status` and the metrics read it, with the ledger's now to judge it by. */
export interface PartnerLease extends HeldLease {
  ledgerNowMs: number;
  /** the last skip of this lease by a run that found the partner starved, by the ledger's clock */
  skipped: (SkipNote & { at: string }) | null;
}

/**
 * The partner's lease taken (or, on a local ledger, not needed), or who holds it. `replaced`: the
 * lease was another holder's, run out or its process gone, and named this run, which is dead
 * (the only sign another host's run died is a lease it stopped renewing).
 */
export type LeaseAnswer = { taken: true; replaced?: HeldLease & { runId: string } } | { taken: false; heldBy: HeldLease };

/** Why a decided file could not leave the intake: where it was going, the error, and the run that decided its outcome. */
export interface MoveFailure {
  to: Destination;
  reason: string;
  /** the run that decided the outcome (this run, or an earlier one whose move this run retried) */
  decidedBy: string;
  /** what that run decided */
  outcome: 'loaded' | 'skipped' | 'rejected';
  /** the run moving it died, and the file is neither in the intake nor where it was going */
  lost?: true;
}
