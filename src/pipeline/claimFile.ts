import type { Logger } from '../logEvents.js';
import { faultPoint } from '../faults.js';
import { contentDetails } from '../delivery/stagedContent.js';
import { awaitsItsMove, moveDecided, skipDuplicate, type FileInRun } from './moveDecided.js';
import { DESTINATION, type RunContext, type StagedDelivery } from './runContext.js';
import { settleIfStale } from './staleClaims.js';

const CLAIM_ATTEMPTS = 3;

/** What the claim step came to: this run loads the file, or the file's outcome was decided without a load. */
export type ClaimOutcome = 'claimed' | 'decided';

/**
 * 4. CLAIM, for one staged file: the one conditional create in the ledger decides who loads its
 * content (`claimed`: this run, which goes on to load it, loadFile.ts). Before it, an outcome
 * already decided for this very upload finishes its move, and content the ledger loaded from
 * other bytes is a re-wrapped resend; after a lost claim, the holder says whether this is a
 * duplicate (skipped and moved), a twin being loaded (held), or a stale claim to settle and
 * decide again. Each of those is `decided`: recorded, and moved where it is final.
 */
export async function claimFile(run: RunContext, file: FileInRun, staged: StagedDelivery, log: Logger): Promise<ClaimOutcome> {
  const wrapped = contentDetails(staged.content, file.sha256);
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    // An outcome already decided for this very file whose move never happened: finish the move.
    // (This read only finds unfinished moves; whether the file may be loaded, the claim decides.)
    const own = await run.ledger.file(file.name, file.sha256);
    if (own && awaitsItsMove(own, file) && (own.state === 'loaded' || own.state === 'duplicate' || own.state === 'rejected')) {
      log.warn({ event: 'resume-move', state: own.state, decidedBy: own.runId }, `finishing the move of a ${own.state} file`);
      await moveDecided(run, file, staged, DESTINATION[own.state], log, { decidedBy: own.runId });
      return 'decided';
    }

    // content the ledger has loaded from other bytes: a re-wrapped resend (also of content adopted without a file marker)
    const sameContent = file.contentSha256 ? await run.ledger.liveContentHolder(file.contentSha256) : undefined;
    if (sameContent?.state === 'loaded' && sameContent.sha256 !== file.sha256) {
      await skipDuplicate(run, file, staged, sameContent, log, { match: 'content', details: wrapped });
      return 'decided';
    }
    if (await run.ledger.claim({ ...file, owner: run.owner, leaseSeconds: run.claimLeaseSeconds })) {
      log.info({ event: 'claimed', leaseSeconds: run.claimLeaseSeconds }, 'claimed');
      faultPoint('after-claim');
      return 'claimed';
    }
    // an empty file of this very name and bytes, loaded (0 rows) and moved: a same-name resend of it
    const holder = (await run.ledger.liveHolder(file.sha256)) ?? (own?.state === 'loaded' && own.rowCount === 0 ? own : undefined);
    if (!holder) continue; // released between our claim and this read: decide again
    const settled = holder.state === 'claimed' ? await settleIfStale(run.ledger, run.finance, holder, file.runId, run, log) : 'live';
    if (settled === 'recovered' || settled === 'expired') continue; // the stale claim is settled: decide again
    if (holder.state === 'loaded' && holder.name === file.name && awaitsItsMove(holder, file)) {
      continue; // this very file, loaded by another run that has not moved it yet: finish the move above
    }
    if (holder.state === 'loaded') {
      await skipDuplicate(run, file, staged, holder, log, { match: 'bytes', details: wrapped });
      return 'decided';
    }
    // claimed by another live run (this very file, or its twin under another name): held, counted, left in the intake
    const why =
      settled === 'untrusted'
        ? `${holder.name === file.name ? 'its' : `its twin ${holder.name}'s`} claim ran out, left to a host whose clock agrees with the ledger's`
        : holder.name === file.name
          ? 'is being loaded by another run'
          : `its twin ${holder.name} is being loaded`;
    await run.ledger.recordHeld(file, { heldFor: { name: holder.name, run: holder.runId }, reason: `${why} (run ${holder.runId})` });
    log.warn({ event: 'held', twin: holder.name, twinRun: holder.runId }, `held: ${why} by run ${holder.runId}`);
    return 'decided';
  }
  const reason = `the claim was contended ${CLAIM_ATTEMPTS} times: left for the next run`;
  await run.ledger.recordHeld(file, { reason });
  log.warn({ event: 'held', reason }, `held: ${reason}`);
  return 'decided';
}
