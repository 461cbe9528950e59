import { formatDuration, parseDuration } from './durations.js';

/**
 * This host's clock: what the reports, the delivery checks and the SQLite ledger (one host's)
 * go by. Stability windows and timeouts measure spans with `Date.now()` and never read a time
 * from here. A PostgreSQL ledger keeps the server's clock instead (`ledger_now()` in each
 * statement, src/ledger/sqlPort.ts): several hosts compare its times, never their own.
 *
 * Two test hooks, like SETTLE_TEST_FAULT read only here, and only by the test build:
 * - SETTLE_TEST_NOW (an ISO time) places the whole world there, this host and the database
 *   servers it reads the time of (the ledger's `now()`, doctor's clock check: CLOCK_SHIFT_MS),
 *   and runs on from there as the real clock does, so that a test places runs, loads and checks on
 *   the days they are about (a Monday 03:00 in Amsterdam, a holiday) without waiting for them;
 * - SETTLE_TEST_CLOCK_SKEW (a duration, `3h`, `-10m`, `365d`) sets this host's clock alone that
 *   far off the world's: a host whose clock is wrong, beside others and the ledger's server.
 * scripts/bundle.mjs replaces SETTLE_TEST_SEAMS by `false` in the shipped bundle (the reading is
 * dropped, the clock is the system's) and by `true` in dist/test-package.
 */
declare const SETTLE_TEST_SEAMS: boolean | undefined;

const seams = typeof SETTLE_TEST_SEAMS !== 'undefined' && SETTLE_TEST_SEAMS;

function testShift(): number {
  const start = process.env.SETTLE_TEST_NOW;
  if (start === undefined || start === '') return 0;
  const at = Date.parse(start);
  if (!Number.isFinite(at)) throw new Error(`SETTLE_TEST_NOW=${start} is not a time (ISO 8601)`);
  return at - Date.now();
}

function testSkew(): number {
  const text = process.env.SETTLE_TEST_CLOCK_SKEW?.trim();
  if (text === undefined || text === '') return 0;
  const negative = text.startsWith('-');
  const seconds = parseDuration(negative ? text.slice(1) : text);
  if (seconds === null) throw new Error(`SETTLE_TEST_CLOCK_SKEW=${text} is not a duration (3h, -10m, 365d)`);
  return (negative ? -seconds : seconds) * 1000;
}

/**
 * How far the test build moved the world from the real time (SETTLE_TEST_NOW): a database
 * server's clock, read by this process, is read that far on too. 0 in the shipped build.
 */
export const CLOCK_SHIFT_MS = seams ? testShift() : 0;

const skewMs = seams ? testSkew() : 0;

/** Milliseconds since the epoch, now, by this host's clock. */
export const nowMs = (): number => Date.now() + CLOCK_SHIFT_MS + skewMs;

/** Now, as the ISO 8601 text the ledger keeps. */
export const nowIso = (): string => new Date(nowMs()).toISOString();

/**
 * How far this host's clock may stand off a database server's (the shared ledger's, the finance
 * database's) before every run says so and takes no other host's lease or claim, and `doctor`
 * fails its clock check. NTP keeps hosts within milliseconds; 5 s is a clock that is not kept.
 */
export const CLOCK_SKEW_LIMIT_SECONDS = 5;

/** This host's clock against a server's: seconds ahead (negative: behind), and whether it is past the limit. */
export interface ClockSkew {
  seconds: number;
  /** off by more than CLOCK_SKEW_LIMIT_SECONDS */
  skewed: boolean;
  /** the server's now, by its own clock (ms since the epoch) */
  serverNowMs: number;
}

/** Reads a server's clock (ms since the epoch) between two readings of this host's: the server read its own half-way through. */
export async function measureSkew(serverNow: () => Promise<number>): Promise<ClockSkew> {
  const sent = nowMs();
  const serverNowMs = await serverNow();
  const received = nowMs();
  const seconds = ((sent + received) / 2 - serverNowMs) / 1000;
  return { seconds, skewed: Math.abs(seconds) > CLOCK_SKEW_LIMIT_SECONDS, serverNowMs };
}

/** `12.4 s behind the database server's`, `10800.0 s (3h) ahead of the ledger server's`: a skew as a person reads it. */
export function skewText(skew: Pick<ClockSkew, 'seconds'>, server: string): string {
  const size = Math.abs(skew.seconds);
  const human = size < 60 ? '' : ` (${formatDuration(size, { parts: 2, largest: 'd', daysFrom: 86_400 })})`;
  return `${size.toFixed(1)} s${human} ${skew.seconds >= 0 ? 'ahead of' : 'behind'} ${server}`;
}
