import type { Logger } from '../logEvents.js';
import { leaseRunOut, ownerGoneReason } from '../ledger/staleClaim.js';
import type { RunLedger } from '../ledger/ledger.js';
import { contentOf, type FileRow } from '../ledger/types.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { currentOwner } from '../owner.js';

/** What a run judges another's claim by: the ledger's clock, its --claim-lease, and whether this host's clock may be acted on. */
export interface ClaimJudging {
  claimLeaseSeconds: number;
  /** false when this host's clock is off the ledger's past the limit: a claim is then taken over only from a process of this host that is gone */
  clockTrusted: boolean;
}

/**
/**
 * The runs of this very process that ended on an error or stopped early (their database or
 * ledger gone mid-file): a claim one of them left is nobody's, though its owner, this process,
 * lives on. `watch` runs cycle after cycle in one process, so after its ledger comes back its
 * next run settles its own earlier claim at once instead of waiting out that claim's lease.
 * (A run that ends normally leaves no claim; the set grows by one per such ending.)
 */
const ENDED_HERE = new Set<string>();

export function endedInThisProcess(runId: string): void {
  ENDED_HERE.add(runId);
}

/** Whether a run of this process ended (on an error, or stopped early): its claims and its open record are nobody's. */
export function runEndedHere(runId: string): boolean {
  return ENDED_HERE.has(runId);
}

/** Why a claim is nobody's whatever its lease says: its owner on this host is gone, or it is a claim of this very process's ended run. */
function ownerGone(claim: FileRow): string | null {
  const own = currentOwner();
  const ours = claim.ownerHost === own.host && claim.ownerPid === own.pid && claim.ownerStartedAt === own.startedAt;
  if (ours && runEndedHere(claim.runId)) return `its run ${claim.runId} ended in this very process (pid ${own.pid}) without settling it`;
  return ownerGoneReason(claim);
}

/**
 * A claim is stale when its owner on this host is provably gone, the run of this very process
 * that made it has ended, or its lease no longer holds by the ledger's clock (staleClaim.ts;
 * `ledgerNowMs`: read once for several claims, else now). A stale claim is settled against the
 * finance database's file marker: there → the load happened (finalize as loaded); absent → the
 * claim expired and the content may be claimed. A run whose host clock is off the ledger's
 * settles no claim by its lease (`untrusted`: left as it is).
 */
export async function settleIfStale(
  ledger: RunLedger,
  finance: FinanceDb,
  claim: FileRow,
  runId: string,
  judging: ClaimJudging,
  log: Logger,
  ledgerNowMs?: number,
): Promise<'live' | 'untrusted' | 'recovered' | 'expired'> {
  let why = ownerGone(claim);
  if (why === null) {
    const nowMs = ledgerNowMs ?? (await ledger.ledgerNow());
    why = leaseRunOut(claim.leaseUntil, { nowMs, leaseSeconds: judging.claimLeaseSeconds });
    if (why === null) return 'live';
    if (!judging.clockTrusted) {
      log.warn(
        { event: 'stale-claim-left', claimRun: claim.runId, staleFile: claim.name, reason: why },
        `claim of run ${claim.runId} on ${claim.name}: ${why}; left alone, this host's clock is off the ledger's`,
      );
      return 'untrusted';
    }
  }
  const found = await finance.fileMarker(contentOf(claim));
  // the content's marker from another delivery of it (re-encrypted, re-compressed) is not this claim's load
  const marker = found && (found.deliveredSha256 ?? claim.sha256) === claim.sha256 ? found : null;
  if (marker) {
    if (await ledger.settleStaleClaim(claim, runId, { state: 'loaded', rows: marker.rowCount, reason: why })) {
      log.warn(
        { event: 'recovered', claimRun: claim.runId, staleFile: claim.name, rows: marker.rowCount },
        `stale claim of run ${claim.runId} on ${claim.name}: ${why}; the finance database has its load, finalized as loaded`,
      );
    }
    return 'recovered';
  }
  if (await ledger.settleStaleClaim(claim, runId, { state: 'failed', reason: `claim expired: ${why}` })) {
    log.warn(
      { event: 'expired', claimRun: claim.runId, staleFile: claim.name },
      `stale claim of run ${claim.runId} on ${claim.name}: ${why}; nothing was loaded, claim expired`,
    );
  }
  return 'expired';
}
