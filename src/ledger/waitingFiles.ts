import type { LedgerReads } from './ledger.js';
import type { FileOutcome } from './runOutcomes.js';
import { staleClaimReason } from './staleClaim.js';

/** Outcomes that leave a file in the intake for a later run. */
const WAITING = new Set(['not_ready', 'held', 'failed']);
/** Events after which a name has left the intake (or was taken again from scratch). */
const SETTLED = new Set(['loaded', 'skipped', 'rejected', 'moved', 'recovered']);

export interface WaitingFile {
  name: string;
  outcome: string;
  /** runs in a row, this one included, that left the file waiting */
  runs: number;
  /** when the first of them saw it */
  since: string;
}

/**
 * The runs in a row (of the ledger view's partner) that left `name` waiting in the intake (not ready, held, failed), newest
 * first back to the last time the name was settled, and when the first of them saw it.
 */
export async function runsWaiting(ledger: LedgerReads, name: string): Promise<{ runs: number; since: string }> {
  const runs = new Set<string>();
  let since = '';
  const events = await ledger.eventsFor(name);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    // the same content under another name, or another partner's file of this name, is another file
    if (e.name !== name || e.partner !== ledger.partner) continue;
    if (SETTLED.has(e.event)) break;
    if (WAITING.has(e.event) && e.runId) {
      runs.add(e.runId);
      since = e.at;
    }
  }
  return { runs: runs.size, since };
}

/** What a not-ready event says of the bytes it saw (`unchangedWaits` compares them): size:mtime and their SHA-256. */
export interface SeenAs {
  arrival: string;
  stagedSha256: string;
}

/**
 * The runs in a row (of the ledger view's partner), newest first, that left `name` not ready
 * exactly as it is now: the same size, mtime and SHA-256 of its bytes. Any other event of the
 * name (another shape, held, failed, settled) ends the count: a file that grew since has not
 * stopped, it is still being written.
 */
export async function unchangedWaits(ledger: LedgerReads, name: string, now: SeenAs): Promise<{ runs: number; since: string }> {
  const runs = new Set<string>();
  let since = '';
  const events = await ledger.eventsFor(name);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.name !== name || e.partner !== ledger.partner || !e.runId) continue;
    const same = e.event === 'not_ready' && e.details.arrival === now.arrival && e.details.stagedSha256 === now.stagedSha256;
    if (!same) break;
    runs.add(e.runId);
    since = e.at;
  }
  return { runs: runs.size, since };
}

/** Whether the twin a file is held for is claimed by a run that is live (its owner there, its lease not passed). */
async function twinInHand(ledger: LedgerReads, held: FileOutcome): Promise<boolean> {
  if (!held.heldFor || held.sha256 === null) return false;
  const twin = await ledger.file(held.heldFor.name, held.sha256);
  if (twin?.state !== 'claimed' || twin.runId !== held.heldFor.run) return false;
  // by the ledger's clock; a lease longer than any --claim-lease is judged by the run that settles it, not here
  return staleClaimReason(twin, { nowMs: await ledger.ledgerNow(), leaseSeconds: Number.POSITIVE_INFINITY }) === null;
}

/**
 * Files this run left waiting that have waited in more than `maxRuns` runs in a row: an
 * upload that never finishes, a twin held forever, a file that fails every night, and a name
 * the pattern does not take that nobody moves or names a known neighbour (--ignore). A file held
 * for a twin that a live run is loading right now is in hand, not waiting.
 */
export async function filesWaitingTooLong(ledger: LedgerReads, files: FileOutcome[], maxRuns: number): Promise<WaitingFile[]> {
  const late: WaitingFile[] = [];
  for (const f of files) {
    // held for a twin that a live run is loading (`watch` beside a timer's `run`): in hand, not waiting; its claim's lease bounds it
    if (f.outcome === 'held' && (await twinInHand(ledger, f))) continue;
    const streak = WAITING.has(f.outcome)
      ? await runsWaiting(ledger, f.name)
      : f.outcome === 'ignored'
        ? await ledger.ignoredStreak(f.name)
        : undefined;
    if (streak && streak.runs > maxRuns) late.push({ name: f.name, outcome: f.outcome, runs: streak.runs, since: streak.since });
  }
  return late;
}
