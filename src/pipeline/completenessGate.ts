import { setTimeout as sleep } from 'node:timers/promises';
import type { Intake, IntakeEntry } from '../intake/intake.js';
import { uploadsHeldOpen, type ServerLogOfIntake } from '../transferLog/openUploads.js';

/** What the gate waits for now: the files still being watched, and the least time before any may be ready. */
export interface GateWaiting {
  files: string[];
  /** until the first file could be ready, at the soonest */
  remainingMs: number;
  /** the first report of this wait */
  first: boolean;
}

export interface GateResult {
  ready: IntakeEntry[];
  /** still changing when the gate's deadline came (or a stop was asked for) */
  notReady: { entry: IntakeEntry; reason: string }[];
  /** listed, then gone while watched: another run took them, or nobody did (the run asks the ledger) */
  gone: IntakeEntry[];
}

const sameShape = (a: IntakeEntry, b: IntakeEntry) => a.size === b.size && a.mtimeMs === b.mtimeMs;

/**
 * What `watch` remembers, per partner, of the files its runs saw still being written: since when.
 * A run of `watch` waits for a changing file no longer than one `--stable-for` window: the file
 * is left in the intake unrecorded (the watch looks at it again as it changes) until it has been
 * changing for `--max-wait` since it was first seen, and only then recorded not ready, as a run
 * records it. So a slow upload holds back neither the other files nor the cycle.
 */
export class ChangingFiles {
  private readonly since = new Map<string, number>();

  /** when the file was first seen changing (now, if this is the first time) */
  firstSeen(name: string, now: number): number {
    let at = this.since.get(name);
    if (at === undefined) this.since.set(name, (at = now));
    return at;
  }

  /** the file is decided, or gone: forgotten */
  forget(name: string): void {
    this.since.delete(name);
  }

  /** only the names of the intake's latest listing are kept: the memory holds what the intake holds */
  keepOnly(present: ReadonlySet<string>): void {
    for (const name of this.since.keys()) if (!present.has(name)) this.since.delete(name);
  }
}

/**
 * A file is ready when neither its size nor its mtime has changed for `stableForMs`: at once
 * when its mtime (on this host's clock) is already that old, otherwise by polling. `next` hands
 * over the files as they become ready, a batch at a time, so that a slow upload beside them holds
 * back only itself: the run takes each batch while the gate goes on watching the rest. Files
 * still changing at `deadline` (or when a stop is asked for) come back as not ready; files that
 * vanish as gone.
 */
export class CompletenessGate {
  private readonly watching: Map<string, { last: IntakeEntry; unchangedSince: number }>;
  private readonly pollMs: number;
  private reports = 0;
  /** a batch was handed over: what the run did with it took time, so the rest is looked at again before any is judged */
  private handedOver = false;

  constructor(
    private readonly intake: Intake,
    entries: IntakeEntry[],
    private readonly opts: {
      stableForMs: number;
      deadline: number;
      stop?: AbortSignal | undefined;
      onWaiting?: (waiting: GateWaiting) => void;
    },
  ) {
    const now = Date.now();
    this.watching = new Map(entries.map((intakeEntry) => [intakeEntry.name, { last: intakeEntry, unchangedSince: now }]));
    this.pollMs = Math.min(1000, Math.max(100, opts.stableForMs / 3));
  }

  /** whether files are still watched: `next` has more to hand over */
  get open(): boolean {
    return this.watching.size > 0;
  }

  /** The files ready now, waiting (polling their size and mtime) until one is, all are gone, the deadline passes, or a stop. */
  async next(): Promise<GateResult> {
    const result: GateResult = { ready: [], notReady: [], gone: [] };
    if (this.opts.stableForMs <= 0) {
      result.ready = [...this.watching.values()].map((watched) => watched.last);
      this.watching.clear();
      return result;
    }
    if (this.handedOver) await this.look(result);
    this.handedOver = true;
    for (;;) {
      const now = Date.now();
      for (const [name, watched] of this.watching) {
        const mtimeAge = this.intake.mtimeIsLocalClock && now >= watched.last.mtimeMs ? now - watched.last.mtimeMs : 0;
        const quietFor = Math.max(now - watched.unchangedSince, mtimeAge);
        if (quietFor >= this.opts.stableForMs) {
          result.ready.push(watched.last);
          this.watching.delete(name);
        }
      }
      if (result.ready.length > 0 || result.gone.length > 0 || this.watching.size === 0) return result;
      if (now >= this.opts.deadline || this.opts.stop?.aborted) break;
      // a fold, not Math.min(...list): 200,000 files in the intake are more arguments than a call takes
      let soonest = Infinity;
      for (const watched of this.watching.values()) soonest = Math.min(soonest, watched.unchangedSince + this.opts.stableForMs - now);
      this.opts.onWaiting?.({ files: [...this.watching.keys()], remainingMs: Math.max(0, soonest), first: this.reports++ === 0 });
      await sleep(Math.min(this.pollMs, Math.max(0, this.opts.deadline - now)));
      await this.look(result);
    }
    result.notReady = [...this.watching.values()].map((watched) => ({
      entry: watched.last,
      reason: `still changing: size or mtime changed within the last ${this.opts.stableForMs / 1000}s`,
    }));
    this.watching.clear();
    return result;
  }

  /** Each watched file's size and mtime read again: a change starts its quiet time anew; a file gone is gone. */
  private async look(result: GateResult): Promise<void> {
    for (const [name, watched] of this.watching) {
      const current = await this.intake.stat(name);
      if (!current) {
        this.watching.delete(name);
        result.gone.push(watched.last);
      } else if (!sameShape(current, watched.last)) this.watching.set(name, { last: current, unchangedSince: Date.now() });
    }
  }
}

/** The files the gate found ready, less those the server's own log shows still open for writing. */
export interface ServerLogVerdict {
  ready: IntakeEntry[];
  notReady: { entry: IntakeEntry; reason: string; openSince: string }[];
  /** the log could not be read: the files were judged by the other rules alone, and the run says so */
  unread: string | null;
}

/**
 * The second half of the gate, where the partner's transfer log is configured: a file the
 * server shows opened for writing and not closed is not finished, however long it has stood
 * still (a partner's upload paused mid-way). A log that cannot be read does not stop the night:
 * the files go on by the other rules (stable, a whole last record, the trailer, the marker),
 * and the run names the log (its exit status 1) so that someone mends it.
 */
export async function askServerLog(ready: IntakeEntry[], serverLog: ServerLogOfIntake | undefined): Promise<ServerLogVerdict> {
  if (!serverLog || ready.length === 0) return { ready, notReady: [], unread: null };
  const answer = await uploadsHeldOpen(serverLog);
  if (answer.kind === 'unread') return { ready, notReady: [], unread: answer.problem };
  const verdict: ServerLogVerdict = { ready: [], notReady: [], unread: null };
  for (const entry of ready) {
    const open = answer.open.get(entry.name);
    if (open) verdict.notReady.push({ entry, reason: open.reason, openSince: new Date(open.since).toISOString() });
    else verdict.ready.push(entry);
  }
  return verdict;
}
