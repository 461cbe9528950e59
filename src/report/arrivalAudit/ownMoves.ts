import { formatDuration } from '../../durations.js';
import { offsetText } from '../../layout/values/timeZones.js';
import type { EventInContext, LedgerQueries } from '../../ledger/ledger.js';
import type { Arrival } from './arrivals.js';

/** A run's own move of an arrival out of the intake: the ledger's `moved` record of the rename the log shows. */
export interface OwnMove {
  event: EventInContext;
  /** the log's time of the rename less the ledger's time of its record */
  offsetMs: number;
}

/**
 * A systematic disagreement between the log's times and the ledger's, found from the runs' own
 * moves (the one kind of line both record: the log's rename and the ledger's move). `zone`: a
 * whole number of quarter hours, the mark of times read in another zone than they were written
 * in; `skew`: the server's clock and the ledger host's disagree.
 */
export interface ClockOffset {
  kind: 'zone' | 'skew';
  /** the log's times less the ledger's: positive when the log runs ahead */
  offsetMs: number;
  /** a zone: the one the log's times were written in, as its offset from UTC (the zone they were read in, moved by the offset) */
  writtenInMs?: number;
  /** how many of the runs' moves the log shows at that offset, of how many it shows at all */
  moves: number;
  of: number;
}

const QUARTER_HOUR = 15 * 60_000;
const HOUR = 3_600_000;
/** Zones lie within UTC-12 and UTC+14 (Baker Island to Kiritimati): no two disagree by more. */
const EARLIEST_ZONE_MS = -12 * HOUR;
const LATEST_ZONE_MS = 14 * HOUR;
export const LARGEST_ZONE_GAP_MS = LATEST_ZONE_MS - EARLIEST_ZONE_MS;

/** Whether a move's rename falls where its record says: after its run began, before the move was recorded (both within the slack). */
function inTime(pair: OwnMove, correctionMs: number, slackMs: number): boolean {
  const renamed = Date.parse(pair.event.at) + pair.offsetMs - correctionMs;
  const runStarted = pair.event.runStartedAt ? Date.parse(pair.event.runStartedAt) : Date.parse(pair.event.at);
  return renamed >= runStarted - slackMs && renamed <= Date.parse(pair.event.at) + slackMs;
}

/**
 * The offset at which most of the runs' moves the log shows fall in time, when it is not zero:
 * more than half of them agree with one another (within the slack) at an offset that puts them
 * out of time. A zone read wrong moves every time by the two zones' difference: a quarter hour's
 * multiple (within the slack) that puts the zone the log was written in (the one it was read in,
 * `readZoneMsAt`, moved by the offset) within UTC-12 and UTC+14 is a zone, and is taken exactly;
 * any other offset (a server clock a few minutes off, or a year) is a clock.
 */
export function clockOffsetOf(pairs: OwnMove[], slackMs: number, readZoneMsAt: (utcMs: number) => number = () => 0): ClockOffset | null {
  if (pairs.length === 0) return null;
  const late = pairs.filter((p) => !inTime(p, 0, slackMs)).sort((a, b) => a.offsetMs - b.offsetMs);
  if (late.length * 2 <= pairs.length) return null;
  const middle = late[Math.floor(late.length / 2)]!;
  const median = middle.offsetMs;
  const quarters = Math.round(median / QUARTER_HOUR) * QUARTER_HOUR;
  const writtenInMs = readZoneMsAt(Date.parse(middle.event.at)) + quarters;
  const zone = quarters !== 0 && Math.abs(median - quarters) <= slackMs && writtenInMs >= EARLIEST_ZONE_MS && writtenInMs <= LATEST_ZONE_MS;
  const offsetMs = zone ? quarters : Math.round(median / 1000) * 1000;
  const moves = pairs.filter((p) => inTime(p, offsetMs, slackMs)).length;
  if (moves * 2 <= pairs.length) return null;
  return zone ? { kind: 'zone', offsetMs, writtenInMs, moves, of: pairs.length } : { kind: 'skew', offsetMs, moves, of: pairs.length };
}

/** A clock off by more than this is set right, never allowed for with --transfer-log-clock-slack. */
const SLACK_AT_MOST_MS = 15 * 60_000;

/** The finding for a person, naming the option that fixes it. `zone`: the zone the log is read in now. */
export function clockOffsetMessage(offset: ClockOffset, zone: string): string {
  const way = offset.offsetMs > 0 ? 'ahead of' : 'behind';
  // `1 h`, `5 h 30 min`, `2 min 5 s`; from three days on, days: `365 d`
  const span = formatDuration(offset.offsetMs / 1000, { spaced: true, largest: 'd', daysFrom: 72 * 3600 });
  const seen = `${offset.moves} of the ${offset.of} moves the runs recorded are logged ${span} ${offset.offsetMs > 0 ? 'later' : 'earlier'} than the ledger has them`;
  if (offset.kind === 'zone') {
    const writtenIn = offset.writtenInMs === undefined ? '' : ` (they fit UTC${offsetText(Math.round(offset.writtenInMs / 60_000))})`;
    return `the transfer log runs ${span} ${way} the ledger (${seen}): its times are read in the wrong zone (${zone}); set --transfer-log-time-zone to the zone the server writes its log in${writtenIn}. The uploads were matched at that offset meanwhile`;
  }
  const slack = Math.ceil(Math.abs(offset.offsetMs) / 1000) + 2;
  const fix =
    Math.abs(offset.offsetMs) <= SLACK_AT_MOST_MS
      ? `set the server's clock right (NTP), or --transfer-log-clock-slack to at least ${slack}s`
      : "a clock this far off is set right, not allowed for: set the server's clock right (NTP)";
  return `the transfer log runs ${span} ${way} the ledger (${seen}): the SFTP server's clock and this host's disagree; ${fix}. The uploads were matched at that offset meanwhile`;
}

/**
 * The runs' own moves the log shows: each `moved` record of the ledger is paired with the rename
 * of an arrival of its partner and name that took it to the very place the record names, of the
 * record's size, the one nearest in time. Read a page at a time, from `since` (which reaches a
 * zone's gap before the first upload: an offset is found only if its moves are read).
 */
export async function ownMovesOf(
  ledger: LedgerQueries,
  named: (partner: string, name: string) => Arrival[],
  partners: string[],
  since: string,
  limit: number,
): Promise<Map<Arrival, OwnMove>> {
  const pairs = new Map<Arrival, OwnMove>();
  for (let afterId = 0; ;) {
    const events = await ledger.eventsInContextSince(['moved'], since, partners, { afterId, limit });
    for (const event of events) {
      const to = event.details.to;
      if (typeof to !== 'string') continue;
      const recordedAt = Date.parse(event.at);
      let nearest: { arrival: Arrival; offsetMs: number } | undefined;
      for (const arrival of named(event.partner, event.name)) {
        const departed = arrival.departed;
        if (departed?.how !== 'renamed' || departed.location !== to) continue;
        if (arrival.sizeKnown && event.fileSize !== null && arrival.upload.size !== event.fileSize) continue;
        const offsetMs = departed.at - recordedAt;
        if (!nearest || Math.abs(offsetMs) < Math.abs(nearest.offsetMs)) nearest = { arrival, offsetMs };
      }
      if (!nearest) continue;
      const before = pairs.get(nearest.arrival);
      if (!before || Math.abs(nearest.offsetMs) < Math.abs(before.offsetMs))
        pairs.set(nearest.arrival, { event, offsetMs: nearest.offsetMs });
    }
    if (events.length < limit) break;
    afterId = events.at(-1)!.id;
  }
  return pairs;
}

/** Whether the arrival's departure is the run's own move, at the offset found. */
export function isOwnMoveInTime(move: OwnMove | undefined, correctionMs: number, slackMs: number): boolean {
  return move !== undefined && inTime(move, correctionMs, slackMs);
}
