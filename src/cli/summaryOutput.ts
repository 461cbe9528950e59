import type { IngestResult } from '../pipeline/runIngest.js';
import { printable } from '../report/printable.js';
import { COUNT_FIELDS, countsText } from '../report/runCounts.js';
import { jsonDocument } from './jsonOutput.js';

/**
 * The one summary line scripts and people read: `run <id> done: loaded=1 skipped=1 …`. Exit 1
 * must always be explained on it: a non-zero count, or a tail naming what stopped the run
 * or which files have waited in the intake too long. A tail also names the moves this run
 * finished for earlier runs, which no count holds.
 */
export function summaryLine(r: IngestResult): string {
  const tails = [
    ...(r.abortedBy ? [`stopped early: ${r.abortedBy}`] : []),
    ...(r.waitingTooLong.length > 0 ? [`waiting too long: ${r.waitingTooLong.map((w) => `${w.name} for ${w.runs} runs`).join(', ')}`] : []),
    ...(r.changedAfterMove.length > 0 ? [`changed after its move: ${r.changedAfterMove.map((c) => c.location).join(', ')}`] : []),
    ...(r.finishedMoves.length > 0
      ? [`finished the move of ${r.finishedMoves.map((m) => `${m.name} for run ${m.decidedBy}`).join(', ')}`]
      : []),
  ];
  const tail = tails.map((t) => ` (${printable(t)})`).join('');
  return `run ${r.runId} ${r.abortedBy ? 'stopped' : 'done'}: ${countsText(r.counts)}${tail}`;
}

/** `--json`: the same counts at top level plus one entry per file. */
export function summaryJson(r: IngestResult): string {
  return jsonDocument({
    run: r.runId,
    mode: r.mode,
    ...Object.fromEntries(COUNT_FIELDS.map(([label, key]) => [label, r.counts[key]])),
    exit_status: r.exitStatus,
    ...(r.abortedBy ? { stopped_early: r.abortedBy } : {}),
    waiting_too_long: r.waitingTooLong,
    changed_after_move: r.changedAfterMove,
    finished_moves: r.finishedMoves,
    files: r.files.map((f) => ({
      name: f.name,
      sha256: f.sha256,
      outcome: f.outcome,
      rows: f.rows,
      ...(f.duplicateOf ? { duplicate_of: f.duplicateOf } : {}),
      ...(f.heldFor ? { held_for: f.heldFor } : {}),
      ...(f.error ? { error: f.error } : {}),
    })),
  });
}
