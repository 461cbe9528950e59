import type { IngestResult } from '../pipeline/runIngest.js';
import { printable, printableJson } from '../report/printable.js';

/** The one summary line scripts and people read: `run <id> done: loaded=1 skipped=1 …`. */
export function summaryLine(r: IngestResult): string {
  const c = r.counts;
  const counts =
    `loaded=${c.loaded} skipped=${c.skipped} held=${c.held} rejected=${c.rejected} failed=${c.failed} not_ready=${c.notReady} ` +
    `ignored=${c.ignored} stale=${c.stale} move_failed=${c.moveFailed} rows=${c.rows}`;
  const tail = r.abortedBy ? ` (stopped early: ${printable(r.abortedBy)})` : '';
  return `run ${r.runId} ${r.abortedBy ? 'stopped' : 'done'}: ${counts}${tail}`;
}

/** `--json`: the same counts at top level plus one entry per file. */
export function summaryJson(r: IngestResult): string {
  const c = r.counts;
  return printableJson({
    run: r.runId,
    mode: r.mode,
    loaded: c.loaded,
    skipped: c.skipped,
    held: c.held,
    rejected: c.rejected,
    failed: c.failed,
    not_ready: c.notReady,
    ignored: c.ignored,
    stale: c.stale,
    move_failed: c.moveFailed,
    rows: c.rows,
    exit_status: r.exitStatus,
    ...(r.abortedBy ? { stopped_early: r.abortedBy } : {}),
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
