import type { EventInContext, LedgerQueries } from '../../ledger/ledger.js';
import type { EventKind, FileRow, LedgerEvent } from '../../ledger/types.js';
import type { AmbiguousUpload, Arrival, StrayUpload } from './arrivals.js';
import type { Upload } from '../../transferLog/transferEvents.js';
import { utcText } from '../../transferLog/logTimes.js';
import { zoneOffsetAt, type Zone } from '../../layout/values/timeZones.js';
import { clockOffsetOf, isOwnMoveInTime, LARGEST_ZONE_GAP_MS, ownMovesOf, type ClockOffset, type OwnMove } from './ownMoves.js';

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
  /** how many ledger events one read brings; default 10,000 */
  eventsPage?: number;
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

const OUTCOME_KINDS = Object.keys(OUTCOME_OF) as EventKind[];
const EVENTS_PAGE = 10_000;

const NO_RECORD_NEEDED: ReadonlySet<NoRecord> = new Set(['known_neighbour', 'ready_marker', 'renamed_before_run', 'cut_short']);

/** The outcomes after which the file stays in the intake for a later run. */
const WAITING: ReadonlySet<ArrivalOutcome> = new Set(['failed', 'not_ready', 'held', 'claimed']);
const ACCOUNTED_AFTER_WAITING: ReadonlySet<AfterWaiting> = new Set(['still_in_intake', 'content_loaded', 'renamed_within']);

interface Sighting {
  event: EventInContext;
  outcome: ArrivalOutcome;
  size: number | null;
  at: number;
  runStartedAt: number;
}

/**
 * A ledger record as a sighting of a size by a run: an event without a hash (not ready, ignored,
 * a file that could not be read) says its size; one with a hash has it from its (name, bytes) row.
 */
function sightingOf(event: EventInContext): Sighting | null {
  const outcome = OUTCOME_OF[event.event];
  if (!outcome) return null;
  // a name that is not UTF-8 reaches a run with U+FFFD in it, and cannot be opened by that name (a
  // local folder lists it as 0 bytes): its `ignored` record vouches for the name alone, decoded as
  // the log's name is, never for a size
  const unreachable = event.event === 'ignored' && event.name.includes('\uFFFD');
  const size = unreachable ? null : typeof event.details.size === 'number' ? event.details.size : event.fileSize;
  const at = Date.parse(event.at);
  return { event, outcome, size, at, runStartedAt: event.runStartedAt ? Date.parse(event.runStartedAt) : at };
}

/**
 * A record as the account keeps it until the end, which may be a million of them: the strings
 * many records share (the partner, the run and its start) held once, and no details object but
 * the one read (empty ones share one).
 */
function keptEvent(event: EventInContext, shared: Map<string, string>): EventInContext {
  const once = <T extends string | null>(text: T): T => {
    if (text === null) return text;
    const known = shared.get(text);
    if (known !== undefined) return known as T;
    shared.set(text, text);
    return text;
  };
  return {
    id: event.id,
    partner: once(event.partner),
    runId: once(event.runId),
    at: event.at,
    event: event.event,
    name: event.name,
    sha256: event.sha256,
    details: Object.keys(event.details).length === 0 ? NO_DETAILS : event.details,
    fileSize: event.fileSize,
    fileArrival: event.fileArrival,
    runStartedAt: once(event.runStartedAt),
  };
}

const NO_DETAILS: Record<string, unknown> = Object.freeze({});

/**
 * A string of one piece: a message made of template parts is a tree of them (several hundred
 * bytes for a line of a hundred characters) until something flattens it, and an audit keeps a
 * million messages. Converting it to a number flattens it in place, and the collector drops the
 * tree.
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
function latestCandidate(list: Arrival[], s: Sighting, slackMs: number, correctionMs: number): Arrival | undefined {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (list[mid]!.at - correctionMs <= s.at + slackMs) low = mid + 1;
    else high = mid;
  }
  for (let i = low - 1; i >= 0; i--) if (couldBe(list[i]!, s, slackMs, correctionMs)) return list[i];
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
function leftAs(final: Sighting): { arrival: string | null; size: number | null } {
  const recorded = typeof final.event.details.arrival === 'string' ? final.event.details.arrival : final.event.fileArrival;
  return { arrival: recorded, size: final.size };
}

/** What became of an upload left waiting: the log's word first (it saw later removals, renames and writes), then the intake as it is now. */
async function afterWaitingOf(
  arrival: Arrival,
  final: Sighting,
  facts: { loadedContent: Map<string, FileRow>; renamedInto: Map<Upload, Arrival[]>; opts: AccountOptions },
): Promise<{ after: AfterWaiting; loadedAs?: FileRow; now?: { size: number; mtimeMs: number }; problem?: string }> {
  const loadedAs = final.event.sha256 ? facts.loadedContent.get(final.event.sha256) : undefined;
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
 * The ledger is read in one query and the arrivals indexed by name: the work grows with the
 * uploads, not with their square.
 */
export async function accountArrivals(
  ledger: LedgerQueries,
  arrivals: Arrival[],
  opts: AccountOptions,
): Promise<{ arrivals: AccountedArrival[]; clockOffset: ClockOffset | null }> {
  const slackMs = opts.clockSlackMs;
  // a name may hold a newline (OpenSSH logs it escaped), never a NUL
  const key = (partner: string, name: string) => `${partner}\0${name}`;
  const byName = new Map<string, Arrival[]>();
  const renamedInto = new Map<Upload, Arrival[]>();
  let earliest = Infinity;
  for (const arrival of arrivals) {
    const nameKey = key(arrival.partner, arrival.name);
    const list = byName.get(nameKey);
    if (list) list.push(arrival);
    else byName.set(nameKey, [arrival]);
    if (arrival.renamedFrom !== null) {
      const same = renamedInto.get(arrival.upload);
      if (same) same.push(arrival);
      else renamedInto.set(arrival.upload, [arrival]);
    }
    if (arrival.at < earliest) earliest = arrival.at;
  }
  for (const list of byName.values()) list.sort((x, y) => x.at - y.at);
  const partners = [...new Set(arrivals.map((a) => a.partner))];

  // what is kept of each arrival's records: its last outcome, and its last claim (only the last word while nothing followed it)
  const matched = new Map<Arrival, { outcome?: Sighting; claim?: Sighting | undefined }>();
  const shared = new Map<string, string>();
  const limit = opts.eventsPage ?? EVENTS_PAGE;
  // the runs' own moves first: where the log shows them tells how its clock stands to the ledger's
  const ownMoves =
    arrivals.length > 0
      ? await ownMovesOf(ledger, byName, key, partners, new Date(earliest - LARGEST_ZONE_GAP_MS - slackMs).toISOString(), limit)
      : new Map<Arrival, OwnMove>();
  const zone = opts.logZone;
  const clockOffset = clockOffsetOf([...ownMoves.values()], slackMs, (utcMs) => (zone ? zoneOffsetAt(zone, utcMs) * 60_000 : 0));
  const correctionMs = clockOffset?.offsetMs ?? 0;
  if (arrivals.length > 0) {
    // no record older than the first upload (on the ledger's clock) less the slack can be of any of them
    const since = new Date(Math.min(earliest, earliest - correctionMs) - slackMs).toISOString();
    // a page at a time: a million uploads' events at once would not fit in memory beside them
    for (let afterId = 0; ;) {
      const events = await ledger.eventsInContextSince(OUTCOME_KINDS, since, partners, { afterId, limit });
      for (const event of events) {
        const list = byName.get(key(event.partner, event.name));
        const sighting = list ? sightingOf(event) : null;
        if (!list || !sighting) continue;
        const latest = latestCandidate(list, sighting, slackMs, correctionMs);
        if (!latest) continue;
        const seen = matched.get(latest) ?? {};
        // an outcome is the last word whatever claim came before or after it: a claim is kept only while there is none
        if (sighting.outcome !== 'claimed') {
          seen.outcome = { ...sighting, event: keptEvent(event, shared) };
          seen.claim = undefined;
        } else if (!seen.outcome) seen.claim = { ...sighting, event: keptEvent(event, shared) };
        matched.set(latest, seen);
      }
      if (events.length < limit) break;
      afterId = events.at(-1)!.id;
    }
  }
  const finalOf = (arrival: Arrival) => {
    const seen = matched.get(arrival);
    return seen?.outcome ?? seen?.claim;
  };
  const lastRunStarts = new Map<string, number>();
  for (const partner of partners) {
    const [last] = await ledger.recentRuns(1, [partner]);
    if (last) lastRunStarts.set(partner, Date.parse(last.startedAt));
  }
  // the contents of the uploads left waiting that were loaded since (under any name): one read for all of them
  const waitingContents = new Set<string>();
  for (const arrival of arrivals) {
    const final = finalOf(arrival);
    if (final && WAITING.has(final.outcome) && final.event.sha256) waitingContents.add(final.event.sha256);
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

  const accounted: AccountedArrival[] = [];
  for (const arrival of arrivals) {
    const own = ownMoves.get(arrival);
    const ownInTime = isOwnMoveInTime(own, correctionMs, slackMs);
    let final = finalOf(arrival);
    matched.delete(arrival); // what is kept of it is in its entry from here on: a million of both need not fit at once
    // a run moved it out: its decision was final whatever the records the log's times put it with
    if (ownInTime && (!final || WAITING.has(final.outcome))) final = await movedOutcome(ledger, own!);
    const dup = final?.event.details.duplicateOf as { name?: unknown; run?: unknown } | undefined;
    const noRecord = final ? null : noRecordOf(arrival, lastRunStarts.get(arrival.partner), correctionMs);
    const since = final && WAITING.has(final.outcome) ? await afterWaitingOf(arrival, final, waitingFacts) : null;
    const afterWaiting = since?.after ?? null;
    // a literal of one shape, its message flattened: the audit keeps one of these per upload of the log
    const entry: AccountedArrival = {
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
      afterWaiting,
      unmatched:
        (noRecord !== null && !NO_RECORD_NEEDED.has(noRecord)) || (afterWaiting !== null && !ACCOUNTED_AFTER_WAITING.has(afterWaiting)),
      message: '',
    };
    entry.message = flat(describe(entry, arrival, since ?? {}, ownInTime ? undefined : own));
    accounted.push(entry);
  }
  return { arrivals: accounted, clockOffset };
}

/** The final outcome a run's move out of the intake stands for: the state of the (name, bytes) it moved. */
const MOVED_AS: Partial<Record<FileRow['state'], ArrivalOutcome>> = { loaded: 'loaded', duplicate: 'skipped', rejected: 'rejected' };

async function movedOutcome(ledger: LedgerQueries, move: OwnMove): Promise<Sighting> {
  const { event } = move;
  const row = event.sha256 ? await ledger.file(event.name, event.sha256) : undefined;
  const at = Date.parse(event.at);
  return {
    event,
    outcome: (row && MOVED_AS[row.state]) ?? 'loaded',
    size: event.fileSize,
    at,
    runStartedAt: event.runStartedAt ? Date.parse(event.runStartedAt) : at,
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
