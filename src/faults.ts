import { execSync } from 'node:child_process';

/**
 * Test-only crash points. When SETTLE_TEST_FAULT names a step, the process kills itself
 * with SIGKILL there, so the crash tests exercise real recovery from a real dead process.
 * When SETTLE_TEST_HOOK_AT names it, the shell command SETTLE_TEST_HOOK runs there and the
 * process waits for it, so a test can act at that exact moment (freeze the database backend).
 */
export type FaultStep = 'after-claim' | 'mid-copy' | 'after-commit' | 'before-finalize' | 'after-finalize' | 'mid-move';

export function faultPoint(step: FaultStep): void {
  if (process.env.SETTLE_TEST_FAULT === step) process.kill(process.pid, 'SIGKILL');
  if (process.env.SETTLE_TEST_HOOK_AT === step && process.env.SETTLE_TEST_HOOK) {
    execSync(process.env.SETTLE_TEST_HOOK, { stdio: ['ignore', 2, 2] });
  }
}
