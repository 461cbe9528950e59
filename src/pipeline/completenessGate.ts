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
  notReady: { entry: IntakeEntry; reason: string }[];
  /** listed, then gone while watched: another run took them, or nobody did (the run asks the ledger) */
  gone: IntakeEntry[];
}

const sameShape = (a: IntakeEntry, b: IntakeEntry) => a.size === b.size && a.mtimeMs === b.mtimeMs;

/**
 * A file is ready when neither its size nor its mtime has changed for `stableForMs`: at
 * once when its mtime (on this host's clock) is already that old, otherwise by polling. Files still changing at
 * `deadline` are left for the next run. Files that vanish are returned as gone.
 */
export async function completenessGate(
  intake: Intake,
  entries: IntakeEntry[],
  opts: { stableForMs: number; deadline: number; stop?: AbortSignal | undefined; onWaiting?: (waiting: GateWaiting) => void },
): Promise<GateResult> {
  if (opts.stableForMs <= 0) return { ready: entries, notReady: [], gone: [] };
  const pollMs = Math.min(1000, Math.max(100, opts.stableForMs / 3));
  const ready: IntakeEntry[] = [];
  const gone: IntakeEntry[] = [];
  const watching = new Map(entries.map((intakeEntry) => [intakeEntry.name, { last: intakeEntry, unchangedSince: Date.now() }]));
  let reports = 0;

  for (;;) {
    const now = Date.now();
    for (const [name, watched] of watching) {
      const mtimeAge = intake.mtimeIsLocalClock && now >= watched.last.mtimeMs ? now - watched.last.mtimeMs : 0;
      const quietFor = Math.max(now - watched.unchangedSince, mtimeAge);
      if (quietFor >= opts.stableForMs) {
        ready.push(watched.last);
        watching.delete(name);
      }
    }
    if (watching.size === 0 || now >= opts.deadline || opts.stop?.aborted) break;
    // a fold, not Math.min(...list): 200,000 files in the intake are more arguments than a call takes
    let soonest = Infinity;
    for (const watched of watching.values()) soonest = Math.min(soonest, watched.unchangedSince + opts.stableForMs - now);
    opts.onWaiting?.({ files: [...watching.keys()], remainingMs: Math.max(0, soonest), first: reports++ === 0 });
    await sleep(Math.min(pollMs, Math.max(0, opts.deadline - now)));
    for (const [name, watched] of watching) {
      const current = await intake.stat(name);
      if (!current) {
        watching.delete(name);
        gone.push(watched.last);
      } else if (!sameShape(current, watched.last)) watching.set(name, { last: current, unchangedSince: Date.now() });
    }
  }
  const notReady = [...watching.values()].map((w) => ({
    entry: w.last,
    reason: `still changing: size or mtime changed within the last ${opts.stableForMs / 1000}s`,
  }));
  return { ready, notReady, gone };
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
