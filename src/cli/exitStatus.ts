import { EXIT_OK, EXIT_PROBLEM } from '../errors.js';
import { ADOPT_PROBLEMS, type AdoptedFile } from '../pipeline/adopt.js';
import type { ReprocessCounts } from '../pipeline/reprocess.js';
import type { IngestFindings } from '../pipeline/runIngest.js';

type RunExit = typeof EXIT_OK | typeof EXIT_PROBLEM;

/**
 * `run`: 1 when a file was rejected or failed, a stale claim was found, a move failed, a file
 * waited too many runs or changed after its move, the transfer log could not be read, this
 * host's clock is off the shared ledger's past the limit, or the run stopped early; each of these is
 * a non-zero count or a reason on the summary line, so exit 1 is never unexplained.
 */
export function runExitStatus(ingestFindings: IngestFindings): RunExit {
  const c = ingestFindings.counts;
  const problem =
    c.rejected > 0 ||
    c.failed > 0 ||
    c.stale > 0 ||
    c.moveFailed > 0 ||
    ingestFindings.abortedBy !== undefined ||
    ingestFindings.waitingTooLong.length > 0 ||
    ingestFindings.changedAfterMove.length > 0 ||
    ingestFindings.transferLogUnread !== undefined ||
    ingestFindings.clockSkew !== undefined;
  return problem ? EXIT_PROBLEM : EXIT_OK;
}

/** `run --reprocess`: 1 when a file could not be reloaded (rejected by today's layout, or failed). */
export function reprocessExitStatus(reprocessCounts: ReprocessCounts): RunExit {
  return reprocessCounts.rejected + reprocessCounts.failed > 0 ? EXIT_PROBLEM : EXIT_OK;
}

/** `adopt`: 1 when a file needs a person (not or partly loaded, unreadable, undecodable, a repeated content, a ledger conflict). */
export function adoptExitStatus(files: AdoptedFile[]): RunExit {
  return files.some((f) => ADOPT_PROBLEMS.includes(f.outcome)) ? EXIT_PROBLEM : EXIT_OK;
}
