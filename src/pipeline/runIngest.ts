import { rm } from 'node:fs/promises';
import type { Logger } from '../logEvents.js';
import type { ClockSkew } from '../clock.js';
import { SettleError, TransientError, errorMessage, exitStatusOf, type ExitStatus, type RejectError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, NotRegularFileError, arrivalOf, type Intake, type IntakeEntry } from '../intake/intake.js';
import { currentOwner } from '../owner.js';
import { unlink } from '../syncFs.js';
import { claimsTakenOverText, runOutcomes, type RunOutcomes } from '../ledger/runOutcomes.js';
import type { IgnoredEntry, RunLedger } from '../ledger/ledger.js';
import type { RunCounts, RunMode } from '../ledger/types.js';
import { filesWaitingTooLong, type WaitingFile } from '../ledger/waitingFiles.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { removeContent, type StagedContent } from '../delivery/stagedContent.js';
import { classifyName } from '../intake/classifyName.js';
import type { ServerLogOfIntake } from '../transferLog/openUploads.js';
import { askServerLog, CompletenessGate, type ChangingFiles, type GateWaiting } from './completenessGate.js';
import { isConnectionLost } from './connectionLost.js';
import { claimFile } from './claimFile.js';
import { recordIgnored, recordUnstaged, recordVanished, type RecordingRun } from './leftInIntake.js';
import { loadClaimed } from './loadFile.js';
import { filesChangedAfterMove, finishUnfinishedMoves, type ChangedAfterMove, type FileInRun } from './moveDecided.js';
import { moveMarker } from './readyMarker.js';
import type { LoadProgress, RunContext, StagedDelivery } from './runContext.js';
import { stageAndHash, type Staged } from './stageAndHash.js';
import { closeDeadRuns, makeStagingDir, removeDeadStaging, settleStaleClaims } from './startOfRun.js';
import { endedInThisProcess } from './staleClaims.js';
import { judgePausedUpload } from './pausedUpload.js';
import { waitForTrailer } from './trailerGate.js';

/**
 * What a stop of a run says: the signal that asked it (`asked to stop (SIGTERM)`), or the failure
 * that forces it, which the stop carries as its reason (the log file cannot be written: cli/logger.ts).
 */
export function stopWords(reason: unknown): string {
  return reason instanceof Error ? reason.message : `asked to stop (${String(reason ?? 'signal')})`;
}

export interface IngestOptions {
  /** the run, already recorded by the caller (so that a run that cannot start is kept too) */
  runId: string;
  intake: Intake;
  ledger: RunLedger;
  /** bound to the layout the files are read with and whose table they load into */
  finance: FinanceDb;
  pattern: RegExp;
  /** known neighbours in the intake (a README): neither taken nor counted */
  ignore: RegExp[];
  /** the partner's completeness sidecar: NAME is taken only once NAME+suffix exists, and moves with it */
  readyMarker?: string | undefined;
  /** a file still waiting (not ready, held, failed) after this many runs makes the run exit 1 */
  maxWaitingRuns: number;
  /** the SFTP server's own log of uploads into this intake: a file it shows open for writing is not ready */
  serverLog?: ServerLogOfIntake | undefined;
  stableForSeconds: number;
  maxWaitSeconds: number;
  claimLeaseSeconds: number;
  /** this host's clock against a shared ledger's (ledger/ledgerClock.ts): past the limit, the run says so and takes over no other host's claim */
  clockSkew?: ClockSkew | null;
  mode: RunMode;
  stagingRoot: string;
  logger: Logger;
  /** called as rows stream into the database, for a progress line on a terminal */
  onProgress?: (progress: LoadProgress) => void;
  /** called while the completeness gate waits for files to stay unchanged, for a terminal */
  onWaiting?: (waiting: GateWaiting) => void;
  /** called as a file's bytes are read (downloaded, from an SFTP server), for a progress line on a terminal */
  onDownload?: (file: string, bytes: number, size: number) => void;
  /** asks the run to stop after the file in hand (SIGTERM from cron or systemd) */
  stop?: AbortSignal;
  /** how gzip, zip and OpenPGP deliveries are unwrapped; unset: every file is taken as it is */
  decode?: DecodeOptions;
  /** the command layer's rule from what the run found to the exit status the ledger records */
  exitStatusFor: (found: IngestFindings) => 0 | 1;
  /**
   * `watch`: the files its runs saw still being written. A run of watch waits one --stable-for
   * window for such a file, then leaves it in the intake unrecorded for a later cycle, until it
   * has been changing for --max-wait since first seen (then it is not ready, as in any run).
   */
  changingFiles?: ChangingFiles;
}

/** What a finished run found beyond its files' outcomes. */
export interface IngestFindings {
  counts: RunCounts;
  /** set when the run stopped early: the finance database went away, or it was asked to stop */
  abortedBy?: string;
  /** the run stopped early because it was asked to (SIGTERM, SIGINT), and for nothing else */
  stopAsked?: true;
  /** files still in the intake after more than --max-waiting-runs runs */
  waitingTooLong: WaitingFile[];
  /** files that changed where they landed after an earlier run moved them (a stalled upload that resumed) */
  changedAfterMove: ChangedAfterMove[];
  /** the transfer log (--transfer-log) could not be read: why; the files were judged without it */
  transferLogUnread?: string;
  /** this host's clock is off the shared ledger's by more than the limit */
  clockSkew?: ClockSkew;
}

export interface IngestResult extends RunOutcomes, IngestFindings {
  /** as the command layer judged it, and as the ledger's `runs` keeps it (2 only for a run ended by a usage error) */
  exitStatus: ExitStatus;
}

/**
 * A run that could not go on (its intake unreachable, its ledger locked) after it started: the
 * error as it was, and what the run did until then, read back from the ledger, for `--json`.
 */
export class RunEndedError extends SettleError {
  constructor(
    readonly result: IngestResult,
    err: unknown,
  ) {
    super(errorMessage(err), exitStatusOf(err), { cause: (err as { cause?: unknown })?.cause ?? err });
    this.name = 'RunEndedError';
  }
}

/** A run looks at the intake again after its batch, a bounded number of times. */
const MAX_LISTINGS = 10;
/** `watch`: past one --stable-for window, this long more for the gate's last look at a file still being written */
const CHANGING_GRACE_MS = 1000;

/** One run as its steps share it. */
interface IngestRun extends RecordingRun {
  readonly opts: IngestOptions;
  /** what claiming, loading and moving a file share with the run (runContext.ts) */
  readonly ctx: RunContext;
  /** the run's private staging folder, made by its first step */
  stagingDir: string;
  /** the next staging file's number */
  seq: number;
  /** every name listed so far: a later listing takes only new ones */
  readonly lookedAt: Set<string>;
  /** the gate waits no longer than this (--max-wait from the run's start) */
  readonly deadline: number;
  readonly changedAfterMove: ChangedAfterMove[];
  /** the transfer log (--transfer-log) could not be read: why, said once */
  transferLogUnread?: string;
  /** what `abortedBy` says when a stop was asked for (a signal), not forced by a failure */
  stopReason?: string;
}

/**
 * One ingest run, in docs/DESIGN.md's order:
 * list intake → completeness gate → stage + SHA-256 → CLAIM → LOAD → finalize → move,
 * then list again for files that arrived meanwhile. Each step is a function of its own, below in
 * the same order; a file a step leaves in the intake is counted there (leftInIntake.ts).
 */
export async function runIngest(opts: IngestOptions): Promise<IngestResult> {
  const run = beginRun(opts);
  try {
    await settleEarlierRuns(run);
    for (let pass = 0; pass < MAX_LISTINGS && !stopRequested(run); pass++) {
      const listing = await listIntake(run, pass); // 1. list intake
      if (listing.take.length === 0) break;
      const gate = openGate(run, listing); // 2. completeness gate: files handed over as each becomes ready
      let readyInPass = 0;
      while (gate.open && !run.ctx.abortedBy) {
        const ready = await nextReady(run, gate);
        readyInPass += ready.length;
        for (const entry of ready) {
          if (stopRequested(run)) break;
          await takeFile(run, entry); // 3. stage + SHA-256 → 4. CLAIM → 5. LOAD → 6. finalize → 7. move
          if (run.ctx.abortedBy) break; // the database is gone, or a stop was asked for: the rest waits
        }
      }
      // a listing that brought nothing ready ends the run, as a stop does
      if (readyInPass === 0 || run.ctx.abortedBy) break;
    }
  } catch (err) {
    throw await endedEarly(run, err);
  } finally {
    if (run.stagingDir) await rm(run.stagingDir, { recursive: true, force: true });
  }
  return finishIngest(run);
}

/** The run's state before its first step; its start logged. */
function beginRun(opts: IngestOptions): IngestRun {
  const { runId, intake, ledger, finance } = opts;
  const log = opts.logger.child({ run: runId });
  const run: IngestRun = {
    opts,
    runId,
    ledger,
    log,
    ctx: {
      owner: currentOwner(),
      intake,
      ledger,
      finance,
      claimLeaseSeconds: opts.claimLeaseSeconds,
      clockTrusted: opts.clockSkew?.skewed !== true,
      onProgress: opts.onProgress,
      counts: { moveFailures: 0 },
      moveMarker: (name, to) => moveMarker(opts, name, to, run.stagingDir, `m${run.seq++}`, runId, log.child({ file: name })),
    },
    stagingDir: '',
    seq: 0,
    lookedAt: new Set(),
    deadline: Date.now() + opts.maxWaitSeconds * 1000,
    changedAfterMove: [],
  };
  log.info({ event: 'run-started', mode: opts.mode, intake: intake.description }, 'run started');
  return run;
}

/** Before anything new: what earlier runs left behind is settled, whether or not it shows up again. */
async function settleEarlierRuns(run: IngestRun): Promise<void> {
  const { opts, runId, log } = run;
  run.stagingDir = await makeStagingDir(opts.stagingRoot, runId);
  await removeDeadStaging(opts.stagingRoot, run.stagingDir, log);
  await closeDeadRuns(opts.ledger, runId, log);
  await settleStaleClaims(opts.ledger, opts.finance, runId, run.ctx, log);
}

/** Whether the run must stop taking files: a stop asked for (said once, here), or its database gone. */
function stopRequested(run: IngestRun): boolean {
  const { stop } = run.opts;
  if (stop?.aborted && !run.ctx.abortedBy) {
    run.ctx.abortedBy = `${stopWords(stop.reason)}; the files not yet taken wait for the next run`;
    // a stop asked for (a signal), not one forced by a failure (the log file cannot be written)
    if (!(stop.reason instanceof Error)) run.stopReason = run.ctx.abortedBy;
    run.log.warn({ event: 'stopping' }, run.ctx.abortedBy);
  }
  return run.ctx.abortedBy !== undefined;
}

/** One listing of the intake: the names the pattern takes, for the gate, and every name it holds now. */
interface Listing {
  take: IntakeEntry[];
  present: Set<string>;
}

/**
 * 1. List the intake. Each name not looked at yet in this run is judged once (classifyName):
 * taken, not ready (a temporary name, a missing ready marker), ignored (counted), or a known
 * neighbour. The first listing also settles the moves an ended run began and never recorded.
 */
async function listIntake(run: IngestRun, pass: number): Promise<Listing> {
  const { opts, log } = run;
  faultPoint('before-list');
  const listed = await opts.intake.list().catch((err) => {
    if (err instanceof SettleError) throw err;
    throw new TransientError(`cannot list the intake ${opts.intake.description}: ${errorMessage(err)}`, { cause: err });
  });
  // what an ended run began moving and never recorded (the listing has put back what it had captured)
  if (pass === 0) {
    await finishUnfinishedMoves(run.ctx, run.runId, log);
    for (const changed of await filesChangedAfterMove(run.ctx, log)) run.changedAfterMove.push(changed);
  }
  const present = new Set(listed.map((intakeEntry) => intakeEntry.name));
  const fresh = listed.filter((entry) => !run.lookedAt.has(entry.name)).sort((a, b) => a.name.localeCompare(b.name));
  const take: IntakeEntry[] = [];
  const leftAlone: IgnoredEntry[] = [];
  for (const entry of fresh) {
    run.lookedAt.add(entry.name);
    const verdict = entry.notRegular
      ? { kind: 'ignored' as const, reason: `${entry.notRegular}: left untouched` }
      : classifyName(entry.name, opts, present);
    if (verdict.kind === 'take') take.push(entry);
    else if (verdict.kind === 'not_ready') await recordUnstaged(run, entry, 'not_ready', verdict.reason);
    else if (verdict.kind === 'ignored')
      leftAlone.push({ name: entry.name, arrival: arrivalOf(entry), size: entry.size, reason: verdict.reason });
    else log.debug({ event: 'known-neighbour', file: entry.name }, `left alone: ${verdict.reason}`);
  }
  await recordIgnored(run, leftAlone);
  return { take, present };
}

/** 2. The completeness gate over the names to take: it hands them over a batch at a time, as each becomes ready. */
function openGate(run: IngestRun, listing: Listing): CompletenessGate {
  const { opts, log } = run;
  const changing = opts.changingFiles;
  changing?.keepOnly(listing.present);
  return new CompletenessGate(opts.intake, listing.take, {
    stableForMs: opts.stableForSeconds * 1000,
    // watch waits one --stable-for window for a file still being written, then leaves it for a later cycle
    deadline: changing ? Math.min(run.deadline, Date.now() + opts.stableForSeconds * 1000 + CHANGING_GRACE_MS) : run.deadline,
    stop: opts.stop,
    onWaiting: (waiting) => {
      if (waiting.first) {
        const names = waiting.files.slice(0, 3).join(', ') + (waiting.files.length > 3 ? `, and ${waiting.files.length - 3} more` : '');
        log.info(
          { event: 'waiting-stable', files: waiting.files.length, stableFor: opts.stableForSeconds },
          `waiting for ${waiting.files.length} file(s) to stay unchanged for ${opts.stableForSeconds}s (--stable-for): ${names}`,
        );
      }
      opts.onWaiting?.(waiting);
    },
  });
}

/**
 * The gate's next batch, as the run takes it: files still changing at the gate's deadline are not
 * ready, files gone are said, and of the stable ones, those the server's own log shows still open
 * are not ready either (read after the wait: a close logged while the gate watched counts).
 * Returns the files to take: none when a stop was asked for while the gate waited.
 */
async function nextReady(run: IngestRun, gate: CompletenessGate): Promise<IntakeEntry[]> {
  const { opts, log } = run;
  const batch = await gate.next();
  if (stopRequested(run)) return [];
  for (const { entry, reason } of batch.notReady) await leaveChanging(run, entry, reason);
  for (const entry of batch.gone) {
    opts.changingFiles?.forget(entry.name);
    await recordVanished(run, entry, 'it is no longer there');
  }
  for (const entry of batch.ready) opts.changingFiles?.forget(entry.name);
  const asked = await askServerLog(batch.ready, opts.serverLog);
  if (asked.unread !== null && run.transferLogUnread === undefined) {
    run.transferLogUnread = asked.unread;
    log.error(
      { event: 'transfer-log-unread', reason: asked.unread },
      `the transfer log cannot be read, so an upload still open on the server is not told: the files are judged without it: ${asked.unread}`,
    );
  }
  for (const { entry, reason, openSince } of asked.notReady) await recordUnstaged(run, entry, 'not_ready', reason, { openSince });
  return asked.ready;
}

/**
 * A file still changing when the gate's deadline came is not ready; but `watch` leaves one that
 * has been changing for less than --max-wait unrecorded, for a later cycle.
 */
async function leaveChanging(run: IngestRun, entry: IntakeEntry, reason: string): Promise<void> {
  const changing = run.opts.changingFiles;
  const now = Date.now();
  if (changing && now - changing.firstSeen(entry.name, now) < run.opts.maxWaitSeconds * 1000) {
    run.log.info(
      { event: 'still-changing', file: entry.name, size: entry.size },
      'still being written: left for a later cycle of watch, recorded not ready only once it has changed for --max-wait',
    );
    return;
  }
  changing?.forget(entry.name);
  await recordUnstaged(run, entry, 'not_ready', reason);
}

/**
 * 3. to 7. for one file the gate handed over: stage it (one read: a copy, its SHA-256, its content
 * decoded), let the staged content say whether the upload is over, CLAIM it (claimFile.ts) and,
 * claimed, LOAD, finalize and move it (loadFile.ts). A file that goes no further stays in the
 * intake, counted; the staged copy is removed whatever happens.
 */
async function takeFile(run: IngestRun, entry: IntakeEntry): Promise<void> {
  const staged = await stageFile(run, entry); // 3.
  if (staged.kind !== 'staged') return leaveUnstaged(run, entry, staged);
  const { content } = staged;
  const contentSha256 = content.kind === 'content' ? content.sha256 : null;
  const file = { name: entry.name, sha256: staged.sha256, contentSha256, size: staged.size, runId: run.runId, arrival: arrivalOf(entry) };
  const log = run.log.child({ file: entry.name, sha256: staged.sha256, ...(contentSha256 !== staged.sha256 ? { contentSha256 } : {}) });
  try {
    const upload = await uploadOver(run, file, content);
    if (upload.kind === 'wait') return await recordUnstaged(run, entry, 'not_ready', upload.reason, upload.seen);
    faultPoint('before-claim', entry.name);
    const delivery: StagedDelivery = {
      pin: staged.pin,
      stagedPath: staged.path,
      sha256: staged.sha256,
      movingRun: run.runId,
      sample: staged.sample,
      content,
      ...(upload.kind === 'incomplete' ? { refusal: upload.error } : {}),
    };
    if ((await claimFile(run.ctx, file, delivery, log)) === 'claimed') await loadClaimed(run.ctx, file, delivery, log); // 4., then 5. to 7.
  } catch (err) {
    if (!isConnectionLost(err)) throw err;
    run.ctx.abortedBy = `finance database connection lost: ${errorMessage(err)}`;
    log.error({ event: 'db-lost', reason: errorMessage(err) }, run.ctx.abortedBy);
  } finally {
    await removeContent(content, staged.path);
    await unlink(staged.path).catch(() => undefined);
  }
}

/** What staging a file came to: staged, or why it was not (see Staged for a file changed or gone meanwhile). */
type StageOutcome =
  | Staged
  /** the read failed (disk full, an I/O error, a link where a file was listed): the source may be away */
  | { kind: 'unreadable'; reason: string }
  /** read whole, but its wrapping could not be decoded (not a refusal of its content: it waits for the next run) */
  | { kind: 'undecodable'; reason: string };

/** 3. Stage + SHA-256: one read of the pinned file into the staging folder, hashed and decoded as it goes (stageAndHash.ts). */
async function stageFile(run: IngestRun, entry: IntakeEntry): Promise<StageOutcome> {
  const { opts } = run;
  const onRead = opts.onDownload && ((bytes: number) => opts.onDownload!(entry.name, bytes, entry.size));
  const staged = await stageAndHash(opts.intake, entry, run.stagingDir, run.seq++, opts.decode, onRead).catch((err): StageOutcome => {
    if (err instanceof FileGoneError) return { kind: 'gone', answer: err.message };
    // a link, FIFO or device where a file was listed: refused as it is, never read
    if (err instanceof NotRegularFileError) return { kind: 'unreadable', reason: err.message };
    // disk full, an I/O error on the intake: nothing was claimed; the file waits for the next run
    return { kind: 'unreadable', reason: `staging failed: ${errorMessage(err)}` };
  });
  if (staged.kind === 'staged' && staged.content.kind === 'failed') {
    await unlink(staged.path).catch(() => undefined);
    return { kind: 'undecodable', reason: staged.content.reason };
  }
  return staged;
}

/** A file the stage step could not take: left in the intake and counted, as its outcome says. */
async function leaveUnstaged(run: IngestRun, entry: IntakeEntry, outcome: Exclude<StageOutcome, { kind: 'staged' }>): Promise<void> {
  if (outcome.kind === 'gone') return recordVanished(run, entry, outcome.answer);
  if (outcome.kind === 'changed') return recordUnstaged(run, entry, 'not_ready', outcome.reason);
  await recordUnstaged(run, entry, 'failed', outcome.reason);
  // a source that stays away ends the run here, with one line (a run asked to stop ends anyway)
  if (outcome.kind === 'unreadable' && !stopRequested(run)) await run.opts.intake.ensureReachable();
}

/** What the staged content says of its upload: over (go on), still going (wait), or stopped for good (claimed and rejected). */
type UploadVerdict =
  { kind: 'over' } | { kind: 'wait'; reason: string; seen?: Record<string, unknown> } | { kind: 'incomplete'; error: RejectError };

/**
 * The gate's last word, on the staged content: a plain file whose last record is cut short is an
 * upload paused mid-line (a wrapped one is whole or not by its own framing), and a layout's
 * trailer or total records are looked for in the content, not in its wrapping.
 */
async function uploadOver(run: IngestRun, file: FileInRun, content: StagedContent): Promise<UploadVerdict> {
  if (content.kind !== 'content') return { kind: 'over' };
  const { opts } = run;
  const layout = opts.finance.layout;
  if (content.layers.length === 0) {
    const paused = await judgePausedUpload(opts.ledger, layout, { ...file, contentPath: content.path }, opts.maxWaitingRuns);
    if (paused?.kind === 'wait') {
      return { kind: 'wait', reason: paused.reason, seen: { stoppedMidLine: paused.line, stagedSha256: paused.seenAs.stagedSha256 } };
    }
    if (paused) return paused;
  }
  const missing = await waitForTrailer(opts.ledger, layout, file.name, content.path, opts.maxWaitingRuns);
  return missing ? { kind: 'wait', reason: missing } : { kind: 'over' };
}

/**
 * The run's end: its counts read back from the ledger, the files waiting too long named, its exit
 * status judged (by the command layer's rule) and recorded with why it stopped early, if it did.
 */
async function finishIngest(run: IngestRun): Promise<IngestResult> {
  const { opts, ctx, runId, log } = run;
  // stopped early (its database gone mid-file): a claim it could not release is settled by this process's next run at once
  if (ctx.abortedBy) endedInThisProcess(runId);
  const outcomes = await runOutcomes(opts.ledger, runId);
  const counts = { ...outcomes.counts, moveFailed: ctx.counts.moveFailures };
  const waitingTooLong = await filesWaitingTooLong(opts.ledger, outcomes.files, opts.maxWaitingRuns);
  for (const waitingFile of waitingTooLong) {
    log.error(
      { event: 'waiting-too-long', file: waitingFile.name, runs: waitingFile.runs, since: waitingFile.since },
      `still in the intake after ${waitingFile.runs} runs (since ${waitingFile.since}): ${waitingFile.outcome}`,
    );
  }
  const found: IngestFindings = {
    counts,
    waitingTooLong,
    changedAfterMove: run.changedAfterMove,
    ...(ctx.abortedBy ? { abortedBy: ctx.abortedBy } : {}),
    ...(ctx.abortedBy !== undefined && ctx.abortedBy === run.stopReason ? { stopAsked: true as const } : {}),
    ...(run.transferLogUnread !== undefined ? { transferLogUnread: run.transferLogUnread } : {}),
    ...(opts.clockSkew?.skewed ? { clockSkew: opts.clockSkew } : {}),
  };
  const exitStatus = opts.exitStatusFor(found);
  // the run's row says why it stopped early, and which of its claims another run took over (its summary line says the same)
  const notes = [
    ...(ctx.abortedBy ? [ctx.abortedBy] : []),
    ...(outcomes.claimsTakenOver.length > 0 ? [claimsTakenOverText(outcomes.claimsTakenOver)] : []),
  ];
  await opts.ledger.finishRun(runId, counts, exitStatus, { status: 'finished', ...(notes.length > 0 ? { reason: notes.join('; ') } : {}) });
  log.info({ event: 'run-finished', ...counts, exitStatus }, 'run finished');
  return { ...outcomes, ...found, exitStatus };
}

/**
 * The run cannot go on (intake unlistable, ledger locked): its record still closed if possible,
 * and what it did said. Returns what to throw: the error with the run's result, or the error
 * alone when the ledger cannot say even that (the original error says more than that one would).
 */
async function endedEarly(run: IngestRun, err: unknown): Promise<unknown> {
  const { opts, runId } = run;
  endedInThisProcess(runId);
  let ended: IngestResult | undefined;
  try {
    const outcomes = await runOutcomes(opts.ledger, runId);
    const counts = { ...outcomes.counts, moveFailed: run.ctx.counts.moveFailures };
    await opts.ledger.finishRun(runId, counts, exitStatusOf(err), { status: 'finished', reason: errorMessage(err) });
    const changedAfterMove = run.changedAfterMove;
    ended = { ...outcomes, counts, waitingTooLong: [], changedAfterMove, abortedBy: errorMessage(err), exitStatus: exitStatusOf(err) };
  } catch {
    // the original error says more than this one would
  }
  return ended ? new RunEndedError(ended, err) : err;
}
