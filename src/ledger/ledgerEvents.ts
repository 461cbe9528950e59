import type { ClaimRequest, EventInput, MovedFile } from './ledger.js';
import type { FileRow, MoveFailure } from './types.js';

/** The events both ledger stores write, built in one place so that they read the same. */

/** The content's hash in an event's details, when a wrapping (gzip, zip, OpenPGP) makes it differ from the delivered one. */
export function contentDetail(file: { sha256: string; contentSha256?: string | null }): { contentSha256?: string } {
  return file.contentSha256 && file.contentSha256 !== file.sha256 ? { contentSha256: file.contentSha256 } : {};
}

/** `leaseUntil`: the claim's end as the ledger's clock set it. */
export function claimedEvent(req: ClaimRequest, leaseUntil: string | null): EventInput {
  return {
    runId: req.runId,
    event: 'claimed',
    name: req.name,
    sha256: req.sha256,
    details: {
      owner: req.owner,
      leaseUntil,
      ...contentDetail(req),
    },
  };
}

/** A held file or a skipped duplicate, with the content's hash when it differs from the delivered one. */
export function outcomeEvent(
  event: 'held' | 'skipped',
  file: { name: string; sha256: string; runId: string; contentSha256?: string | null },
  details: Record<string, unknown>,
): EventInput {
  return { runId: file.runId, event, name: file.name, sha256: file.sha256, details: { ...details, ...contentDetail(file) } };
}

export function movedEvent(movedFile: MovedFile, location: string, extra: Record<string, unknown> = {}): EventInput {
  return { runId: movedFile.runId, event: 'moved', name: movedFile.name, sha256: movedFile.sha256, details: { to: location, ...extra } };
}

/** A decided file's move that failed, by the run whose move it was; `arrival` tells this upload from a later one. */
export function moveFailedEvent(movedFile: MovedFile, failure: MoveFailure): EventInput {
  return {
    runId: movedFile.runId,
    event: 'move_failed',
    name: movedFile.name,
    sha256: movedFile.sha256,
    details: { ...failure, arrival: movedFile.arrival },
  };
}

/** `recovered` (the finance database has the load) or `expired` (it has not), by the run that settled it. */
export function staleClaimEvent(
  stale: FileRow,
  runId: string,
  to: { state: 'loaded' | 'failed'; rows?: number; reason: string },
): EventInput {
  return {
    // the file's partner, whichever partner's run found its claim stale
    partner: stale.partner,
    runId,
    event: to.state === 'loaded' ? 'recovered' : 'expired',
    name: stale.name,
    sha256: stale.sha256,
    details: {
      reason: to.reason,
      claimRun: stale.runId,
      owner: { host: stale.ownerHost, pid: stale.ownerPid, startedAt: stale.ownerStartedAt },
      leaseUntil: stale.leaseUntil,
      ...(to.rows !== undefined ? { rows: to.rows } : {}),
    },
  };
}

/**
 * How a skip matched its original: the same delivered bytes, or the same content inside other
 * bytes (a re-compressed or re-encrypted resend). Skips record it; for those from before they
 * did, a decoded delivery that met the finance database's file marker is the content's match.
 */
export function sameAsWords(details: Record<string, unknown>): 'same bytes as' | 'same content as' {
  const dup = details.duplicateOf as { source?: string; match?: string } | undefined;
  const content = dup?.match ? dup.match === 'content' : dup?.source === 'finance-database' && typeof details.contentSha256 === 'string';
  return content ? 'same content as' : 'same bytes as';
}
