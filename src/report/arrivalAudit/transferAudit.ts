import { UsageError } from '../../errors.js';
import { intakeFolders, type IntakeSettings } from '../../intake/openIntake.js';
import { globToRegExp } from '../../intake/names.js';
import type { LedgerQueries } from '../../ledger/ledger.js';
import type { EventKind } from '../../ledger/types.js';
import { AccountedList } from './accountedList.js';
import { accountArrivals, ambiguousLine, strayLine, type AccountedArrival, type IntakeNow } from './accountArrivals.js';
import { arrivalFollower, arrivalsOf, ledgerNameOf, readingNotes, type Arrival, type ArrivalsFound, type IntakeView } from './arrivals.js';
import { expandLogFiles, readTransferLogs, unreadPlaces, type TransferLogs, type UnreadPlace } from '../../transferLog/logFiles.js';
import type { Zone } from '../../layout/values/timeZones.js';
import { logZone } from '../../transferLog/logTimes.js';
import { yearsByLedger } from './logYears.js';
import { clockOffsetMessage, type ClockOffset } from './ownMoves.js';
import type { LogFileReport } from '../../transferLog/transferEvents.js';

export interface TransferAuditResult {
  /** each log file read: its format, its lines, and those it could not read */
  logs: (Omit<LogFileReport, 'firstAt' | 'lastAt'> & { firstAt: string | null; lastAt: string | null })[];
  /**
   * every upload into an intake, with what the ledger did with it: written out in the forms the
   * caller asked for as each was accounted (accountedList.ts), never kept as objects
   */
  arrivals: AccountedList;
  /** the uploads of `arrivals` that count against the audit (`unmatched`), kept whole: each is a discrepancy */
  unmatchedArrivals: AccountedArrival[];
  /** uploads into folders no partner's run reads */
  outsideIntakes: { path: string; at: string; size: number; user: string | null; message: string }[];
  /**
   * uploads the log does not tie to one partner (a path that is several partners' intake, a
   * relative path of a session of no partner's login): each a discrepancy, never a partner's
   */
  ambiguous: { path: string; at: string; size: number; user: string | null; partners: string[]; message: string }[];
  /** per outcome (and per reason an arrival has no record) */
  counts: Record<string, number>;
  unmatched: number;
  unreadableTotal: number;
  /** what of the logs was not read (over-long lines, a decompression bomb): each may hide an upload */
  unread: UnreadPlace[];
  /**
   * a log whose times stand off the ledger's by a constant offset, found from the runs' own
   * moves (a zone read wrong, or a server clock off): its uploads were matched at that offset,
   * and the message names the option that fixes it
   */
  clockOffsets: {
    files: string[];
    partners: string[];
    kind: ClockOffset['kind'];
    offsetSeconds: number;
    moves: number;
    of: number;
    message: string;
  }[];
}

/** The uploads to report (an evidence pack's period): from `since`, up to but not including `until` (null: no end). */
export interface TransferLogPeriod {
  since: string;
  until: string | null;
}

/** What the transfer log audit needs of a partner's settings. */
export interface TransferLogPartner extends IntakeSettings {
  partner: string;
  pattern: string;
  ignore: string[];
  readyMarker: string | undefined;
  transferLog: { files: string[]; root: string; user: string | undefined; timeZone: string | undefined; clockSlackSeconds: number };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Events whose names the ledger keeps for the arrivals a log named otherwise. */
const NAMED: EventKind[] = ['claimed', 'loaded', 'skipped', 'held', 'rejected', 'failed', 'recovered', 'not_ready', 'ignored'];

/**
 * Gives each arrival whose log writes white space otherwise (xferlog's `_`) the ledger's name
 * it stands for, and returns, per arrival, what a person should know of how it was read.
 */
async function namedAsLedgerHas(ledger: LedgerQueries, arrivals: Arrival[]): Promise<(string[] | null)[]> {
  const names = new Map<string, Set<string>>();
  const namesOf = async (partner: string, since: number) => {
    let known = names.get(partner);
    if (!known) {
      const events = await ledger.eventsSince(NAMED, new Date(since).toISOString(), [partner]);
      names.set(
        partner,
        (known = new Set(events.map((ledgerEvent) => ledgerEvent.name).filter((name): name is string => typeof name === 'string'))),
      );
    }
    return known;
  };
  // a loop, never Math.min(...list): a year's uploads are more arguments than a call's stack holds
  let earliest = Infinity;
  for (const arrival of arrivals) if (arrival.at < earliest) earliest = arrival.at;
  earliest -= 86_400_000;
  // null where there is nothing to say (nearly always): a million empty lists are 30 MiB
  const notes: (string[] | null)[] = [];
  for (const arrival of arrivals) {
    const logged = arrival.name;
    const needsLedger = arrival.upload.whiteSpaceAs !== null && logged.includes(arrival.upload.whiteSpaceAs);
    const { name, ambiguous } = needsLedger
      ? ledgerNameOf(arrival, await namesOf(arrival.partner, earliest))
      : { name: logged, ambiguous: [] };
    arrival.name = name;
    const said = readingNotes(arrival, logged, ambiguous);
    notes.push(said.length > 0 ? said : null);
  }
  return notes;
}

/** The list's items in order, each let go by the list as it is read: the list is read once. */
function* handedOver<T>(list: (T | undefined)[]): Generator<T> {
  for (let i = 0; i < list.length; i++) {
    const item = list[i]!;
    list[i] = undefined;
    yield item;
  }
  list.length = 0;
}

/**
 * The partners' logs read and their uploads followed into arrivals. Each event is followed as its
 * line is read where the log is read in time order (nearly always): a year's million events are
 * never held, each dies young. Otherwise they are held and sorted, and a syslog that writes no
 * year is read in the year the ledger's times fit. What the following kept of every path (a map
 * of a year's million) is let go on return: the account needs only the arrivals.
 */
async function followLogs(
  ledger: LedgerQueries,
  group: { files: string[]; slackMs: number; partners: TransferLogPartner[] },
  zone: Zone,
  intakes: IntakeView[],
): Promise<{ logs: TransferLogs; found: ArrivalsFound }> {
  const follower = arrivalFollower(intakes);
  const logs = await readTransferLogs(group.files, zone, {}, follower.follow);
  if (logs.handed) return { logs, found: follower.found };
  // a syslog that writes no year: the year its lines are from is the one the ledger's times fit
  const partners = group.partners.map((p) => p.partner);
  const bases = await yearsByLedger(ledger, logs, partners, group.slackMs);
  const read = bases ? await readTransferLogs(group.files, zone, { bases }) : logs;
  // each event is let go once followed: what the account needs of it is in the arrivals
  const events = read.events;
  return { logs: { ...read, events: [] }, found: arrivalsOf(handedOver(events), intakes) };
}

/**
 * The transfer log audit: the partners' logs (each partner's own `transferLog`, read once when
 * several share one) made into arrivals in each partner's intake, and each arrival matched to
 * what the ledger did with it; `intakeNow` lists a partner's intake as it is now, for the uploads
 * the ledger left waiting there. Null when no partner names a transfer log.
 */
export async function transferAudit(
  ledger: LedgerQueries,
  partners: TransferLogPartner[],
  intakeNow: (partner: string) => Promise<IntakeNow>,
  opts: { period?: TransferLogPeriod; accounted?: AccountedList } = {},
): Promise<TransferAuditResult | null> {
  const { period } = opts;
  const withLogs = partners.filter((transferLogPartner) => transferLogPartner.transferLog.files.length > 0);
  if (withLogs.length === 0) return null;
  // partners reading the same files (and zone) share one reading of them
  const groups = new Map<string, { files: string[]; zone: string | undefined; slackMs: number; partners: TransferLogPartner[] }>();
  for (const transferLogPartner of withLogs) {
    if (!transferLogPartner.intake)
      throw new UsageError(`${transferLogPartner.partner}: a transfer log is matched to an intake: set --intake (or "intake") too`);
    const files = await expandLogFiles(transferLogPartner.transferLog.files);
    const slackMs = transferLogPartner.transferLog.clockSlackSeconds * 1000;
    const groupKey = JSON.stringify([files, transferLogPartner.transferLog.timeZone ?? null, slackMs]);
    const group = groups.get(groupKey) ?? { files, zone: transferLogPartner.transferLog.timeZone, slackMs, partners: [] };
    group.partners.push(transferLogPartner);
    groups.set(groupKey, group);
  }
  const result: TransferAuditResult = {
    logs: [],
    arrivals: opts.accounted ?? new AccountedList(),
    unmatchedArrivals: [],
    outsideIntakes: [],
    ambiguous: [],
    counts: {},
    unmatched: 0,
    unreadableTotal: 0,
    unread: [],
    clockOffsets: [],
  };
  // every upload is followed through the whole log and matched with the whole ledger; only those of the period are reported
  const inPeriod = (at: string) => !period || (at >= period.since && (period.until === null || at < period.until));
  for (const group of groups.values()) {
    const zone = logZone(group.zone).zone;
    const intakes: IntakeView[] = group.partners.map((p) => ({
      partner: p.partner,
      folder: intakeFolders(p).intake,
      root: p.transferLog.root,
      // the login its sessions are: as configured, else the one its SFTP intake is read as
      user: p.transferLog.user ?? intakeFolders(p).server?.user ?? null,
      pattern: globToRegExp(p.pattern),
      ignore: p.ignore.map(globToRegExp),
      readyMarker: p.readyMarker,
      // how the ledger's record of a move names a server path; a local path as it is
      locationPrefix: intakeFolders(p).server?.locationPrefix ?? '',
    }));
    const { logs, found } = await followLogs(ledger, group, zone, intakes);
    const { arrivals, strays, ambiguous } = found;
    const notes = await namedAsLedgerHas(ledger, arrivals);
    let index = 0;
    const { clockOffset } = await accountArrivals(
      ledger,
      arrivals,
      { clockSlackMs: group.slackMs, intakeNow, logZone: zone },
      (accounted) => {
        const said = notes[index++];
        if (said) accounted.message += ` (${said.join('; ')})`;
        if (!inPeriod(accounted.at)) return;
        result.arrivals.add(accounted);
        const countKey = accounted.outcome ?? accounted.noRecord!;
        result.counts[countKey] = (result.counts[countKey] ?? 0) + 1;
        if (accounted.unmatched) result.unmatchedArrivals.push(accounted);
      },
    );
    if (clockOffset) {
      result.clockOffsets.push({
        files: group.files,
        partners: group.partners.map((p) => p.partner),
        kind: clockOffset.kind,
        offsetSeconds: clockOffset.offsetMs / 1000,
        moves: clockOffset.moves,
        of: clockOffset.of,
        message: clockOffsetMessage(clockOffset, group.zone ?? "this host's zone"),
      });
    }
    for (const stray of strays) {
      const at = new Date(stray.upload.at).toISOString();
      if (!inPeriod(at)) continue;
      result.outsideIntakes.push({ path: stray.path, at, size: stray.upload.size, user: stray.upload.user, message: strayLine(stray) });
    }
    for (const upload of ambiguous) {
      const at = new Date(upload.at).toISOString();
      if (!inPeriod(at)) continue;
      result.ambiguous.push({
        path: upload.path,
        at,
        size: upload.upload.size,
        user: upload.upload.user,
        partners: upload.partners,
        message: ambiguousLine(upload),
      });
    }
    for (const logFileReport of logs.files) {
      result.logs.push({ ...logFileReport, firstAt: iso(logFileReport.firstAt), lastAt: iso(logFileReport.lastAt) });
      for (const place of unreadPlaces(logFileReport)) result.unread.push(place);
    }
  }
  result.unmatched = result.unmatchedArrivals.length;
  result.unreadableTotal = result.logs.reduce((n, f) => n + f.unreadable, 0);
  return result;
}
