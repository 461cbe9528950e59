import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type { Destination } from '../destination.js';
import type { EventInContext, LandedMove, MoveIntent } from './ledger.js';
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
export const iso = (value: unknown) =>
  value instanceof Date
    ? value.toISOString()
    : value === null || value === undefined
      ? null
      : // PostgreSQL's `infinity`, which the driver reads as a number
        typeof value === 'number' && !Number.isFinite(value)
        ? value > 0
          ? 'infinity'
          : '-infinity'
        : String(value);
const num = (value: unknown) => (value === null || value === undefined ? null : Number(value));
const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
const eventPartner = (partner: unknown) => (partner === null || partner === undefined ? DEFAULT_PARTNER : String(partner));
const partnerOf = (r: SqlRow) => eventPartner(r.partner);
export const marks = (count: number) => Array.from({ length: count }, () => '?').join(', ');

export function fileRow(sqlRow: SqlRow): FileRow {
  return {
    id: Number(sqlRow.id),
    partner: partnerOf(sqlRow),
    name: String(sqlRow.name),
    sha256: String(sqlRow.sha256),
    contentSha256: text(sqlRow.content_sha256),
    state: sqlRow.state as FileState,
    runId: String(sqlRow.run_id),
    size: Number(sqlRow.size),
    rowCount: num(sqlRow.row_count),
    seenBefore: num(sqlRow.seen_before),
    totals: sqlRow.totals === null || sqlRow.totals === undefined ? null : (JSON.parse(String(sqlRow.totals)) as CheckedTotal[]),
    reason: text(sqlRow.reason),
    ownerHost: text(sqlRow.owner_host),
    ownerPid: num(sqlRow.owner_pid),
    ownerStartedAt: text(sqlRow.owner_started_at),
    leaseUntil: iso(sqlRow.lease_until),
    location: text(sqlRow.location),
    arrival: text(sqlRow.arrival),
    firstSeenAt: iso(sqlRow.first_seen_at)!,
    updatedAt: iso(sqlRow.updated_at)!,
  };
}

export function runRow(sqlRow: SqlRow): RunRow {
  return {
    runId: String(sqlRow.run_id),
    partner: partnerOf(sqlRow),
    status: (text(sqlRow.status) as RunStatus | null) ?? null,
    reason: text(sqlRow.reason),
    mode: sqlRow.mode as RunMode,
    host: String(sqlRow.host),
    pid: Number(sqlRow.pid),
    startedAt: iso(sqlRow.started_at)!,
    endedAt: iso(sqlRow.ended_at),
    loaded: num(sqlRow.loaded),
    skipped: num(sqlRow.skipped),
    held: num(sqlRow.held),
    rejected: num(sqlRow.rejected),
    failed: num(sqlRow.failed),
    notReady: num(sqlRow.not_ready),
    ignored: num(sqlRow.ignored),
    stale: num(sqlRow.stale),
    moveFailed: num(sqlRow.move_failed),
    reprocessed: num(sqlRow.reprocessed),
    rowCount: num(sqlRow.row_count),
    seenBefore: num(sqlRow.seen_before),
    exitStatus: num(sqlRow.exit_status),
    processExitStatus: num(sqlRow.process_exit_status),
    attempts: num(sqlRow.attempts) ?? 1,
  };
}

export function eventRow(sqlRow: SqlRow): LedgerEvent {
  return eventOf(sqlRow.id, sqlRow.partner, sqlRow.run_id, sqlRow.at, sqlRow.event, sqlRow.name, sqlRow.sha256, sqlRow.details);
}

/**
 * An event's columns in the order eventInContextOfArray reads them, for a read of rows as arrays
 * (SqlPort.arrays); `e` is ledger_events. Details of `{}` (nearly every event) come as NULL: no
 * string made for them. `onePartner`: the read is of one partner's events, whose name the caller
 * has; the column is not read (a string per event).
 */
export const eventColumns = (onePartner: boolean) =>
  `e.id, ${onePartner ? 'NULL' : 'e.partner'}, e.run_id, e.at, e.event, e.name, e.sha256, NULLIF(e.details, '{}')`;
export const EVENT_COLUMN_COUNT = 8;
/** where the run id is in such a row */
export const EVENT_RUN_ID = 2;

/**
 * An event from a row of eventColumns followed by its (name, bytes) row's size, with its run's
 * start: one object of one shape per row, never an event copied into another (an audit reads a
 * year's two million of them). `partner`: the one partner the read was of (eventColumns(true)).
 */
export function eventInContextOfArray(
  row: unknown[],
  runStartedAt: (runId: string) => string | null,
  partner: string | undefined,
): EventInContext {
  const runId = text(row[EVENT_RUN_ID]);
  return {
    id: Number(row[0]),
    partner: partner ?? eventPartner(row[1]),
    runId,
    at: iso(row[3])!,
    event: row[4] as EventKind,
    name: String(row[5]),
    sha256: text(row[6]),
    details: row[7] === null ? NO_DETAILS : eventDetails(row[7]),
    fileSize: num(row[EVENT_COLUMN_COUNT]),
    runStartedAt: runId === null ? null : runStartedAt(runId),
  };
}

/** No details: one frozen object for every event that has none (nearly all of them). */
const NO_DETAILS: Record<string, unknown> = Object.freeze({});

/** An event's details: `{}` (nearly every event) without the parser. */
const eventDetails = (details: unknown) =>
  (typeof details === 'string' ? (details === '{}' ? NO_DETAILS : JSON.parse(details)) : details) as Record<string, unknown>;

function eventOf(
  id: unknown,
  partner: unknown,
  runId: unknown,
  at: unknown,
  event: unknown,
  name: unknown,
  sha256: unknown,
  details: unknown,
): LedgerEvent {
  return {
    id: Number(id),
    partner: eventPartner(partner),
    runId: text(runId),
    at: iso(at)!,
    event: event as EventKind,
    name: String(name),
    sha256: text(sha256),
    details: eventDetails(details),
  };
}

export function intentRow(sqlRow: SqlRow): MoveIntent {
  return {
    name: String(sqlRow.name),
    sha256: String(sqlRow.sha256),
    arrival: String(sqlRow.arrival),
    destination: sqlRow.destination as Destination,
    runId: String(sqlRow.run_id),
    at: iso(sqlRow.at)!,
    run: { ended: sqlRow.ended_at !== null && sqlRow.ended_at !== undefined, host: String(sqlRow.host), pid: Number(sqlRow.pid) },
  };
}

export function landedRow(sqlRow: SqlRow): LandedMove {
  return {
    location: String(sqlRow.location),
    name: String(sqlRow.name),
    sha256: String(sqlRow.sha256),
    runId: String(sqlRow.run_id),
    landed: String(sqlRow.landed),
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
  'seen_before',
] as const;

export function runCountValues(runCounts: RunCounts): (number | null)[] {
  return [
    runCounts.loaded,
    runCounts.skipped,
    runCounts.held,
    runCounts.rejected,
    runCounts.failed,
    runCounts.notReady,
    runCounts.ignored,
    runCounts.stale,
    runCounts.moveFailed,
    runCounts.reprocessed ?? null,
    runCounts.rows,
    runCounts.seenBefore,
  ];
}
