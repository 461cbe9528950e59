/**
 * The time the ledger, the reports and the delivery checks go by. SETTLE_TEST_NOW (a test hook,
 * like SETTLE_TEST_FAULT, and read only here) sets where this process's clock starts; it runs on
 * from there as the real one does, so a test places runs, loads and checks on the days it is
 * about (a Monday 03:00 in Amsterdam, a holiday) without waiting for them. Unset, it is the
 * system clock. Leases, stability windows and timeouts always use the real clock.
 *
 * Like the fault points of faults.ts, only the test build reads it: scripts/bundle.mjs replaces
 * SETTLE_TEST_SEAMS by `false` in the shipped bundle (the reading is dropped, the clock is the
 * system's) and by `true` in dist/test-package.
 */
declare const SETTLE_TEST_SEAMS: boolean | undefined;

const shiftMs = (() => {
  if (typeof SETTLE_TEST_SEAMS === 'undefined' || !SETTLE_TEST_SEAMS) return 0;
  const start = process.env.SETTLE_TEST_NOW;
  if (start === undefined || start === '') return 0;
  const at = Date.parse(start);
  if (!Number.isFinite(at)) throw new Error(`SETTLE_TEST_NOW=${start} is not a time (ISO 8601)`);
  return at - Date.now();
})();

/** Milliseconds since the epoch, now. */
export const nowMs = (): number => Date.now() + shiftMs;

/** Now, as the ISO 8601 text the ledger keeps. */
export const nowIso = (): string => new Date(nowMs()).toISOString();
