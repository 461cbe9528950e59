import type { LedgerQueries } from '../ledger/ledger.js';
import { staleClaimReason } from '../ledger/staleClaim.js';
import { runOutcomes } from '../ledger/runOutcomes.js';
import type { FileRow } from '../ledger/types.js';
import { filesWaitingTooLong, type WaitingFile } from '../ledger/waitingFiles.js';

/**
 * What monitoring asks of the ledger alone (`status`, the metrics file, `audit`): no finance
 * database, no intake, so that it answers even when those are down.
 */

/**
 * Claims whose owner on this host is provably gone, or whose lease no longer holds by the
 * ledger's clock (`leaseSeconds`: --claim-lease, past which no lease is given): a run died holding them.
 */
export async function staleClaims(ledger: LedgerQueries, partners: string[] | undefined, leaseSeconds: number): Promise<FileRow[]> {
  const claimed = await ledger.filesInState('claimed', partners);
  if (claimed.length === 0) return [];
  const clock = { nowMs: await ledger.ledgerNow(), leaseSeconds };
  return claimed.filter((c) => staleClaimReason(c, clock) !== null);
}

/**
 * The files the latest finished run of the ledger view's partner left in the intake (held, not ready, failed) that have
 * waited there in more than `maxRuns` runs in a row (0: every waiting file, with its streak).
 */
export async function filesWaitingNow(ledger: LedgerQueries, maxRuns: number): Promise<WaitingFile[]> {
  const last = await ledger.latestIngestRun({ successful: false, partner: ledger.partner });
  if (!last) return [];
  return filesWaitingTooLong(ledger, (await runOutcomes(ledger, last.runId)).files, maxRuns);
}
