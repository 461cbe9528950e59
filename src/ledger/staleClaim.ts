import { ownerIsGone } from '../owner.js';

/**
 * Why a claim is stale, or null while it is live: its owner on this host is provably gone, or
 * its lease has passed (the only sign another host's run died). The one rule for the run, the
 * reports and monitoring.
 */
export function staleClaimReason(
  claim: { ownerHost: string | null; ownerPid: number | null; ownerStartedAt: string | null; leaseUntil: string | null },
  now = Date.now(),
): string | null {
  if (ownerIsGone({ host: claim.ownerHost, pid: claim.ownerPid, startedAt: claim.ownerStartedAt })) {
    return `its owner (pid ${claim.ownerPid} on ${claim.ownerHost}) is gone`;
  }
  if (claim.leaseUntil !== null && Date.parse(claim.leaseUntil) < now) return `its lease ran out at ${claim.leaseUntil}`;
  return null;
}
