import { formatDuration } from '../../durations.js';
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
  /** how many of the runs' moves the log shows at that offset, of how many it shows at all */
  moves: number;
  of: number;
}

const QUARTER_HOUR = 15 * 60_000;
/** Zones lie within UTC-12 and UTC+14: no two disagree by more. */
export const LARGEST_ZONE_GAP_MS = 26 * 3_600_000;

/** Whether a move's rename falls where its record says: after its run began, before the move was recorded (both within the slack). */
function inTime(pair: OwnMove, correctionMs: number, slackMs: number): boolean {
  const renamed = Date.parse(pair.event.at) + pair.offsetMs - correctionMs;
  const runStarted = pair.event.runStartedAt ? Date.parse(pair.event.runStartedAt) : Date.parse(pair.event.at);
  return renamed >= runStarted - slackMs && renamed <= Date.parse(pair.event.at) + slackMs;
}

/**
 * The offset at which most of the runs' moves the log shows fall in time, when it is not zero:
 * more than half of them agree with one another (within the slack) at an offset that puts them
 * out of time. A quarter hour's multiple (within the slack) is a zone, and is taken exactly.
 */
export function clockOffsetOf(pairs: OwnMove[], slackMs: number): ClockOffset | null {
  if (pairs.length === 0) return null;
  const late = pairs.filter((p) => !inTime(p, 0, slackMs));
  if (late.length * 2 <= pairs.length) return null;
  const offsets = late.map((p) => p.offsetMs).sort((a, b) => a - b);
  const median = offsets[Math.floor(offsets.length / 2)]!;
  const quarters = Math.round(median / QUARTER_HOUR) * QUARTER_HOUR;
  const zone = quarters !== 0 && Math.abs(median - quarters) <= slackMs;
  const offsetMs = zone ? quarters : Math.round(median / 1000) * 1000;
  const moves = pairs.filter((p) => inTime(p, offsetMs, slackMs)).length;
  if (moves * 2 <= pairs.length) return null;
  return { kind: zone ? 'zone' : 'skew', offsetMs, moves, of: pairs.length };
}

/** The finding for a person, naming the option that fixes it. `zone`: the zone the log is read in now. */
export function clockOffsetMessage(offset: ClockOffset, zone: string): string {
  const way = offset.offsetMs > 0 ? 'ahead of' : 'behind';
  const span = formatDuration(offset.offsetMs / 1000, { spaced: true }); // `1 h`, `5 h 30 min`, `2 min 5 s`
  const seen = `${offset.moves} of the ${offset.of} moves the runs recorded are logged ${span} ${offset.offsetMs > 0 ? 'later' : 'earlier'} than the ledger has them`;
  if (offset.kind === 'zone') {
    return `the transfer log runs ${span} ${way} the ledger (${seen}): its times are read in the wrong zone (${zone}); set --transfer-log-time-zone to the zone the server writes its log in. The uploads were matched at that offset meanwhile`;
  }
  const slack = Math.ceil(Math.abs(offset.offsetMs) / 1000) + 2;
  return `the transfer log runs ${span} ${way} the ledger (${seen}): the SFTP server's clock and this host's disagree; set the server's clock right (NTP), or --transfer-log-clock-slack to at least ${slack}s. The uploads were matched at that offset meanwhile`;
}

/**
 * The runs' own moves the log shows: each `moved` record of the ledger is paired with the rename
 * of an arrival of its partner and name that took it to the very place the record names, of the
 * record's size, the one nearest in time. Read a page at a time, from `since` (which reaches a
 * zone's gap before the first upload: an offset is found only if its moves are read).
 */
export async function ownMovesOf(
  ledger: LedgerQueries,
  byName: Map<string, Arrival[]>,
  key: (partner: string, name: string) => string,
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
      for (const arrival of byName.get(key(event.partner, event.name)) ?? []) {
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
