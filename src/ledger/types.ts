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
  | 'not_ready';

export type RunMode = 'scheduled' | 'manual' | 'reprocess';

/** Who holds a claim: enough to tell, on the same host, whether that process is still alive. */
export interface ClaimOwner {
  host: string;
  pid: number;
  /** the process's start time as the kernel reports it; tells a reused pid from the original */
  startedAt: string;
}

export interface FileRow {
  id: number;
  name: string;
  sha256: string;
  state: FileState;
  runId: string;
  size: number;
  rowCount: number | null;
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

export interface LedgerEvent {
  id: number;
  runId: string | null;
  at: string;
  event: EventKind;
  name: string;
  sha256: string | null;
  details: Record<string, unknown>;
}

export interface RunRow {
  runId: string;
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
  reprocessed: number | null;
  rowCount: number | null;
  exitStatus: number | null;
}

/** The outcomes a run counts: each ready file gets exactly one of these per run. */
export const OUTCOME_EVENTS = ['loaded', 'skipped', 'held', 'rejected', 'failed', 'not_ready'] as const;
export type OutcomeEvent = (typeof OUTCOME_EVENTS)[number];

/** What a run counts, as `runs` keeps it. */
export interface RunCounts {
  loaded: number;
  skipped: number;
  held: number;
  rejected: number;
  failed: number;
  notReady: number;
  rows: number;
  reprocessed?: number;
}
