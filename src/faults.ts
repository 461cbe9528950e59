import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';

/**
 * Test-only injection points. When SETTLE_TEST_FAULT names a step, the process kills itself
 * with SIGKILL there, so the crash tests exercise real recovery from a real dead process.
 * When it is `hook:STEP`, the shell command in SETTLE_TEST_HOOK runs to its end at that step
 * (with SETTLE_TEST_HOOK_FILE naming the file in hand, SETTLE_TEST_HOOK_STEP the step; the
 * variable may name several steps, comma-separated), so a test can place a race exactly:
 * a re-upload, a swap for a symlink, between two given steps. When it is `trace`, each step
 * appends a line `STEP EPOCH_MS` (to the microsecond) to the file SETTLE_TEST_TRACE names: the
 * bench's breakdown of a run's wall time by phase (bench/benchSupport.ts). When it is `fail:STEP`,
 * the step's own failure, which its caller passes as `fail`, happens there (the hash worker's
 * thread ends mid-file), so a test sees what a crash of one part does to the rest. When it is
 * `STEP@N`, the process kills itself the Nth time it reaches STEP (`copy-batch@40`: as the 40th
 * batch of a COPY goes out), so a test places a kill at a chosen moment of a long step, never by
 * time. Unset, nothing happens.
 *
 * Only the test build has them: scripts/bundle.mjs replaces SETTLE_TEST_SEAMS by `false` in the
 * shipped bundle (dist/bundle/, what `npm pack` ships), which drops faultPoint's body, and by
 * `true` in the test package the suite runs (dist/test-package/). Where it is replaced by
 * nothing (the module per file tsc writes, the sources vitest imports) there are no seams either.
 */
export type FaultStep =
  | 'after-claim'
  | 'mid-copy'
  /** a COPY's rows reached another batch (256 KiB) on their way to the server, and once more at its end; nothing committed yet */
  | 'copy-batch'
  /** a staged load's rows were compared with the rows loaded before and the new ones inserted (finance/stagedLoad.ts); nothing committed yet */
  | 'rows-compared'
  /** a staged load's plain insert met a key another load committed meanwhile; its rows are about to go in again with ON CONFLICT DO NOTHING (finance/stagedLoad.ts) */
  | 'insert-retried'
  | 'after-commit'
  | 'before-finalize'
  /** the outcome and the move it asks for are committed (one transaction); the file is still in the intake */
  | 'after-finalize'
  | 'mid-move'
  /** the intake is about to be listed */
  | 'before-list'
  /** the file was listed (and found stable) and is about to be opened for staging */
  | 'before-open'
  /** a local file's first chunk was read and handed to its hash (to the worker's ring for a large file, src/pipeline/hashWorker.ts); `fail:mid-hash` ends the worker's thread there */
  | 'mid-hash'
  /** the file's bytes were read to their end, staged, hashed and decoded; it is still open */
  | 'after-download'
  /** the file is staged and was still in the intake at the end of its read; the ledger is about to decide it (its claim) */
  | 'before-claim'
  /** the file's outcome is final and its name is about to leave the intake */
  | 'before-move'
  /** (SFTP) the intake name was looked at and its landing name chosen: the RENAME onto it is about to be sent */
  | 'before-rename'
  /** the file has left the intake; the ledger does not know where it went yet */
  | 'after-move'
  /** the ledger has recorded the move */
  | 'after-move-record'
  /** a partner's run is over and its partner lease (a ledger several hosts share) is about to be released */
  | 'before-lease-release'
  /** a report's file (the metrics file, the deliveries page, a file of an evidence pack) was checked and is about to be written */
  | 'before-write'
  /** a long answer (`audit`'s, a batch of 64 Ki characters at a time, cli/streamedOutput.ts) is about to go to stdout: `audit-output@2` kills it after the first */
  | 'audit-output';

declare const SETTLE_TEST_SEAMS: boolean | undefined;

/** How often this process reached each step, for `STEP@N`. */
const passages = new Map<string, number>();

export function faultPoint(step: FaultStep, file?: string, fail?: () => void): void {
  if (typeof SETTLE_TEST_SEAMS === 'undefined' || !SETTLE_TEST_SEAMS) return;
  const fault = process.env.SETTLE_TEST_FAULT;
  if (fault === undefined) return;
  if (fault === 'trace') {
    appendFileSync(process.env.SETTLE_TEST_TRACE ?? '/dev/null', `${step} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
    return;
  }
  // several steps, comma-separated: `hook:mid-copy,hook:after-commit` (the hook tells them apart by
  // SETTLE_TEST_HOOK_STEP); `STEP@N`: killed at the step's Nth passage
  const steps = fault.split(',');
  if (steps.includes(step)) process.kill(process.pid, 'SIGKILL');
  const counted = steps.find((s) => s.startsWith(`${step}@`));
  if (counted !== undefined) {
    const passage = (passages.get(step) ?? 0) + 1;
    passages.set(step, passage);
    if (passage === Number(counted.slice(step.length + 1))) process.kill(process.pid, 'SIGKILL');
  }
  if (steps.includes(`fail:${step}`)) fail?.();
  if (steps.includes(`hook:${step}`)) {
    // stdout carries the run's results (--json): the hook must not write into it
    const hook = spawnSync('/bin/sh', ['-c', process.env.SETTLE_TEST_HOOK ?? ''], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, SETTLE_TEST_HOOK_FILE: file ?? '', SETTLE_TEST_HOOK_STEP: step },
    });
    if (hook.status !== 0) throw new Error(`test hook at ${step} failed (status ${hook.status})`);
  }
}
