import { CLOCK_SKEW_LIMIT_SECONDS } from '../clock.js';
import { formatDuration } from '../durations.js';
import { ownerIsGone } from '../owner.js';

/**
 * What a lease's end is judged by: the ledger's clock now (its server's on PostgreSQL, never this
 * host's) and the longest lease a run is given (--claim-lease).
 */
export interface LeaseClock {
  /** the ledger's now, ms since the epoch */
  nowMs: number;
  leaseSeconds: number;
}

/** A lease's end as the ledger gives it: ISO text, or `infinity` (PostgreSQL's, which no run writes). */
function endMs(leaseUntil: string): number {
  if (leaseUntil === '-infinity') return -Infinity;
  const at = Date.parse(leaseUntil);
  // `infinity`, or a year JavaScript cannot hold: further than any lease
  return Number.isFinite(at) ? at : Infinity;
}

/**
 * Why a lease (a claim's, a partner's) no longer holds, or null while it does: its end has passed
 * by the ledger's clock, or it lies further ahead than any run is given a lease (the ledger's now
 * plus --claim-lease, and the clock skew allowed): every lease is written as the ledger's now plus
 * --claim-lease, so such a row was written by a clock that was ahead (a host's, before leases were
 * the ledger's) or by hand (`infinity`), and holds nothing, whatever it says. The one rule for the
 * run, the reports and monitoring.
 */
export function leaseRunOut(leaseUntil: string | null, clock: LeaseClock): string | null {
  if (leaseUntil === null) return null;
  const end = endMs(leaseUntil);
  if (end < clock.nowMs) return `its lease ran out at ${leaseUntil}`;
  if (end > clock.nowMs + (clock.leaseSeconds + CLOCK_SKEW_LIMIT_SECONDS) * 1000) {
    const lease = formatDuration(clock.leaseSeconds, { largest: 'd', wholeDaysOnly: true });
    return `its lease runs to ${leaseUntil}, past the ledger's now plus --claim-lease (${lease}), longer than any lease is given`;
  }
  return null;
}

/** Why a claim's owner is provably gone (a process of this host that ended), or null: the one sign that needs no clock. */
export function ownerGoneReason(claim: {
  ownerHost: string | null;
  ownerPid: number | null;
  ownerStartedAt: string | null;
}): string | null {
  if (!ownerIsGone({ host: claim.ownerHost, pid: claim.ownerPid, startedAt: claim.ownerStartedAt })) return null;
  return `its owner (pid ${claim.ownerPid} on ${claim.ownerHost}) is gone`;
}

/**
 * Why a claim is stale, or null while it is live: its owner on this host is provably gone, or
 * its lease no longer holds by the ledger's clock (the only sign another host's run died).
 */
export function staleClaimReason(
  claim: { ownerHost: string | null; ownerPid: number | null; ownerStartedAt: string | null; leaseUntil: string | null },
  clock: LeaseClock,
): string | null {
  return ownerGoneReason(claim) ?? leaseRunOut(claim.leaseUntil, clock);
}
