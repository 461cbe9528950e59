/**
 * Test-only crash points. When SETTLE_TEST_FAULT names a step, the process kills itself
 * with SIGKILL there, so the crash tests exercise real recovery from a real dead process.
 */
export type FaultStep = 'after-claim' | 'mid-copy' | 'after-commit' | 'before-finalize' | 'after-finalize' | 'mid-move';

export function faultPoint(step: FaultStep): void {
  if (process.env.SETTLE_TEST_FAULT === step) process.kill(process.pid, 'SIGKILL');
}
