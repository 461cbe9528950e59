import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type { Destination } from '../destination.js';
import type { LandedMove, MoveIntent } from './ledger.js';
import type { SqlRow } from './sqlPort.js';
import {
  DEFAULT_PARTNER,
  type EventKind,
  type FileRow,
  type FileState,
  type LedgerEvent,
  type RunCounts,
  type RunMode,
  type RunRow,
  type RunStatus,
} from './types.js';

/** Rows as either store's driver returns them, decoded: a time may be a Date or text, a count a string, JSON text or an object. */
export const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? null : String(v));
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
const partnerOf = (r: SqlRow) => (r.partner === null || r.partner === undefined ? DEFAULT_PARTNER : String(r.partner));
export const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export function fileRow(r: SqlRow): FileRow {
  return {
    id: Number(r.id),
    partner: partnerOf(r),
    name: String(r.name),
    sha256: String(r.sha256),
    contentSha256: text(r.content_sha256),
    state: r.state as FileState,
    runId: String(r.run_id),
    size: Number(r.size),
    rowCount: num(r.row_count),
    totals: r.totals === null || r.totals === undefined ? null : (JSON.parse(String(r.totals)) as CheckedTotal[]),
    reason: text(r.reason),
    ownerHost: text(r.owner_host),
    ownerPid: num(r.owner_pid),
    ownerStartedAt: text(r.owner_started_at),
    leaseUntil: iso(r.lease_until),
    location: text(r.location),
    arrival: text(r.arrival),
    firstSeenAt: iso(r.first_seen_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

export function runRow(r: SqlRow): RunRow {
  return {
    runId: String(r.run_id),
    partner: partnerOf(r),
    status: (text(r.status) as RunStatus | null) ?? null,
    reason: text(r.reason),
    mode: r.mode as RunMode,
    host: String(r.host),
    pid: Number(r.pid),
    startedAt: iso(r.started_at)!,
    endedAt: iso(r.ended_at),
    loaded: num(r.loaded),
    skipped: num(r.skipped),
    held: num(r.held),
    rejected: num(r.rejected),
    failed: num(r.failed),
    notReady: num(r.not_ready),
    ignored: num(r.ignored),
    stale: num(r.stale),
    moveFailed: num(r.move_failed),
    reprocessed: num(r.reprocessed),
    rowCount: num(r.row_count),
    exitStatus: num(r.exit_status),
    processExitStatus: num(r.process_exit_status),
  };
}

export function eventRow(r: SqlRow): LedgerEvent {
  return {
    id: Number(r.id),
    partner: partnerOf(r),
    runId: text(r.run_id),
    at: iso(r.at)!,
    event: r.event as EventKind,
    name: String(r.name),
    sha256: text(r.sha256),
    details: (typeof r.details === 'string' ? JSON.parse(r.details) : r.details) as Record<string, unknown>,
  };
}

export function intentRow(r: SqlRow): MoveIntent {
  return {
    name: String(r.name),
    sha256: String(r.sha256),
    arrival: String(r.arrival),
    destination: r.destination as Destination,
    runId: String(r.run_id),
    at: iso(r.at)!,
    run: { ended: r.ended_at !== null && r.ended_at !== undefined, host: String(r.host), pid: Number(r.pid) },
  };
}

export function landedRow(r: SqlRow): LandedMove {
  return {
    location: String(r.location),
    name: String(r.name),
    sha256: String(r.sha256),
    runId: String(r.run_id),
    landed: String(r.landed),
  };
}

/** The `runs` columns of a run's counts, in the order runCountValues gives them. */
export const RUN_COUNT_COLUMNS = [
  'loaded',
  'skipped',
  'held',
  'rejected',
  'failed',
  'not_ready',
  'ignored',
  'stale',
  'move_failed',
  'reprocessed',
  'row_count',
] as const;

export function runCountValues(c: RunCounts): (number | null)[] {
  return [c.loaded, c.skipped, c.held, c.rejected, c.failed, c.notReady, c.ignored, c.stale, c.moveFailed, c.reprocessed ?? null, c.rows];
}
