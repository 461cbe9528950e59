import type { Ledger } from '../../ledger/ledger.js';
import type { LedgerEvent } from '../../ledger/types.js';
import type { Arrival, StrayUpload } from './arrivals.js';
import { utcText } from './logTimes.js';

/**
 * How far the ledger's clock and the log's may disagree, and the log's rounding (a traditional
 * syslog line keeps whole seconds): a ledger record this much earlier than the log's upload may
 * still be of it.
 */
export const CLOCK_SLACK_MS = 2000;

/** What the ledger did with an arrival, as its last outcome event says. */
export type ArrivalOutcome = 'loaded' | 'skipped' | 'held' | 'rejected' | 'failed' | 'not_ready' | 'ignored' | 'claimed';

/**
 * Why an arrival has no ledger outcome. `known_neighbour`, `ready_marker`, `renamed_before_run`
 * and `cut_short` need none; the others are unmatched (exit 1).
 */
export type NoRecord =
  | 'known_neighbour'
  | 'ready_marker'
  | 'renamed_before_run'
  | 'cut_short'
  | 'overwritten'
  | 'removed_before_run'
  | 'renamed_away_before_run'
  | 'waiting'
  | 'vanished';

export interface AccountedArrival {
  partner: string;
  name: string;
  /** the path as the log has it (the upload's own path, or where a rename took it) */
  path: string;
  /** ISO time the upload finished, or the rename that brought it under this name */
  at: string;
  size: number;
  user: string | null;
  renamedFrom: string | null;
  log: { file: string; line: number };
  /** what the ledger did with it, or null when it has no record of it */
  outcome: ArrivalOutcome | null;
  /** the run of that outcome, when it was recorded, the content hash, the file it duplicates */
  run: string | null;
  recordedAt: string | null;
  sha256: string | null;
  duplicateOf: { name: string; run: string | null } | null;
  reason: string | null;
  /** why it has no ledger record, when it has none */
  noRecord: NoRecord | null;
  /** true when it counts against the audit: an upload nobody accounted for */
  unmatched: boolean;
  /** one line for a person */
  message: string;
}

const OUTCOME_OF: Partial<Record<LedgerEvent['event'], ArrivalOutcome>> = {
  loaded: 'loaded',
  recovered: 'loaded',
  skipped: 'skipped',
  held: 'held',
  rejected: 'rejected',
  failed: 'failed',
  not_ready: 'not_ready',
  ignored: 'ignored',
  claimed: 'claimed',
};

const NO_RECORD_NEEDED: ReadonlySet<NoRecord> = new Set(['known_neighbour', 'ready_marker', 'renamed_before_run', 'cut_short']);

interface Sighting {
  event: LedgerEvent;
  outcome: ArrivalOutcome;
  size: number | null;
  runStartedAt: number;
}

/**
 * The ledger's records of one partner's name, each as a sighting of a size by a run: an event
 * without a hash (not ready, ignored, a file that could not be read) says its size; one with a
 * hash has it from its (name, bytes) row.
 */
async function sightings(ledger: Ledger, partner: string, name: string, runStarts: Map<string, number>): Promise<Sighting[]> {
  const out: Sighting[] = [];
  for (const event of await ledger.eventsFor(name)) {
    const outcome = OUTCOME_OF[event.event];
    if (!outcome || event.name !== name || event.partner !== partner) continue;
    let size = typeof event.details.size === 'number' ? event.details.size : null;
    if (size === null && event.sha256) size = (await ledger.file(name, event.sha256))?.size ?? null;
    let started = event.runId ? runStarts.get(event.runId) : undefined;
    if (event.runId && started === undefined) {
      const run = await ledger.run(event.runId);
      started = run ? Date.parse(run.startedAt) : Date.parse(event.at);
      runStarts.set(event.runId, started);
    }
    out.push({ event, outcome, size, runStartedAt: started ?? Date.parse(event.at) });
  }
  return out;
}

/** Whether a sighting can be of this arrival: after it came, by a run that began before it left, of its size. */
function couldBe(arrival: Arrival, s: Sighting): boolean {
  const at = Date.parse(s.event.at);
  // a local time in a fall-back's repeated hour may be either instant: the earlier decides
  if (Math.min(arrival.at, arrival.atOtherwise ?? arrival.at) > at + CLOCK_SLACK_MS) return false;
  if (arrival.departed && arrival.departed.at + CLOCK_SLACK_MS < s.runStartedAt) return false;
  if (s.size === null) return true;
  return arrival.upload.sizeExact ? s.size === arrival.upload.size : s.size >= arrival.upload.size;
}

function noRecordOf(arrival: Arrival, lastRunStart: number | undefined): NoRecord {
  const { verdict, departed } = arrival;
  if (verdict.kind === 'known') return verdict.reason.startsWith('a ready marker') ? 'ready_marker' : 'known_neighbour';
  // a temporary name renamed within the intake became its final name; renamed out of it, it left unread
  if (verdict.kind === 'not_ready' && departed?.how === 'renamed' && !departed.leftIntake) return 'renamed_before_run';
  if (!arrival.upload.complete) return 'cut_short';
  if (arrival.overwrittenBy) return 'overwritten';
  if (departed) return departed.how === 'removed' ? 'removed_before_run' : 'renamed_away_before_run';
  if (lastRunStart === undefined || lastRunStart < arrival.at) return 'waiting';
  return 'vanished';
}

function describe(a: Omit<AccountedArrival, 'message'>, arrival: Arrival): string {
  const what = `${a.partner}: ${a.name} (${a.size} bytes, ${utcText(arrival.at)}${a.renamedFrom ? `, renamed from ${a.renamedFrom}` : ''})`;
  const dup = a.duplicateOf ? ` as a duplicate of ${a.duplicateOf.name}${a.duplicateOf.run ? ` (run ${a.duplicateOf.run})` : ''}` : '';
  if (a.outcome) return `${what}: ${a.outcome.replace('_', ' ')}${dup} by run ${a.run}`;
  switch (a.noRecord) {
    case 'known_neighbour':
      return `${what}: a known neighbour (--ignore), never counted`;
    case 'ready_marker':
      return `${what}: a ready marker, moved with its file`;
    case 'renamed_before_run':
      return `${what}: a temporary name, renamed to ${arrival.departed?.to ?? '?'} before a run saw it`;
    case 'cut_short':
      return `${what}: an upload the connection cut short, never seen by a run`;
    case 'overwritten':
      return `${what}: UNMATCHED: overwritten by another upload under its name at ${utcText(arrival.overwrittenBy!.at)} before a run read it`;
    case 'removed_before_run':
      return `${what}: UNMATCHED: removed at ${utcText(arrival.departed!.at)} before a run read it`;
    case 'renamed_away_before_run':
      return `${what}: UNMATCHED: renamed to ${arrival.departed!.to} at ${utcText(arrival.departed!.at)} before a run read it`;
    case 'waiting':
      return `${what}: UNMATCHED: no run has started since it arrived (waiting for the next run)`;
    default:
      return `${what}: UNMATCHED: no ledger record of it, and the log does not say where it went`;
  }
}

/**
 * Matches every arrival to the ledger's records of its partner and name: each record goes to the
 * latest arrival it can be of (after it, of its size, not gone before that run began), and an
 * arrival's outcome is its last record's. An arrival no record is of is named, and why.
 */
export async function accountArrivals(ledger: Ledger, arrivals: Arrival[]): Promise<AccountedArrival[]> {
  const runStarts = new Map<string, number>();
  const matched = new Map<Arrival, Sighting[]>();
  const byName = new Map<string, Arrival[]>();
  for (const a of arrivals) {
    // a name may hold a newline (OpenSSH logs it escaped), never a NUL
    const k = `${a.partner}\0${a.name}`;
    byName.set(k, [...(byName.get(k) ?? []), a]);
  }
  for (const [k, list] of byName) {
    const [partner, name] = k.split('\0') as [string, string];
    for (const s of await sightings(ledger, partner, name, runStarts)) {
      const candidates = list.filter((a) => couldBe(a, s));
      const latest = candidates.reduce<Arrival | undefined>((best, a) => (!best || a.at >= best.at ? a : best), undefined);
      if (latest) matched.set(latest, [...(matched.get(latest) ?? []), s]);
    }
  }
  const lastRunStarts = new Map<string, number>();
  for (const partner of new Set(arrivals.map((a) => a.partner))) {
    const [last] = await ledger.recentRuns(1, [partner]);
    if (last) lastRunStarts.set(partner, Date.parse(last.startedAt));
  }
  return arrivals.map((arrival) => {
    const seen = matched.get(arrival) ?? [];
    // a claim is only the last word while nothing followed it
    const final = [...seen].reverse().find((s) => s.outcome !== 'claimed') ?? seen.at(-1);
    const dup = final?.event.details.duplicateOf as { name?: unknown; run?: unknown } | undefined;
    const noRecord = final ? null : noRecordOf(arrival, lastRunStarts.get(arrival.partner));
    const accounted: Omit<AccountedArrival, 'message'> = {
      partner: arrival.partner,
      name: arrival.name,
      path: arrival.path,
      at: new Date(arrival.at).toISOString(),
      size: arrival.upload.size,
      user: arrival.upload.user,
      renamedFrom: arrival.renamedFrom,
      log: { file: arrival.upload.place.file, line: arrival.upload.place.line },
      outcome: final?.outcome ?? null,
      run: final?.event.runId ?? null,
      recordedAt: final?.event.at ?? null,
      sha256: final?.event.sha256 ?? null,
      duplicateOf: dup && typeof dup.name === 'string' ? { name: dup.name, run: typeof dup.run === 'string' ? dup.run : null } : null,
      reason: final && typeof final.event.details.reason === 'string' ? final.event.details.reason : null,
      noRecord,
      unmatched: noRecord !== null && !NO_RECORD_NEEDED.has(noRecord),
    };
    return { ...accounted, message: describe(accounted, arrival) };
  });
}

/** A stray upload, in the same words. */
export function strayLine(stray: StrayUpload): string {
  return `${stray.path} (${stray.upload.size} bytes, ${utcText(stray.upload.at)}): into no intake a run reads`;
}
