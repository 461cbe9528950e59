import type { Logger } from '../logEvents.js';
import { arrivalOf, type IntakeEntry } from '../intake/intake.js';
import type { IgnoredEntry, RunLedger } from '../ledger/ledger.js';

/** What recording a file left in the intake needs of its run. */
export interface RecordingRun {
  runId: string;
  ledger: RunLedger;
  log: Logger;
}

/**
 * An outcome for a file that was never claimed (not ready, or it could not be staged): it stays
 * in the intake for the next run, as listed. `seen`: what a not-ready file's bytes were, for the
 * next run to tell whether they changed.
 */
export async function recordUnstaged(
  run: RecordingRun,
  entry: IntakeEntry,
  event: 'not_ready' | 'failed',
  reason: string,
  seen: Record<string, unknown> = {},
): Promise<void> {
  const details = { reason, size: entry.size, arrival: arrivalOf(entry), ...seen };
  await run.ledger.record({ runId: run.runId, event, name: entry.name, sha256: null, details });
  const line = event === 'failed' ? `could not stage the file, left in intake: ${reason}` : 'not ready: left for the next run';
  const fields = { file: entry.name, size: entry.size, reason };
  if (event === 'failed') run.log.error({ event: 'failed', ...fields }, line);
  else run.log.warn({ event: 'not-ready', ...fields }, line);
}

/** Listed, then gone: taken by another run (whose move the ledger has), or by nobody, which is said and counted. */
export async function recordVanished(run: RecordingRun, entry: IntakeEntry, answer: string): Promise<void> {
  const move = await run.ledger.moveOfArrival(entry.name, arrivalOf(entry));
  if (move) {
    run.log.info({ event: 'gone', file: entry.name, movedBy: move.runId }, `left the intake before it was read: run ${move.runId} has it`);
    return;
  }
  await recordUnstaged(run, entry, 'failed', `listed, then gone before it could be read, and no run moved it (${answer})`);
}

/** Every entry left alone is counted and named each run; the ledger records a name once, and again only when it changes. */
export async function recordIgnored(run: RecordingRun, entries: IgnoredEntry[]): Promise<void> {
  const fresh = new Set((await run.ledger.recordIgnored(run.runId, entries)).map((ignoredEntry) => ignoredEntry.name));
  for (const entry of entries) {
    const fields = { event: 'ignored' as const, file: entry.name, size: entry.size, reason: entry.reason };
    if (fresh.has(entry.name)) run.log.warn(fields, `ignored: ${entry.reason}`);
    else run.log.info({ ...fields, known: true }, `ignored (as before): ${entry.reason}`);
  }
}
