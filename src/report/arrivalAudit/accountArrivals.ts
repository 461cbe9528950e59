import type { EventInContext, LedgerQueries } from '../../ledger/ledger.js';
import type { EventKind, FileRow, LedgerEvent } from '../../ledger/types.js';
import type { AmbiguousUpload, Arrival, ArrivedUpload, StrayUpload } from './arrivals.js';
import { exactIsoMs, isoText, utcText } from '../../isoInstants.js';
import { zoneOffsetAt, type Zone } from '../../layout/values/timeZones.js';
import { decidedDetails, DecidedOutcomes, WAITING, type ArrivalOutcome, type Decided } from './decidedOutcomes.js';
import { clockOffsetOf, isOwnMoveInTime, LARGEST_ZONE_GAP_MS, ownMovesOf, type ClockOffset, type OwnMove } from './ownMoves.js';

export type { ArrivalOutcome } from './decidedOutcomes.js';

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

/**
 * What became of an upload whose last outcome leaves it waiting in the intake (failed, not ready,
 * held, a claim): still there as the ledger left it, or its bytes loaded under another name or
 * upload, or renamed to another name the log follows, account for it; the others are unmatched
 * (exit 1): its bytes left, or were written over, before any run loaded them.
 */
export type AfterWaiting =
  | 'still_in_intake'
  | 'content_loaded'
  | 'renamed_within'
  | 'removed'
  | 'renamed_away'
  | 'overwritten'
  | 'not_in_intake'
  | 'changed_in_intake'
  | 'intake_unreadable';

/** An intake as it is now, listed by the audit: each name's size and mtime, or why it could not be listed. */
export type IntakeNow = { entries: Map<string, { size: number; mtimeMs: number }> } | { problem: string };

export interface AccountOptions {
  /**
   * How far the ledger's clock and the log's may disagree, and the log's rounding (a traditional
   * syslog line keeps whole seconds): a ledger record this much earlier than the log's upload may
   * still be of it (--transfer-log-clock-slack).
   */
  clockSlackMs: number;
  /** the partner's intake as it is now: asked once per partner, only when an upload was left waiting */
  intakeNow: (partner: string) => Promise<IntakeNow>;
  /** how many ledger events one read brings; default 2,000 */
  eventsPage?: number;
  /**
   * up to how many names of arrivals without an outcome their claims are read by the index of
   * names, more than that by a walk over the events; default 50,000 (the answer is the same)
   */
  claimNamesByIndex?: number;
  /** the zone the log's times are read in (--transfer-log-time-zone, else this host's): a zone read wrong is told from a clock by it; UTC when absent */
  logZone?: Zone;
}

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
  /** what became of it since, when its last outcome left it waiting in the intake */
  afterWaiting: AfterWaiting | null;
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

/** every outcome but a claim: read first, over the whole ledger since the first upload */
const DECIDING_KINDS = (Object.keys(OUTCOME_OF) as EventKind[]).filter((kind) => kind !== 'claimed');
/**
 * How many names of arrivals still without an outcome are looked up by the index of names for
 * their claims (500 a statement, about 20 µs a name over a year's ledger); more than that, and
 * the claims are read by a walk over the events as the outcomes were (about 2 s for a year's
 * million claims).
 */
const CLAIM_NAMES_BY_INDEX = 50_000;
const NAMES_A_STATEMENT = 500;
/**
 * A page of 2,000: the page lives while it is matched, and a larger one outlives the young
 * generation, is promoted and costs the collector a walk over the whole arrivals' heap each time.
 */
const EVENTS_PAGE = 2_000;

const NO_RECORD_NEEDED: ReadonlySet<NoRecord> = new Set(['known_neighbour', 'ready_marker', 'renamed_before_run', 'cut_short']);

const ACCOUNTED_AFTER_WAITING: ReadonlySet<AfterWaiting> = new Set(['still_in_intake', 'content_loaded', 'renamed_within']);

/** A record of the ledger as a sighting of an arrival: what it decided, and when (ms). */
interface Sighting extends Decided {
  at: number;
  /** `at` where the record's time is written exactly as `toISOString` writes it, else NaN (DecidedOutcomes.set) */
  exactAt: number;
  runStartedAt: number;
}

/**
 * A ledger record as a sighting of a size by a run, written into `into` (one object filled anew
 * for each of a year's two million records: the match reads it, DecidedOutcomes.set copies what it
 * keeps); false for a record that decides nothing. An event without a hash (not ready, ignored, a
 * file that could not be read) says its size; one with a hash has it from its (name, bytes) row.
 */
function sightingOf(event: EventInContext, runStarts: RunStarts, into: Sighting): boolean {
  const outcome = OUTCOME_OF[event.event];
  if (!outcome) return false;
  // a name that is not UTF-8 reaches a run with U+FFFD in it, and cannot be opened by that name (a
  // local folder lists it as 0 bytes): its `ignored` record vouches for the name alone, decoded as
  // the log's name is, never for a size
  const unreachable = event.event === 'ignored' && event.name.includes('\uFFFD');
  const exactAt = exactIsoMs(event.at);
  const at = Number.isNaN(exactAt) ? Date.parse(event.at) : exactAt;
  const read = decidedDetails(outcome, event.details);
  into.outcome = outcome;
  into.size = unreachable ? null : typeof event.details.size === 'number' ? event.details.size : event.fileSize;
  into.runId = event.runId;
  into.recordedAt = event.at;
  into.sha256 = event.sha256;
  into.duplicateOf = read.duplicateOf;
  into.reason = read.reason;
  into.leftAs = read.leftAs;
  into.at = at;
  into.exactAt = exactAt;
  into.runStartedAt = event.runStartedAt ? runStarts.parse(event.runStartedAt) : at;
  return true;
}

/** Runs' start times in milliseconds, each parsed once: a run's thousand events name the same start. */
class RunStarts {
  private readonly parsed = new Map<string, number>();

  parse(startedAt: string): number {
    let ms = this.parsed.get(startedAt);
    if (ms === undefined) {
      ms = Date.parse(startedAt);
      if (this.parsed.size < 100_000) this.parsed.set(startedAt, ms);
    }
    return ms;
  }
}

/**
 * A string of one piece: a message made of template parts is a tree of them (several hundred
 * bytes for a line of a hundred characters) until something flattens it, and the audit keeps the
 * messages of the uploads it cannot account for. Converting it to a number flattens it in place,
 * and the collector drops the tree.
 */
function flat(text: string): string {
  Number(text);
  return text;
}

/**
 * Whether a sighting can be of this arrival: after it came, by a run that began before it left,
 * of its size. `correctionMs`: the offset found between the log's clock and the ledger's, taken
 * off the log's times.
 */
function couldBe(arrival: Arrival, s: Sighting, slackMs: number, correctionMs: number): boolean {
  // a local time in a fall-back's repeated hour may be either instant: the earlier decides
  if (Math.min(arrival.at, arrival.atOtherwise ?? arrival.at) - correctionMs > s.at + slackMs) return false;
  if (arrival.departed && arrival.departed.at - correctionMs + slackMs < s.runStartedAt) return false;
  if (s.size === null) return true;
  return arrival.upload.sizeExact ? s.size === arrival.upload.size : s.size >= arrival.upload.size;
}

/**
 * The latest of one name's arrivals (oldest first) that the sighting can be of: found by a binary
 * search for the last that came before it, then looked at backwards. A name's arrivals follow one
 * another, each gone when the next came, so the look stops within the few that overlap the run.
 */
function latestCandidate(
  arrivals: Arrival[],
  list: number | number[],
  s: Sighting,
  slackMs: number,
  correctionMs: number,
): number | undefined {
  if (typeof list === 'number') return couldBe(arrivals[list]!, s, slackMs, correctionMs) ? list : undefined;
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (arrivals[list[mid]!]!.at - correctionMs <= s.at + slackMs) low = mid + 1;
    else high = mid;
  }
  for (let i = low - 1; i >= 0; i--) if (couldBe(arrivals[list[i]!]!, s, slackMs, correctionMs)) return list[i];
  return undefined;
}

function noRecordOf(arrival: Arrival, lastRunStart: number | undefined, correctionMs: number): NoRecord {
  const { verdict, departed } = arrival;
  if (verdict.kind === 'known') return verdict.reason.startsWith('a ready marker') ? 'ready_marker' : 'known_neighbour';
  // a temporary name renamed within the intake became its final name; renamed out of it, it left unread
  if (verdict.kind === 'not_ready' && departed?.how === 'renamed' && !departed.leftIntake) return 'renamed_before_run';
  if (!arrival.upload.complete) return 'cut_short';
  if (arrival.overwrittenBy) return 'overwritten';
  if (departed) return departed.how === 'removed' ? 'removed_before_run' : 'renamed_away_before_run';
  if (lastRunStart === undefined || lastRunStart < arrival.at - correctionMs) return 'waiting';
  return 'vanished';
}

/** The size:mtime a run left a waiting file in the intake with, where the ledger kept it, else its size. */
function leftAs(final: Decided): { arrival: string | null; size: number | null } {
  return { arrival: final.leftAs, size: final.size };
}

/** What became of an upload left waiting: the log's word first (it saw later removals, renames and writes), then the intake as it is now. */
async function afterWaitingOf(
  arrival: Arrival,
  final: Decided,
  facts: { loadedContent: Map<string, FileRow>; renamedInto: Map<ArrivedUpload, Arrival[]>; opts: AccountOptions },
): Promise<{ after: AfterWaiting; loadedAs?: FileRow; now?: { size: number; mtimeMs: number }; problem?: string }> {
  const loadedAs = final.sha256 ? facts.loadedContent.get(final.sha256) : undefined;
  if (loadedAs) return { after: 'content_loaded', loadedAs };
  if (arrival.overwrittenBy) return { after: 'overwritten' };
  const { departed } = arrival;
  if (departed?.how === 'removed') return { after: 'removed' };
  if (departed) {
    const next = facts.renamedInto.get(arrival.upload)?.some((a) => a !== arrival && a.at === departed.at && a.path === departed.to);
    return { after: next ? 'renamed_within' : 'renamed_away' };
  }
  const intake = await facts.opts.intakeNow(arrival.partner);
  if ('problem' in intake) return { after: 'intake_unreadable', problem: intake.problem };
  const now = intake.entries.get(arrival.name);
  if (!now) return { after: 'not_in_intake' };
  const left = leftAs(final);
  const same = left.arrival !== null ? `${now.size}:${now.mtimeMs}` === left.arrival : left.size === null || left.size === now.size;
  return same ? { after: 'still_in_intake' } : { after: 'changed_in_intake', now };
}

function describe(
  a: Omit<AccountedArrival, 'message'>,
  arrival: Arrival,
  since: { loadedAs?: FileRow; now?: { size: number; mtimeMs: number }; problem?: string },
  outOfTime?: OwnMove,
): string {
  const text = describeArrival(a, arrival, since);
  if (!outOfTime || !a.unmatched) return text;
  // the run's own move at a time the two clocks do not agree on: the log's clock, not the partner, is what to look at
  return `${text} (the ledger recorded run ${outOfTime.event.runId}'s move of it there at ${utcText(Date.parse(outOfTime.event.at))}: the log's clock and the ledger's disagree)`;
}

function describeArrival(
  omit: Omit<AccountedArrival, 'message'>,
  arrival: Arrival,
  since: { loadedAs?: FileRow; now?: { size: number; mtimeMs: number }; problem?: string },
): string {
  const what = `${omit.partner}: ${omit.name} (${omit.size} bytes, ${utcText(arrival.at)}${omit.renamedFrom ? `, renamed from ${omit.renamedFrom}` : ''})`;
  const dup = omit.duplicateOf
    ? ` as a duplicate of ${omit.duplicateOf.name}${omit.duplicateOf.run ? ` (run ${omit.duplicateOf.run})` : ''}`
    : '';
  if (omit.outcome) {
    const last = `${what}: ${omit.outcome.replace('_', ' ')}${dup} by run ${omit.run}`;
    const { departed } = arrival;
    switch (omit.afterWaiting) {
      case null:
        return last;
      case 'still_in_intake':
        return `${last}, still in the intake as that run left it`;
      case 'content_loaded':
        return `${last}; its content is loaded (${since.loadedAs!.name}, run ${since.loadedAs!.runId})`;
      case 'renamed_within':
        return `${last}, then renamed to ${departed!.to} at ${utcText(departed!.at)}`;
      case 'removed':
        return `${last}: UNMATCHED: then removed at ${utcText(departed!.at)} before any run loaded it`;
      case 'renamed_away':
        return `${last}: UNMATCHED: then renamed to ${departed!.to} at ${utcText(departed!.at)}, out of the intake, before any run loaded it`;
      case 'overwritten':
        return `${last}: UNMATCHED: then overwritten by another upload under its name at ${utcText(arrival.overwrittenBy!.at)} before any run loaded it`;
      case 'not_in_intake':
        return `${last}: UNMATCHED: no longer in the intake, and no run loaded it`;
      case 'changed_in_intake':
        return `${last}: UNMATCHED: the intake holds other bytes under its name now (${since.now!.size} bytes, modified ${utcText(since.now!.mtimeMs)}), and no run loaded the ones it left there`;
      case 'intake_unreadable':
        return `${last}: UNMATCHED: whether it is still in the intake cannot be checked: ${since.problem}`;
    }
  }
  switch (omit.noRecord) {
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
 * arrival's outcome is its last record's. An arrival no record is of is named, and why; so is one
 * whose last outcome left it waiting in the intake and that is no longer there as it was left.
 * The ledger is read a page at a time and the arrivals indexed by name: the work grows with the
 * uploads, not with their square. Each arrival is handed to `emit` once accounted, in the list's
 * order, and kept no longer: only its last record is held until then, in typed arrays
 * (decidedOutcomes.ts).
 */
export async function accountArrivals(
  ledger: LedgerQueries,
  arrivals: Arrival[],
  opts: AccountOptions,
  emit: (accounted: AccountedArrival) => void,
): Promise<{ clockOffset: ClockOffset | null }> {
  const slackMs = opts.clockSlackMs;
  // each partner's arrivals by name, as places in the list (one place, or several oldest first):
  // the name is the arrival's own string, never a new key of partner and name
  const byPartner = new Map<string, Map<string, number | number[]>>();
  const renamedInto = new Map<ArrivedUpload, Arrival[]>();
  /** 1 where an arrival is the only one of its partner's name: its place is what the index gives for the name */
  const alone = new Uint8Array(arrivals.length);
  let earliest = Infinity;
  arrivals.forEach((arrival, index) => {
    let byName = byPartner.get(arrival.partner);
    if (!byName) byPartner.set(arrival.partner, (byName = new Map<string, number | number[]>()));
    const list = byName.get(arrival.name);
    if (list === undefined) {
      byName.set(arrival.name, index);
      alone[index] = 1;
    } else if (typeof list === 'number') {
      byName.set(arrival.name, [list, index]);
      alone[list] = 0;
    } else list.push(index);
    if (arrival.renamedFrom !== null) {
      const same = renamedInto.get(arrival.upload);
      if (same) same.push(arrival);
      else renamedInto.set(arrival.upload, [arrival]);
    }
    if (arrival.at < earliest) earliest = arrival.at;
  });
  for (const byName of byPartner.values()) {
    for (const list of byName.values()) if (typeof list !== 'number') list.sort((x, y) => arrivals[x]!.at - arrivals[y]!.at);
  }
  const partners = [...byPartner.keys()];
  const named = (partner: string, name: string): Arrival[] => {
    const list = byPartner.get(partner)?.get(name);
    if (list === undefined) return [];
    return typeof list === 'number' ? [arrivals[list]!] : list.map((index) => arrivals[index]!);
  };

  const limit = opts.eventsPage ?? EVENTS_PAGE;
  // the runs' own moves first: where the log shows them tells how its clock stands to the ledger's
  const ownMoves =
    arrivals.length > 0
      ? await ownMovesOf(ledger, named, partners, new Date(earliest - LARGEST_ZONE_GAP_MS - slackMs).toISOString(), limit)
      : new Map<Arrival, OwnMove>();
  const zone = opts.logZone;
  const clockOffset = clockOffsetOf([...ownMoves.values()], slackMs, (utcMs) => (zone ? zoneOffsetAt(zone, utcMs) * 60_000 : 0));
  const correctionMs = clockOffset?.offsetMs ?? 0;
  // each arrival's last record: an outcome is the last word whatever claim came before or after it, a claim only while there is none
  const decided = new DecidedOutcomes(arrivals.length);
  if (arrivals.length > 0) {
    // no record older than the first upload (on the ledger's clock) less the slack can be of any of them
    const since = new Date(Math.min(earliest, earliest - correctionMs) - slackMs).toISOString();
    const runStarts = new RunStarts();
    const sighting: Sighting = {
      outcome: 'loaded',
      size: null,
      runId: null,
      recordedAt: '',
      sha256: null,
      duplicateOf: null,
      reason: null,
      leftAs: null,
      at: 0,
      exactAt: 0,
      runStartedAt: 0,
    };
    let partnerNamed: string | null = null;
    let partnerNames: Map<string, number | number[]> | undefined;
    // the arrival after the one the last record was of: the records come in about the arrivals' order
    let next = 0;
    // a page at a time: a million uploads' events at once would not fit in memory beside them
    const match = async (kinds: EventKind[], names?: readonly string[]) => {
      for (let afterId = 0; ;) {
        const events = await ledger.eventsInContextSince(kinds, since, partners, { afterId, limit }, names);
        for (const event of events) {
          // nearly every event is of the partner of the one before
          if (event.partner !== partnerNamed) [partnerNamed, partnerNames] = [event.partner, byPartner.get(event.partner)];
          // the next arrival, where it is the one of the record's partner and name (what the index
          // would give): no look-up among a million names
          const guess = arrivals[next];
          const list =
            guess !== undefined && alone[next] === 1 && guess.name === event.name && guess.partner === event.partner
              ? next
              : partnerNames?.get(event.name);
          if (typeof list === 'number') next = list + 1;
          if (list === undefined || !sightingOf(event, runStarts, sighting)) continue;
          const latest = latestCandidate(arrivals, list, sighting, slackMs, correctionMs);
          if (latest === undefined) continue;
          const before = decided.outcomeOf(latest);
          if (sighting.outcome !== 'claimed' || before === undefined || before === 'claimed')
            decided.set(latest, sighting, sighting.exactAt);
        }
        if (events.length < limit) return;
        afterId = events.at(-1)!.id;
      }
    };
    // An arrival's last outcome is the last word whatever claims came before or after it, and its
    // last claim only where it has none: the outcomes first (the later of two for one arrival
    // wins, as read by id), then the claims of the names of the arrivals still without one (in
    // a year's audit nearly none: half the ledger's events, a million claims, are not read).
    await match(DECIDING_KINDS);
    const open = new Set<string>();
    for (let index = 0; index < arrivals.length; index++) if (decided.outcomeOf(index) === undefined) open.add(arrivals[index]!.name);
    if (open.size > (opts.claimNamesByIndex ?? CLAIM_NAMES_BY_INDEX)) await match(['claimed']);
    else {
      const names = [...open];
      // a name's claims are all in one statement's answer, read by id: its later claim wins, as before
      for (let at = 0; at < names.length; at += NAMES_A_STATEMENT) await match(['claimed'], names.slice(at, at + NAMES_A_STATEMENT));
    }
  }
  const lastRunStarts = new Map<string, number>();
  for (const partner of partners) {
    const [last] = await ledger.recentRuns(1, [partner]);
    if (last) lastRunStarts.set(partner, Date.parse(last.startedAt));
  }
  // the contents of the uploads left waiting that were loaded since (under any name): one read for
  // all of them; and what their (name, bytes) rows say they were left as, where their records do not
  const waitingContents = new Set<string>();
  const rowsAsked: { name: string; sha256: string }[] = [];
  const askedOf: number[] = [];
  for (let index = 0; index < arrivals.length; index++) {
    const outcome = decided.outcomeOf(index);
    if (outcome === undefined || !WAITING.has(outcome)) continue;
    const { sha256, leftAs } = decided.get(index)!;
    if (!sha256) continue;
    waitingContents.add(sha256);
    if (leftAs === null) {
      rowsAsked.push({ name: arrivals[index]!.name, sha256 });
      askedOf.push(index);
    }
  }
  if (rowsAsked.length > 0) {
    const rowArrival = new Map<string, Map<string, string>>();
    for (const row of await ledger.fileArrivals(rowsAsked)) {
      let named = rowArrival.get(row.sha256);
      if (!named) rowArrival.set(row.sha256, (named = new Map<string, string>()));
      named.set(row.name, row.arrival);
    }
    rowsAsked.forEach((row, i) => {
      const arrival = rowArrival.get(row.sha256)?.get(row.name);
      if (arrival !== undefined) decided.leaveAs(askedOf[i]!, arrival);
    });
  }
  const loadedContent = new Map<string, FileRow>();
  for (const row of await ledger.loadedContents([...waitingContents])) {
    loadedContent.set(row.sha256, row);
    if (row.contentSha256) loadedContent.set(row.contentSha256, row);
  }
  const intakes = new Map<string, Promise<IntakeNow>>();
  const intakeNow = (partner: string) => {
    let listing = intakes.get(partner);
    if (!listing) intakes.set(partner, (listing = opts.intakeNow(partner)));
    return listing;
  };
  const waitingFacts = { loadedContent, renamedInto, opts: { ...opts, intakeNow } };

  for (let index = 0; index < arrivals.length; index++) {
    const arrival = arrivals[index]!;
    const own = ownMoves.get(arrival);
    const ownInTime = isOwnMoveInTime(own, correctionMs, slackMs);
    let final = decided.get(index);
    // a run moved it out: its decision was final whatever the records the log's times put it with
    if (ownInTime && (!final || WAITING.has(final.outcome))) final = await movedOutcome(ledger, own!);
    const noRecord = final ? null : noRecordOf(arrival, lastRunStarts.get(arrival.partner), correctionMs);
    const since = final && WAITING.has(final.outcome) ? await afterWaitingOf(arrival, final, waitingFacts) : null;
    const afterWaiting = since?.after ?? null;
    const entry: AccountedArrival = {
      partner: arrival.partner,
      name: arrival.name,
      path: arrival.path,
      at: isoText(arrival.at),
      size: arrival.upload.size,
      user: arrival.upload.user,
      renamedFrom: arrival.renamedFrom,
      log: { file: arrival.upload.logFile, line: arrival.upload.logLine },
      outcome: final?.outcome ?? null,
      run: final?.runId ?? null,
      recordedAt: final?.recordedAt ?? null,
      sha256: final?.sha256 ?? null,
      duplicateOf: final?.duplicateOf ?? null,
      reason: final?.reason ?? null,
      noRecord,
      afterWaiting,
      unmatched:
        (noRecord !== null && !NO_RECORD_NEEDED.has(noRecord)) || (afterWaiting !== null && !ACCOUNTED_AFTER_WAITING.has(afterWaiting)),
      message: '',
    };
    entry.message = describe(entry, arrival, since ?? {}, ownInTime ? undefined : own);
    // one kept (an unmatched one, a discrepancy) is one string, never a tree of template parts
    if (entry.unmatched) flat(entry.message);
    emit(entry);
  }
  return { clockOffset };
}

/** The final outcome a run's move out of the intake stands for: the state of the (name, bytes) it moved. */
const MOVED_AS: Partial<Record<FileRow['state'], ArrivalOutcome>> = { loaded: 'loaded', duplicate: 'skipped', rejected: 'rejected' };

async function movedOutcome(ledger: LedgerQueries, move: OwnMove): Promise<Decided> {
  const { event } = move;
  const row = event.sha256 ? await ledger.file(event.name, event.sha256) : undefined;
  const outcome = (row && MOVED_AS[row.state]) ?? 'loaded';
  return {
    outcome,
    size: event.fileSize,
    runId: event.runId,
    recordedAt: event.at,
    sha256: event.sha256,
    ...decidedDetails(outcome, event.details),
  };
}

/** A stray upload, in the same words. */
export function strayLine(stray: StrayUpload): string {
  return `${stray.path} (${stray.upload.size} bytes, ${utcText(stray.upload.at)}): into no intake a run reads`;
}

/** An upload the log does not tie to one partner, in the same words, with what tells them apart. */
export function ambiguousLine(upload: AmbiguousUpload): string {
  const who = upload.upload.user === null ? 'a session whose login the log does not name' : `login ${upload.upload.user}`;
  const where = upload.relativePath
    ? `a path without a leading "/", sent by ${who}, which is no partner's (--transfer-log-user) while ${upload.partners.join(', ')} read this log`
    : `a path that is the intake of ${upload.partners.join(' and ')} (each from its own --transfer-log-root), sent by ${who}, which is not one of theirs alone (--transfer-log-user)`;
  return `${upload.path} (${upload.upload.size} bytes, ${utcText(upload.at)}): AMBIGUOUS: ${where}: whose upload it is cannot be told; set each partner's "transferLogUser" to the login it uploads as`;
}
