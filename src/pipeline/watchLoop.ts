import type { Logger } from 'pino';
import { errorMessage } from '../errors.js';
import { classifyName } from '../intake/classifyName.js';
import type { IntakeEntry } from '../intake/intake.js';
import { globToRegExp } from '../intake/names.js';

/** What the watch loop reads of a partner's settings (config/settings.ts fills it). */
export interface WatchPartner {
  partner: string;
  pattern: string;
  ignore: string[];
  readyMarker: string | undefined;
  stableForSeconds: number;
}

/** One listing of a partner's intake, as the loop judges it: its entries, and whether their mtimes are this host's clock. */
export interface WatchListing {
  entries: IntakeEntry[];
  /** a local folder: an mtime younger than `--stable-for` is a file still being written, looked at again once it is old enough */
  mtimeIsLocalClock: boolean;
  /** a local folder, whose changes wake the loop (fs.watch): listed in full every `rescan`; else every `poll` */
  local: boolean;
}

/** How one partner's part of a worked cycle ended, as the loop needs it. */
export interface WatchPartnerOutcome {
  partner: string;
  /** the run ran to its end (whatever its files' outcomes), or another host holds the partner */
  ok: boolean;
  /** why not: its database, ledger or server away, its settings refused */
  error?: unknown;
}

/** The loop's counters, for the metrics file. */
export interface WatchStats {
  /** cycles that recorded no run: no file to take, or only files still being written */
  idleCycles: number;
  /** cycles that took work, each recorded as a run per partner worked */
  workedCycles: number;
  /** cycles that failed (a database, ledger or server away) and were retried after a backoff */
  failedCycles: number;
  /** when the last cycle ended (ms since the epoch, the real clock) */
  lastCycleAt: number;
}

/** Why a wait between cycles ended. */
export type WakeReason = 'timeout' | 'event' | 'signal';

/** What the watch loop needs from outside the pipeline: the command layer wires these. */
export interface WatchPorts<S extends WatchPartner> {
  /** the partners of the config read at start, checked (a refusal there is exit 2 before the loop) */
  partners: S[];
  /** the config read again after a SIGHUP; throws when the new one is refused (the old one stays) */
  reload(): Promise<S[]>;
  /** after the partners are read (at start and after a reload): the local folders to watch for changes */
  watchIntakes(partners: S[]): void;
  /** one listing of the partner's intake; throws when it cannot be reached */
  list(settings: S, stop: AbortSignal): Promise<WatchListing>;
  /** one cycle's work over the partners that have some: the partner loop of `run`, each partner a run */
  work(partners: S[]): Promise<WatchPartnerOutcome[]>;
  /** the metrics file after every cycle, worked or idle */
  metrics(stats: WatchStats): Promise<void>;
  /** waits `durationMs` or until woken: a change in a watched folder, a signal */
  wait(durationMs: number): Promise<WakeReason>;
  /** the real clock */
  now(): number;
  logger: Logger;
  /** SIGTERM, SIGINT: the file in hand is finished, the cycle ended, the loop returns */
  stop: AbortSignal;
  /** whether a SIGHUP came since the last call (it is consumed) */
  hangup(): boolean;
  /** between cycles */
  pollMs: number;
  rescanMs: number;
  /** the backoff after a failed cycle: from `backoffMs`, doubled each time, at most `backoffCapMs`, reset after a good cycle */
  backoffMs: number;
  backoffCapMs: number;
}

/** A file left in the intake by a worked cycle (held, not ready, failed): looked at again when it changes, or after `rescan`. */
interface LeftFile {
  arrival: string;
  triedAt: number;
}

/** One partner's state between cycles. */
interface PartnerState {
  left: Map<string, LeftFile>;
  /** when its intake is listed next (ms) */
  dueAt: number;
  /** a local folder, whose changes wake the loop: listed again at once after an event */
  local: boolean;
}

/** What one listing holds for the loop. */
interface Candidates {
  /** files to take now: new, changed, or left long enough to be tried again */
  ready: IntakeEntry[];
  /** the least time (ms) before a file still being written is old enough; undefined when none is */
  stableInMs: number | undefined;
}

const arrivalOf = (entry: IntakeEntry) => `${entry.size}:${entry.mtimeMs}`;

/**
 * The files of a listing worth a run: names the pattern takes (classifyName, as a run judges
 * them), that this loop has not tried in this very shape, or tried more than `rescan` ago
 * (a held twin, a not-ready upload, a failure: a run every `rescan` counts them, as a timer's
 * runs would). Ignored names, known neighbours, temporary names and links are no work: the
 * next run that works counts them. In a local folder a file younger than `--stable-for` is
 * not yet work: it is looked at again once it is old enough.
 */
function candidatesOf(
  listing: WatchListing,
  partner: WatchPartner,
  state: PartnerState,
  compiled: { pattern: RegExp; ignore: RegExp[] },
  nowMs: number,
  rescanMs: number,
): Candidates {
  const present = new Set(listing.entries.map((entry) => entry.name));
  const ready: IntakeEntry[] = [];
  let stableInMs: number | undefined;
  const stableForMs = partner.stableForSeconds * 1000;
  for (const entry of listing.entries) {
    if (entry.notRegular) continue;
    const verdict = classifyName(entry.name, { ...compiled, readyMarker: partner.readyMarker }, present);
    if (verdict.kind !== 'take') continue;
    const left = state.left.get(entry.name);
    if (left && left.arrival === arrivalOf(entry) && nowMs - left.triedAt < rescanMs) continue;
    const age = nowMs - entry.mtimeMs;
    if (listing.mtimeIsLocalClock && stableForMs > 0 && age >= 0 && age < stableForMs) {
      stableInMs = Math.min(stableInMs ?? Infinity, stableForMs - age);
      continue;
    }
    ready.push(entry);
  }
  // names gone from the intake are forgotten: the state holds what the intake holds, no more
  for (const name of state.left.keys()) if (!present.has(name)) state.left.delete(name);
  return { ready, stableInMs };
}

/**
 * `watch`: cycles of `run` over the same partners, for as long as the service runs. Each cycle
 * lists every partner whose intake is due (a local folder when it changed, or every `rescan`;
 * an SFTP intake every `poll`) and works, through the partner loop (gate, claim, load, move,
 * each partner a run in the ledger under its lease), only the partners that have a file to
 * take; a cycle without one records no run and is counted idle. A cycle that fails (a database,
 * ledger or server away) is logged and tried again after a backoff that doubles up to its cap
 * and is reset by a good cycle. A SIGHUP rereads the config at the next cycle's start (a
 * refused one is logged and the old kept); SIGTERM or SIGINT lets the file in hand finish,
 * ends the cycle, and the loop returns.
 */
export async function watchLoop<S extends WatchPartner>(ports: WatchPorts<S>): Promise<WatchStats> {
  const stats: WatchStats = { idleCycles: 0, workedCycles: 0, failedCycles: 0, lastCycleAt: 0 };
  const log = ports.logger;
  let partners = ports.partners;
  let compiled = compile(partners);
  const states = new Map<string, PartnerState>();
  const stateOf = (partner: string) => {
    let state = states.get(partner);
    if (!state) states.set(partner, (state = { left: new Map(), dueAt: 0, local: false }));
    return state;
  };
  ports.watchIntakes(partners);
  let failures = 0;
  let wake: WakeReason = 'timeout';
  log.info({ event: 'watch-started', partners: partners.map((p) => p.partner) }, `watching ${partners.length} partner(s)`);

  while (!ports.stop.aborted) {
    if (ports.hangup()) {
      try {
        partners = await ports.reload();
        compiled = compile(partners);
        for (const name of states.keys()) if (!partners.some((p) => p.partner === name)) states.delete(name);
        // the new settings may take files the old ones left: every partner is listed now, and tried afresh
        for (const state of states.values()) {
          state.left.clear();
          state.dueAt = 0;
        }
        ports.watchIntakes(partners);
        log.info({ event: 'config-reloaded', partners: partners.map((p) => p.partner) }, 'config reread (SIGHUP)');
      } catch (err) {
        log.error(
          { event: 'config-not-reloaded', reason: errorMessage(err) },
          `config not reread, the old one stays: ${errorMessage(err)}`,
        );
      }
    }
    const cycleAt = ports.now();
    let nextAt = Infinity;
    try {
      const due: { settings: S; ready: IntakeEntry[] }[] = [];
      for (const settings of partners) {
        const state = stateOf(settings.partner);
        const woken = wake === 'event' && state.local;
        if (!woken && state.dueAt > cycleAt && failures === 0) {
          nextAt = Math.min(nextAt, state.dueAt);
          continue;
        }
        const listing = await ports.list(settings, ports.stop);
        const found = candidatesOf(listing, settings, state, compiled.get(settings.partner)!, ports.now(), ports.rescanMs);
        state.local = listing.local;
        state.dueAt = ports.now() + (listing.local ? ports.rescanMs : ports.pollMs);
        if (found.stableInMs !== undefined) state.dueAt = Math.min(state.dueAt, ports.now() + found.stableInMs);
        nextAt = Math.min(nextAt, state.dueAt);
        if (found.ready.length > 0) due.push({ settings, ready: found.ready });
      }
      if (due.length === 0) stats.idleCycles++;
      else {
        const outcomes = await ports.work(due.map((d) => d.settings));
        stats.workedCycles++;
        const workedAt = ports.now();
        for (const { settings, ready } of due) {
          const outcome = outcomes.find((o) => o.partner === settings.partner);
          if (!outcome?.ok) continue;
          // what the run left in the intake waits for a change, or for `rescan`
          const state = stateOf(settings.partner);
          for (const entry of ready) state.left.set(entry.name, { arrival: arrivalOf(entry), triedAt: workedAt });
          // a file that landed while the run worked is looked for at once
          state.dueAt = 0;
          nextAt = workedAt;
        }
        const failed = outcomes.filter((o) => !o.ok);
        if (failed.length > 0 && !ports.stop.aborted) {
          const each = failed.map((o) => `${o.partner}: ${errorMessage(o.error)}`).join('; ');
          throw new Error(each);
        }
      }
      failures = 0;
    } catch (err) {
      failures++;
      stats.failedCycles++;
      const backoff = Math.min(ports.backoffCapMs, ports.backoffMs * 2 ** Math.min(failures - 1, 30));
      nextAt = ports.now() + backoff;
      log.error(
        { event: 'watch-cycle-failed', failures, retryInMs: backoff, reason: errorMessage(err) },
        `cycle failed (${failures} in a row), next in ${Math.round(backoff / 1000)}s: ${errorMessage(err)}`,
      );
    }
    stats.lastCycleAt = ports.now();
    await ports.metrics(stats).catch(() => undefined);
    if (ports.stop.aborted) break;
    // at least every --poll a cycle comes, if only to say in the metrics that the loop lives; a backoff is waited out whole
    const until = failures > 0 ? nextAt : Math.min(nextAt, stats.lastCycleAt + ports.pollMs);
    do wake = await ports.wait(Math.max(0, until - ports.now()));
    while (failures > 0 && wake === 'event' && ports.now() < until);
  }
  log.info({ event: 'watch-stopped', ...stats }, `watch stopped: ${stats.workedCycles} cycle(s) worked, ${stats.idleCycles} idle`);
  return stats;
}

/** Each partner's pattern and --ignore globs, compiled once per config. */
function compile(partners: WatchPartner[]): Map<string, { pattern: RegExp; ignore: RegExp[] }> {
  return new Map(partners.map((p) => [p.partner, { pattern: globToRegExp(p.pattern), ignore: p.ignore.map(globToRegExp) }]));
}
