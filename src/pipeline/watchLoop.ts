import { errorMessage } from '../errors.js';
import { classifyName } from '../intake/classifyName.js';
import { arrivalOf, type IntakeEntry } from '../intake/intake.js';
import { globToRegExp } from '../intake/names.js';
import type { EventAt, LogFields } from '../logEvents.js';

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
  /** the run ran to its end (whatever its files' outcomes), or another run holds the partner */
  ok: boolean;
  /** why not: its database, ledger or server away, its settings refused */
  error?: unknown;
  /** skipped: another run holds the partner's lease until then (ms since the epoch), when it is looked at again */
  leasedUntil?: number;
  /** the run recorded as not started for this failure (an outage's one run: its next attempts are counted on it) */
  outageRun?: string;
}

/** One partner as the metrics show it. */
export interface WatchPartnerStats {
  partner: string;
  /** failed tries in a row: 0 while it works */
  failures: number;
  /** a local intake polled at `--stable-for` pace because the kernel would not watch it (inotify spent); else false */
  polled: boolean;
}

/** The loop's counters, for the metrics file. */
export interface WatchStats {
  /** cycles that recorded no run: no file to take, or only files still being written */
  idleCycles: number;
  /** cycles that took work, each recorded as a run per partner worked */
  workedCycles: number;
  /** cycles in which some partner failed (a database, ledger or server away) and was backed off */
  failedCycles: number;
  /** when the last cycle ended (ms since the epoch, the real clock) */
  lastCycleAt: number;
  partners: WatchPartnerStats[];
}

/** Why a wait between cycles ended. */
export type WakeReason = 'timeout' | 'event' | 'signal';

/** The local intake folders, watched for changes (fs.watch in the command layer). */
export interface FolderWatch<S> {
  /** after the partners are read (at start and after a reload): their local folders watched */
  watch(partners: S[]): void;
  /**
   * At each cycle's start: a folder replaced since it was watched (renamed away and made again, a
   * link swapped) is watched again, and one the kernel refused is tried again. Returns the partners
   * whose folder is a new one: each listed at once, its back-off ended.
   */
  rearm(): string[];
  /** whether the partner's local folder wakes the loop by its events; false: the loop polls it at `--stable-for` pace */
  hears(partner: string): boolean;
}

/** A decision `watch` takes about itself: a line in the log and, for the journal, on stdout. */
export type Notice = <L extends 'info' | 'warn' | 'error'>(level: L, fields: LogFields<EventAt<L>>, message: string) => void;

/** What the watch loop needs from outside the pipeline: the command layer wires these. */
export interface WatchPorts<S extends WatchPartner> {
  /** the partners of the config read at start, checked (a refusal there is exit 2 before the loop) */
  partners: S[];
  /** the config read again after a SIGHUP; throws when the new one is refused (the old one stays) */
  reload(): Promise<S[]>;
  folders: FolderWatch<S>;
  /** one listing of the partner's intake; throws when it cannot be reached */
  list(settings: S, stop: AbortSignal): Promise<WatchListing>;
  /**
   * One cycle's work over the partners that have some: the partner loop of `run`, each partner a
   * run. `outageRuns`: the run each partner that is failing recorded for its outage, on which a
   * try that cannot start again is counted (one run for the outage, not one per try).
   */
  work(partners: S[], outageRuns: ReadonlyMap<string, string>): Promise<WatchPartnerOutcome[]>;
  /** the metrics file after every cycle, worked or idle */
  metrics(stats: WatchStats): Promise<void>;
  /** waits `durationMs` or until woken: a change in a watched folder, a signal */
  wait(durationMs: number): Promise<WakeReason>;
  /** the real clock */
  now(): number;
  notice: Notice;
  /** SIGTERM, SIGINT: the file in hand is finished, the cycle ended, the loop returns */
  stop: AbortSignal;
  /** whether a SIGHUP came since the last call (it is consumed) */
  hangup(): boolean;
  /** between listings of a polled (remote) intake, and the longest wait between cycles */
  pollMs: number;
  /** between full listings of a local intake whose events wake the loop */
  rescanMs: number;
  /** a partner's backoff after a failure: from `backoffMs`, doubled each time, at most `backoffCapMs`, reset when it works */
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
  /** a local folder (whose changes wake the loop while the kernel watches it) */
  localFolder: boolean;
  /** failed tries in a row (its listing or its run): it is backed off, alone, until `dueAt` */
  failures: number;
  /** the run recorded as not started for its current outage */
  outageRun: string | undefined;
}

/** What one listing holds for the loop. */
interface Candidates {
  /** files to take now: new, changed, or left long enough to be tried again */
  ready: IntakeEntry[];
  /** the least time (ms) before a file still being written is old enough; undefined when none is */
  stableInMs: number | undefined;
}

/** A local folder without events is listed at the pace a file becomes stable, at least every second. */
const POLLED_FLOOR_MS = 1000;
/** A partner another run holds is looked at again once that lease ends, and never sooner than this after a look. */
const LEASE_RECHECK_MS = 1000;

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
 * lists every partner whose intake is due (a local folder when it changed, or every `rescan`,
 * or at `--stable-for` pace when the kernel will not watch it; an SFTP intake every `poll`) and
 * works, through the partner loop (gate, claim, load and move, each partner a run in the ledger
 * under its lease), only the partners that have a file to take; a cycle without one records no
 * run and is counted idle. Each partner stands alone: one whose listing or run fails (its server,
 * database or ledger away) is backed off by itself, doubling up to the cap and reset once it
 * works, while the others go on; a partner another run holds is looked at again when that lease
 * ends. A SIGHUP rereads the config at the next cycle's start (a refused one is said and the old
 * kept); SIGTERM or SIGINT lets the file in hand finish, ends the cycle, and the loop returns.
 * What the loop decides about itself (a reload, a partner failing and backed off, resumed) is a
 * notice: the log and stdout.
 */
export async function watchLoop<S extends WatchPartner>(ports: WatchPorts<S>): Promise<WatchStats> {
  const stats: WatchStats = { idleCycles: 0, workedCycles: 0, failedCycles: 0, lastCycleAt: 0, partners: [] };
  const watched = new WatchedPartners(ports);
  ports.notice(
    'info',
    { event: 'watch-started', partners: watched.names() },
    `watching ${watched.partners.length} partner(s): ${watched.names().join(', ')}`,
  );
  let wake: WakeReason = 'timeout';
  while (!ports.stop.aborted) {
    if (ports.hangup()) await watched.reload();
    const cycle: Cycle = { at: ports.now(), nextAt: Infinity, anyFailed: false };
    const due = await listDue(watched, wake, cycle);
    if (due.length === 0) stats.idleCycles++;
    else {
      const outcomes = await ports.work(
        due.map((d) => d.settings),
        watched.outageRuns(due),
      );
      stats.workedCycles++;
      afterWork(watched, due, outcomes, cycle);
    }
    if (cycle.anyFailed) stats.failedCycles++;
    stats.lastCycleAt = ports.now();
    stats.partners = watched.stats();
    await ports.metrics(stats).catch(() => undefined);
    if (ports.stop.aborted) break;
    // at least every --poll a cycle comes, if only to say in the metrics that the loop lives
    const until = Math.min(cycle.nextAt, stats.lastCycleAt + ports.pollMs);
    wake = await ports.wait(Math.max(0, until - ports.now()));
  }
  ports.notice(
    'info',
    { event: 'watch-stopped', idleCycles: stats.idleCycles, workedCycles: stats.workedCycles, failedCycles: stats.failedCycles },
    `watch stopped: ${stats.workedCycles} cycle(s) worked, ${stats.idleCycles} idle, ${stats.failedCycles} with a failure`,
  );
  return stats;
}

/** One cycle as its steps share it: when it began, when the next is due, whether some partner failed in it. */
interface Cycle {
  readonly at: number;
  nextAt: number;
  anyFailed: boolean;
}

/** A partner with files to take in this cycle. */
interface Due<S> {
  settings: S;
  ready: IntakeEntry[];
}

/** Watch's partners between cycles: the config's (read again on SIGHUP), each with its state and its backoff. */
class WatchedPartners<S extends WatchPartner> {
  partners: S[];
  compiled: Map<string, { pattern: RegExp; ignore: RegExp[] }>;
  private readonly states = new Map<string, PartnerState>();

  constructor(readonly ports: WatchPorts<S>) {
    this.partners = ports.partners;
    this.compiled = compile(this.partners);
    ports.folders.watch(this.partners);
  }

  names(): string[] {
    return this.partners.map((p) => p.partner);
  }

  stateOf(partner: string): PartnerState {
    let state = this.states.get(partner);
    if (!state) this.states.set(partner, (state = { left: new Map(), dueAt: 0, localFolder: false, failures: 0, outageRun: undefined }));
    return state;
  }

  /** The config read again (SIGHUP): a refused one is said, and the old one stays. */
  async reload(): Promise<void> {
    const { ports } = this;
    try {
      this.partners = await ports.reload();
      this.compiled = compile(this.partners);
      for (const name of this.states.keys()) if (!this.partners.some((p) => p.partner === name)) this.states.delete(name);
      // the new settings may take files the old ones left, and end a failure: every partner is listed now, and tried afresh
      for (const state of this.states.values()) {
        state.left.clear();
        state.dueAt = 0;
      }
      ports.folders.watch(this.partners);
      ports.notice('info', { event: 'config-reloaded', partners: this.names() }, `config reread (SIGHUP): ${this.names().join(', ')}`);
    } catch (err) {
      ports.notice(
        'error',
        { event: 'config-not-reloaded', reason: errorMessage(err) },
        `config not reread, the old one stays: ${errorMessage(err)}`,
      );
    }
  }

  /** A partner's listing or run failed: it alone waits out its backoff. */
  failed(settings: S, err: unknown, outageRun?: string): void {
    const { ports } = this;
    const state = this.stateOf(settings.partner);
    state.failures++;
    if (outageRun) state.outageRun = outageRun;
    const backoff = Math.min(ports.backoffCapMs, ports.backoffMs * 2 ** Math.min(state.failures - 1, 30));
    state.dueAt = ports.now() + backoff;
    const reason = errorMessage(err);
    ports.notice(
      'error',
      { event: 'watch-partner-failed', partner: settings.partner, failures: state.failures, retryInMs: backoff, reason },
      `${settings.partner}: failed (${state.failures} in a row), backing off: next try in ${seconds(backoff)}: ${reason}`,
    );
  }

  /** A partner's listing or run worked: a backoff ends. */
  worked(settings: S): void {
    const state = this.stateOf(settings.partner);
    if (state.failures === 0) return;
    this.ports.notice(
      'info',
      { event: 'watch-partner-resumed', partner: settings.partner, failures: state.failures },
      `${settings.partner}: resumed after ${state.failures} failed tr${state.failures === 1 ? 'y' : 'ies'}`,
    );
    state.failures = 0;
    state.outageRun = undefined;
  }

  /** The run each failing partner of `due` recorded for its outage, on which a try that cannot start again is counted. */
  outageRuns(due: Due<S>[]): Map<string, string> {
    return new Map(
      due.flatMap(({ settings }) => {
        const run = this.stateOf(settings.partner).outageRun;
        return run ? [[settings.partner, run] as const] : [];
      }),
    );
  }

  /** Each partner as the metrics show it. */
  stats(): WatchPartnerStats[] {
    return this.partners.map((p) => ({
      partner: p.partner,
      failures: this.stateOf(p.partner).failures,
      polled: this.stateOf(p.partner).localFolder && !this.ports.folders.hears(p.partner),
    }));
  }
}

/**
 * The partners whose intake is due in this cycle, each listed: those with files to take. A
 * partner whose folder was made anew is due at once, as is a local folder that woke the loop
 * (unless it is backed off: a failure is waited out whole).
 */
async function listDue<S extends WatchPartner>(watched: WatchedPartners<S>, wake: WakeReason, cycle: Cycle): Promise<Due<S>[]> {
  const { ports } = watched;
  const rearmed = new Set(ports.folders.rearm());
  const due: Due<S>[] = [];
  for (const settings of watched.partners) {
    const state = watched.stateOf(settings.partner);
    if (rearmed.has(settings.partner)) {
      // a new folder where the intake was: whatever its old one failed on, this one is looked at now
      state.dueAt = 0;
      state.failures = 0;
    }
    // an event lists a local folder at once, unless it is backed off: a failure is waited out whole
    const woken = wake === 'event' && state.localFolder && ports.folders.hears(settings.partner) && state.failures === 0;
    if (!woken && state.dueAt > cycle.at) cycle.nextAt = Math.min(cycle.nextAt, state.dueAt);
    else {
      const ready = await listPartner(watched, settings, state, cycle);
      if (ready.length > 0) due.push({ settings, ready });
    }
  }
  return due;
}

/**
 * One partner's intake listed: the files worth a run (candidatesOf), and when it is listed next
 * (its pace: a remote intake every `poll`, a local folder every `rescan` while the kernel watches
 * it, else at the pace a file becomes stable). A listing that fails backs the partner off.
 */
async function listPartner<S extends WatchPartner>(
  watched: WatchedPartners<S>,
  settings: S,
  state: PartnerState,
  cycle: Cycle,
): Promise<IntakeEntry[]> {
  const { ports } = watched;
  let listing: WatchListing;
  try {
    listing = await ports.list(settings, ports.stop);
  } catch (err) {
    cycle.anyFailed = true;
    watched.failed(settings, err);
    cycle.nextAt = Math.min(cycle.nextAt, state.dueAt);
    return [];
  }
  const found = candidatesOf(listing, settings, state, watched.compiled.get(settings.partner)!, ports.now(), ports.rescanMs);
  state.localFolder = listing.local;
  const pace = !listing.local
    ? ports.pollMs
    : ports.folders.hears(settings.partner)
      ? ports.rescanMs
      : // no events from the kernel: the folder is polled at the pace a file becomes stable, not once a rescan
        Math.min(ports.rescanMs, Math.max(POLLED_FLOOR_MS, settings.stableForSeconds * 1000));
  state.dueAt = ports.now() + pace;
  if (found.stableInMs !== undefined) state.dueAt = Math.min(state.dueAt, ports.now() + found.stableInMs);
  cycle.nextAt = Math.min(cycle.nextAt, state.dueAt);
  // a partner failing on its run (its database away) is worked again: only that says whether it is back
  if (found.ready.length === 0 && state.failures > 0) watched.worked(settings);
  return found.ready;
}

/** After a worked cycle: each partner's outcome sets when it is looked at again (backed off, its lease's end, or at once). */
function afterWork<S extends WatchPartner>(
  watched: WatchedPartners<S>,
  due: Due<S>[],
  outcomes: WatchPartnerOutcome[],
  cycle: Cycle,
): void {
  const { ports } = watched;
  const workedAt = ports.now();
  for (const { settings, ready } of due) {
    const outcome = outcomes.find((o) => o.partner === settings.partner);
    const state = watched.stateOf(settings.partner);
    if (!outcome?.ok) {
      // not begun because a stop was asked for: nothing failed
      if (ports.stop.aborted) continue;
      cycle.anyFailed = true;
      watched.failed(settings, outcome?.error ?? new Error('no outcome'), outcome?.outageRun);
      cycle.nextAt = Math.min(cycle.nextAt, state.dueAt);
    } else {
      watched.worked(settings);
      if (outcome.leasedUntil !== undefined) {
        // another run works it: its files are that run's, and the partner is looked at again when its lease ends
        state.dueAt = Math.min(workedAt + ports.pollMs, Math.max(outcome.leasedUntil, workedAt + LEASE_RECHECK_MS));
        cycle.nextAt = Math.min(cycle.nextAt, state.dueAt);
      } else {
        // what the run left in the intake waits for a change, or for `rescan`
        for (const entry of ready) state.left.set(entry.name, { arrival: arrivalOf(entry), triedAt: workedAt });
        // a file that landed while the run worked is looked for at once
        state.dueAt = 0;
        cycle.nextAt = workedAt;
      }
    }
  }
}

const seconds = (ms: number) => (ms < 1000 ? `${ms}ms` : `${Math.round(ms / 1000)}s`);

/** Each partner's pattern and --ignore globs, compiled once per config. */
function compile(partners: WatchPartner[]): Map<string, { pattern: RegExp; ignore: RegExp[] }> {
  return new Map(partners.map((p) => [p.partner, { pattern: globToRegExp(p.pattern), ignore: p.ignore.map(globToRegExp) }]));
}
