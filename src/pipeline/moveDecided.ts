import type { Logger } from '../logEvents.js';
import { errorMessage } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, arrivalOf, type DecidedFile, type Intake, type RouteResult } from '../intake/intake.js';
import type { Destination } from '../destination.js';
import type { RunLedger, MoveIntent } from '../ledger/ledger.js';
import { ownerIsGone } from '../owner.js';
import type { FileRow } from '../ledger/types.js';
import { sameAsWords } from '../ledger/ledgerEvents.js';

/** One staged file of a run, as the ledger knows it. */
export interface FileInRun {
  name: string;
  sha256: string;
  /** the SHA-256 of the content inside the delivered bytes (gzip, zip, OpenPGP); null when it could not be decoded */
  contentSha256?: string | null;
  size: number;
  runId: string;
  /** size:mtime as listed: tells this upload from a later resend under the same name */
  arrival: string;
}

/** What moving needs from the run, and what it reports back: moves that failed or found the name replaced. */
export interface MoveContext {
  intake: Intake;
  ledger: RunLedger;
  counts: { moveFailures: number };
  /** after a file left the intake: its ready marker follows it */
  moveMarker?: (name: string, to: Destination) => Promise<void>;
}

const REPLACED =
  'the intake name no longer held the decided file (re-uploaded or still being written): the staged copy was moved, the new upload stays in the intake';

/**
 * 7. The watermark: the file leaves the intake only now that its outcome is final. The move
 * is recorded as intended before it is made, so that a crash between the move and its
 * record is finished by the next run (finishUnfinishedMoves), never lost.
 */
export async function moveDecided(
  ctx: MoveContext,
  file: FileInRun,
  staged: DecidedFile,
  to: Destination,
  log: Logger,
  opts: {
    /** the run that decided the outcome, when an earlier one did (this run finishes its move) */
    decidedBy?: string;
    /** the move was intended with the outcome, in its commit (RunLedger.finalizeClaim) */
    intended?: boolean;
    /** the (name, bytes) row is the loaded original's (a same-name resend): only the move is recorded */
    keepRow?: boolean;
  } = {},
): Promise<void> {
  const { decidedBy } = opts;
  const routed = await route(ctx, file, staged, to, log, opts.intended === true);
  if (routed === null) return;
  if ('failed' in routed) {
    // the outcome stands in the ledger with its intent; the failure beside it, and the next run tries the move again
    await ctx.ledger.recordMoveFailed(file, { to, reason: routed.failed, decidedBy: decidedBy ?? file.runId, outcome: OUTCOME_OF[to] });
    return;
  }
  const earlier = decidedBy !== undefined && decidedBy !== file.runId ? { decidedBy } : {};
  const moved = { ...file, landed: routed.landed };
  if (!(await ctx.ledger.markMoved(moved, routed.location, { ...replacedDetails(routed), ...earlier }, { keepRow: opts.keepRow === true })))
    return;
  faultPoint('after-move-record', file.name);
  log.info({ event: 'moved', to: routed.location, ...earlier }, `moved to ${routed.location}`);
}

/**
 * A row decided for this very upload (same size and mtime; rows from before uploads were
 * kept count as the same) whose file has not been moved yet. A later upload of the same
 * name and bytes is a resend, not this.
 */
export function awaitsItsMove(row: FileRow, file: FileInRun): boolean {
  return row.location === null && (row.arrival === null || row.arrival === file.arrival);
}

/**
 * A skip is recorded together with the move that made it final, and only by the run whose
 * record of that move comes first: two runs that both staged the file, or that raced an
 * archiving run, never both count it.
 */
export async function skipDuplicate(
  ctx: MoveContext,
  file: FileInRun,
  staged: DecidedFile,
  original: FileRow,
  log: Logger,
  /** `match`: the original's delivered bytes, or its content inside other bytes; `details`: the wrapping's */
  how: { match: 'bytes' | 'content'; details: Record<string, unknown> },
): Promise<void> {
  // content identity is the ledger's: the original may be another partner's file
  const duplicateOf = { name: original.name, run: original.runId, partner: original.partner, source: 'ledger', match: how.match };
  const sameName = original.name === file.name;
  // A resend of the same name and bytes shares the archived file's ledger row: only the events record it.
  const ownRow = !sameName || original.sha256 !== file.sha256;
  // counted by an earlier run that could not move it (an own row says so to claimFile; a same-name resend's events say it here)
  const countedBy = ownRow ? undefined : await ctx.ledger.unmovedSkip(file);
  if (countedBy !== undefined) {
    log.warn({ event: 'resume-move', state: 'duplicate', decidedBy: countedBy }, 'finishing the move of a skipped file');
    await moveDecided(ctx, file, staged, 'duplicates', log, { decidedBy: countedBy, keepRow: true });
    return;
  }
  const routed = await route(ctx, file, staged, 'duplicates', log);
  if (routed === null) return;
  if ('failed' in routed) {
    // the skip is decided: counted and named with its failed move, once per upload; the next run finishes the move
    const by = await ctx.ledger.recordUnmovedSkip(file, ownRow, { duplicateOf, ...how.details }, { reason: routed.failed });
    log.warn(
      { event: 'skipped', duplicateOf, moveFailed: routed.failed, decidedBy: by },
      `skipped: ${sameAsWords({ duplicateOf })} ${original.name}, loaded by run ${original.runId}; not moved: ${routed.failed}`,
    );
    return;
  }
  const landed = { ...file, landed: routed.landed };
  if (!(await ctx.ledger.recordSkip(landed, ownRow, routed.location, { duplicateOf, ...how.details }, replacedDetails(routed)))) {
    log.info({ event: 'gone', to: routed.location }, 'another run moved and counted this file');
    return;
  }
  log.warn(
    { event: 'skipped', duplicateOf, to: routed.location },
    `skipped: ${sameAsWords({ duplicateOf })} ${original.name}, loaded by run ${original.runId}${sameName ? ' (same-name resend)' : ''}; moved to ${routed.location}`,
  );
}

/** The history says where the decided bytes came from when the intake name no longer held them. */
function replacedDetails(routed: RouteResult): Record<string, unknown> {
  return routed.replaced ? { bytesFrom: 'staging', intakeNameReplaced: true, reason: REPLACED } : {};
}

/**
 * Moves the file out of the intake; null when another run moved it first; `failed` (counted,
 * for the caller to record with the outcome) when the move failed. A move that found the name
 * replaced by a new upload counts as a move failure too: exit 1.
 */
async function route(
  ctx: MoveContext,
  file: FileInRun,
  staged: DecidedFile,
  to: Destination,
  log: Logger,
  intended = false,
): Promise<(RouteResult & { landed?: string }) | { failed: string } | null> {
  try {
    if (!intended) await ctx.ledger.intendMove(file, to);
    faultPoint('before-move', file.name);
    const routed = await ctx.intake.route(file.name, to, staged).catch(async (err) => {
      if (!(err instanceof FileGoneError) || (await takenByAnotherRun(ctx, file, to, err))) throw err;
      // gone, and no run took it: the decided bytes are kept from the staged copy all the same
      log.error({ event: 'move-vanished', reason: err.message }, `${VANISHED}: ${err.message}`);
      return { location: await ctx.intake.keepStaged(file.name, to, staged), replaced: true };
    });
    faultPoint('after-move', file.name);
    if (!routed.replaced) await ctx.moveMarker?.(file.name, to);
    const landed = await ctx.intake.landedShape(routed.location).catch(() => null);
    if (routed.replaced) {
      ctx.counts.moveFailures++;
      log.error({ event: 'move-replaced', to, location: routed.location }, `${REPLACED}; moved to ${routed.location}`);
    }
    return { ...routed, ...(landed ? { landed } : {}) };
  } catch (err) {
    if (err instanceof FileGoneError) {
      log.info({ event: 'gone' }, 'left the intake before this run could move it: another run has it');
      return null;
    }
    // A decided outcome stands in the ledger with its intent; the next run finishes the move.
    ctx.counts.moveFailures++;
    log.error({ event: 'move-failed', to, reason: errorMessage(err) }, `could not move to ${to}: ${errorMessage(err)}`);
    return { failed: errorMessage(err) };
  }
}

/** What the run decided of a file going to each folder. */
const OUTCOME_OF = { archive: 'loaded', rejected: 'rejected', duplicates: 'skipped' } as const;

const VANISHED = 'the intake name vanished before its move and no run moved it: the staged copy, the decided bytes, is kept instead';

/**
 * Whether a name gone from the intake at its move was taken by another run: the intake saw it
 * (a live capture), the ledger has that run's move of this very upload, or the decided bytes
 * already sit where the move was going (a move begun and not yet recorded).
 */
async function takenByAnotherRun(ctx: MoveContext, f: FileInRun, to: Destination, err: FileGoneError): Promise<boolean> {
  if (err.byAnotherRun) return true;
  // another run's move of this upload, even when this run has recorded its own intent for it since
  if (await ctx.ledger.moveOfArrival(f.name, f.arrival, f.runId)) return true;
  return (await ctx.intake.findLanded(f.name, to, f.sha256, f.size, f.runId)) !== null;
}

/** Whether the run that began a move may still be making it. */
function stillMoving(intent: MoveIntent, runId: string): boolean {
  if (intent.runId === runId) return false;
  return !intent.run.ended && !ownerIsGone({ host: intent.run.host, pid: intent.run.pid, startedAt: 'unknown' });
}

/**
 * At the start of a run: moves that an ended run began and never recorded. A file still in
 * the intake as the same upload is left to this run's own pass (which moves it again); one
 * that already left is looked for where it was going and recorded there by this run (a skip
 * is counted then, and only then). One found nowhere is said loudly: exit 1.
 */
export async function finishUnfinishedMoves(ctx: MoveContext, runId: string, log: Logger): Promise<void> {
  for (const intent of await ctx.ledger.moveIntents()) {
    if (stillMoving(intent, runId)) continue;
    const flog = log.child({ file: intent.name, sha256: intent.sha256 });
    const now = await ctx.intake.stat(intent.name);
    if (now && arrivalOf(now) === intent.arrival) continue; // this run's pass moves it
    const file: FileInRun = { ...intent, runId, size: Number(intent.arrival.split(':')[0]) };
    const location = await ctx.intake.findLanded(intent.name, intent.destination, intent.sha256, file.size, intent.runId);
    if (location === null) {
      ctx.counts.moveFailures++;
      const decided = await ctx.ledger.file(intent.name, intent.sha256);
      const reason = `run ${intent.runId} began moving this file to ${intent.destination} and died; it is neither in the intake nor there`;
      const outcome = OUTCOME_OF[intent.destination];
      await ctx.ledger.recordMoveFailed(file, {
        to: intent.destination,
        reason,
        decidedBy: decided?.runId ?? intent.runId,
        outcome,
        lost: true,
      });
      await ctx.ledger.abandonMoveIntent(file);
      flog.error(
        { event: 'move-lost', to: intent.destination, movingRun: intent.runId },
        `run ${intent.runId} began moving this file to ${intent.destination} and died; it is neither in the intake nor there`,
      );
      continue;
    }
    const own = await ctx.ledger.file(intent.name, intent.sha256);
    const recovered = { recovered: true, movingRun: intent.runId };
    // a skip found by the finance database was counted when it was decided; a ledger skip is counted with its move
    const ownCounted = own?.state === 'duplicate' && own.location === null && own.arrival === intent.arrival;
    // a same-name resend's skip counted by a run whose move failed: its row is the original's, kept as it is
    const countedBy = intent.destination === 'duplicates' && !ownCounted ? await ctx.ledger.unmovedSkip(file) : undefined;
    if (intent.destination !== 'duplicates' || ownCounted || countedBy !== undefined) {
      // a move finished for the run that decided the outcome: counted as such (runOutcomes' finishedMoves)
      const decidedBy = countedBy ?? own?.runId ?? intent.runId;
      if (await ctx.ledger.markMoved(file, location, { ...recovered, decidedBy }, { keepRow: countedBy !== undefined })) {
        flog.warn({ event: 'moved', to: location, ...recovered }, `recorded the move that run ${intent.runId} made: ${location}`);
      }
      continue;
    }
    const original = await ctx.ledger.liveHolder(intent.sha256);
    const duplicateOf = original ? { name: original.name, run: original.runId, partner: original.partner, source: 'ledger' } : undefined;
    const renamed = !(own && own.state === 'loaded');
    if (await ctx.ledger.recordSkip(file, renamed, location, { duplicateOf, ...recovered }, recovered)) {
      flog.warn({ event: 'skipped', to: location, ...recovered }, `recorded the skip that run ${intent.runId} moved: ${location}`);
    }
  }
}

export interface ChangedAfterMove {
  name: string;
  location: string;
  /** the run that moved it there */
  movedBy: string;
}

/**
 * How far back a run looks for files that changed where they landed: the next night's run and
 * the one after (one look per file: over SFTP each is a round trip).
 */
const LANDED_WATCH_HOURS = 48;

/**
 * An upload that stalled longer than the stability window at a line boundary, then resumed,
 * writes into the file after it was loaded and moved: watching cannot prevent that (a ready
 * marker or a trailer can). The files moved in the last two days are looked at again: one whose
 * size or mtime changed where it landed is reported by name, once (exit 1); `audit` keeps
 * reporting it until an operator deals with it.
 */
export async function filesChangedAfterMove(ctx: MoveContext, log: Logger): Promise<ChangedAfterMove[]> {
  const changed: ChangedAfterMove[] = [];
  for (const m of await ctx.ledger.movesSince(LANDED_WATCH_HOURS)) {
    const now = await ctx.intake.landedShape(m.location).catch(() => null);
    if (now === null || now === m.landed) continue; // gone (cleaned up by an operator) or as it landed
    changed.push({ name: m.name, location: m.location, movedBy: m.runId });
    await ctx.ledger.updateLanded(m.location, m.sha256, now);
    log.error(
      { event: 'changed-after-move', file: m.name, location: m.location, movedBy: m.runId, landed: m.landed, now },
      `${m.location} changed after run ${m.runId} moved it there (${m.landed} then, ${now} now): the upload went on after the file was loaded; see the runbook`,
    );
  }
  return changed;
}
