import type { Logger } from 'pino';
import { staleClaimReason } from '../ledger/staleClaim.js';
import type { RunLedger } from '../ledger/ledger.js';
import { contentOf, type FileRow } from '../ledger/types.js';
import type { FinanceDb } from '../finance/financeDb.js';

/**
 * A claim is stale when its owner on this host is provably gone, or its lease has run out.
 * A stale claim is settled against the finance database's file marker: there → the load
 * happened (finalize as loaded); absent → the claim expired and the content may be claimed.
 */
export async function settleIfStale(
  ledger: RunLedger,
  finance: FinanceDb,
  claim: FileRow,
  runId: string,
  log: Logger,
): Promise<'live' | 'recovered' | 'expired'> {
  const why = staleClaimReason(claim);
  if (why === null) return 'live';
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
