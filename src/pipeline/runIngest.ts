import { rm } from 'node:fs/promises';
import type { Logger } from '../logEvents.js';
import type { ClockSkew } from '../clock.js';
import { SettleError, TransientError, errorMessage, exitStatusOf, type ExitStatus } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, NotRegularFileError, type Intake, type IntakeEntry } from '../intake/intake.js';
import { currentOwner } from '../owner.js';
import { unlink } from '../syncFs.js';
import { claimsTakenOverText, runOutcomes, type RunOutcomes } from '../ledger/runOutcomes.js';
import type { IgnoredEntry, RunLedger } from '../ledger/ledger.js';
import type { RunCounts, RunMode } from '../ledger/types.js';
import { filesWaitingTooLong, type WaitingFile } from '../ledger/waitingFiles.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { removeContent } from '../delivery/stagedContent.js';
import { classifyName } from '../intake/classifyName.js';
import type { ServerLogOfIntake } from '../transferLog/openUploads.js';
import { askServerLog, CompletenessGate, type ChangingFiles, type GateWaiting } from './completenessGate.js';
import { isConnectionLost } from './connectionLost.js';
import { decideFile } from './decideFile.js';
import { filesChangedAfterMove, finishUnfinishedMoves, type ChangedAfterMove } from './moveDecided.js';
import { moveMarker } from './readyMarker.js';
import type { LoadProgress, RunContext } from './runContext.js';
import { stageAndHash } from './stageAndHash.js';
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

/**
 * One ingest run, in docs/DESIGN.md's order:
 * list intake → completeness gate → stage + SHA-256 → CLAIM → LOAD → finalize → move,
 * then list again for files that arrived meanwhile.
 */
export async function runIngest(opts: IngestOptions): Promise<IngestResult> {
  const { runId, intake, ledger, finance } = opts;
  const log = opts.logger.child({ run: runId });
  let stagingDir = '';
  let seq = 0;
  const run: RunContext = {
    owner: currentOwner(),
    intake,
    ledger,
    finance,
    claimLeaseSeconds: opts.claimLeaseSeconds,
    clockTrusted: opts.clockSkew?.skewed !== true,
    onProgress: opts.onProgress,
    counts: { moveFailures: 0 },
    moveMarker: (name, to) => moveMarker(opts, name, to, stagingDir, `m${seq++}`, runId, log.child({ file: name })),
  };
  log.info({ event: 'run-started', mode: opts.mode, intake: intake.description }, 'run started');

  const lookedAt = new Set<string>();
  const deadline = Date.now() + opts.maxWaitSeconds * 1000;
  const changedAfterMove: ChangedAfterMove[] = [];
  let transferLogUnread: string | undefined;
  /** what abortedBy says when a stop was asked for */
  let stopReason: string | undefined;

  // an outcome for a file that was never hashed: it stays in the intake for the next run, as listed
  // (size:mtime: `audit --transfer-log` tells it from a later upload of the same size by it)
  // (`seen`: what a not-ready file's bytes were, for the next run to tell whether they changed)
  const unstaged = async (entry: IntakeEntry, event: 'not_ready' | 'failed', reason: string, seen: Record<string, unknown> = {}) => {
    const details = { reason, size: entry.size, arrival: `${entry.size}:${entry.mtimeMs}`, ...seen };
    await ledger.record({ runId, event, name: entry.name, sha256: null, details });
    const line = event === 'failed' ? `could not stage the file, left in intake: ${reason}` : 'not ready: left for the next run';
    const fields = { file: entry.name, size: entry.size, reason };
    if (event === 'failed') log.error({ event: 'failed', ...fields }, line);
    else log.warn({ event: 'not-ready', ...fields }, line);
  };
  // listed, then gone: taken by another run (whose move the ledger has), or by nobody, which is said
  const vanished = async (entry: IntakeEntry, answer: string) => {
    const move = await ledger.moveOfArrival(entry.name, `${entry.size}:${entry.mtimeMs}`);
    if (move) {
      log.info({ event: 'gone', file: entry.name, movedBy: move.runId }, `left the intake before it was read: run ${move.runId} has it`);
      return;
    }
    await unstaged(entry, 'failed', `listed, then gone before it could be read, and no run moved it (${answer})`);
  };
  // every entry left alone is counted and named each run; the ledger records a name once, and again only when it changes
  const ignored = async (entries: IgnoredEntry[]) => {
    const fresh = new Set((await ledger.recordIgnored(runId, entries)).map((ignoredEntry) => ignoredEntry.name));
    for (const e of entries) {
      const fields = { event: 'ignored' as const, file: e.name, size: e.size, reason: e.reason };
      if (fresh.has(e.name)) log.warn(fields, `ignored: ${e.reason}`);
      else log.info({ ...fields, known: true }, `ignored (as before): ${e.reason}`);
    }
  };

  try {
    // before anything new: what earlier runs left behind is settled, whether or not it shows up again
    stagingDir = await makeStagingDir(opts.stagingRoot, runId);
    await removeDeadStaging(opts.stagingRoot, stagingDir, log);
    await closeDeadRuns(ledger, runId, log);
    await settleStaleClaims(ledger, finance, runId, run, log);

    const stopRequested = () => {
      if (opts.stop?.aborted && !run.abortedBy) {
        run.abortedBy = `${stopWords(opts.stop.reason)}; the files not yet taken wait for the next run`;
        // a stop asked for (a signal), not one forced by a failure (the log file cannot be written)
        if (!(opts.stop.reason instanceof Error)) stopReason = run.abortedBy;
        log.warn({ event: 'stopping' }, run.abortedBy);
      }
      return run.abortedBy !== undefined;
    };
    /** 3. to 6. for each file the gate handed over: stage, claim, load, move; ended early when the run stops */
    const takeReady = async (entries: IntakeEntry[]): Promise<void> => {
      for (const entry of entries) {
        if (stopRequested()) return;
        const flog = log.child({ file: entry.name });
        // 3. stage + SHA-256 (+ decode)
        const onRead = opts.onDownload && ((bytes: number) => opts.onDownload!(entry.name, bytes, entry.size));
        const staged = await stageAndHash(intake, entry, stagingDir, seq++, opts.decode, onRead).catch((err) => {
          if (err instanceof FileGoneError) return { kind: 'gone' as const, answer: err.message };
          // a link, FIFO or device where a file was listed: refused as it is, never read
          if (err instanceof NotRegularFileError) return { kind: 'unreadable' as const, reason: err.message };
          // disk full, an I/O error on the intake: nothing was claimed; the file waits for the next run
          return { kind: 'unreadable' as const, reason: `staging failed: ${errorMessage(err)}` };
        });
        if (staged.kind === 'unreadable') {
          await unstaged(entry, 'failed', staged.reason);
          if (stopRequested()) return;
          await intake.ensureReachable(); // a source that stays away ends the run here, with one line
          continue;
        }
        if (staged.kind === 'gone') {
          await vanished(entry, staged.answer);
          continue;
        }
        if (staged.kind === 'changed') {
          await unstaged(entry, 'not_ready', staged.reason);
          continue;
        }
        // the content inside the delivered bytes (gzip, zip, OpenPGP), decoded and hashed as they were read
        const { content } = staged;
        if (content.kind === 'failed') {
          await unlink(staged.path).catch(() => undefined);
          await unstaged(entry, 'failed', content.reason);
          continue;
        }
        const contentSha256 = content.kind === 'content' ? content.sha256 : null;
        const arrival = `${entry.size}:${entry.mtimeMs}`;
        const file = { name: entry.name, sha256: staged.sha256, contentSha256, size: staged.size, runId, arrival };
        const slog = flog.child({ sha256: staged.sha256, ...(contentSha256 !== staged.sha256 ? { contentSha256 } : {}) });
        try {
          // a plain file's last record cut short: an upload paused mid-line (a wrapped one is whole or not by its own framing)
          const paused =
            content.kind === 'content' && content.layers.length === 0
              ? await judgePausedUpload(ledger, finance.layout, { ...file, contentPath: content.path }, opts.maxWaitingRuns)
              : undefined;
          if (paused?.kind === 'wait') {
            await unstaged(entry, 'not_ready', paused.reason, { stoppedMidLine: paused.line, stagedSha256: paused.seenAs.stagedSha256 });
            continue;
          }
          // a trailer is looked for in the content, not in its wrapping
          const incomplete =
            content.kind === 'content' && !paused
              ? await waitForTrailer(ledger, finance.layout, entry.name, content.path, opts.maxWaitingRuns)
              : null;
          if (incomplete) {
            await unstaged(entry, 'not_ready', incomplete);
            continue;
          }
          faultPoint('before-claim', entry.name);
          await decideFile(
            run,
            file,
            {
              pin: staged.pin,
              stagedPath: staged.path,
              sha256: staged.sha256,
              movingRun: runId,
              sample: staged.sample,
              content,
              ...(paused ? { refusal: paused.error } : {}),
            },
            slog,
          );
        } catch (err) {
          if (!isConnectionLost(err)) throw err;
          run.abortedBy = `finance database connection lost: ${errorMessage(err)}`;
          slog.error({ event: 'db-lost', reason: errorMessage(err) }, run.abortedBy);
        } finally {
          await removeContent(content, staged.path);
          await unlink(staged.path).catch(() => undefined);
        }
        if (run.abortedBy) return; // the database is gone, or a stop was asked for: the rest waits
      }
    };
    listing: for (let pass = 0; pass < MAX_LISTINGS && !stopRequested(); pass++) {
      // 1. list the intake: the pattern, minus in-progress and already-seen names
      faultPoint('before-list');
      const listed = await intake.list().catch((err) => {
        if (err instanceof SettleError) throw err;
        throw new TransientError(`cannot list the intake ${intake.description}: ${errorMessage(err)}`, { cause: err });
      });
      // what an ended run began moving and never recorded (the listing has put back what it had captured)
      if (pass === 0) {
        await finishUnfinishedMoves(run, runId, log);
        for (const changed of await filesChangedAfterMove(run, log)) changedAfterMove.push(changed);
      }
      const present = new Set(listed.map((intakeEntry) => intakeEntry.name));
      const fresh = listed.filter((e) => !lookedAt.has(e.name)).sort((a, b) => a.name.localeCompare(b.name));
      const safe: IntakeEntry[] = [];
      const leftAlone: IgnoredEntry[] = [];
      for (const entry of fresh) {
        lookedAt.add(entry.name);
        const verdict = entry.notRegular
          ? { kind: 'ignored' as const, reason: `${entry.notRegular}: left untouched` }
          : classifyName(entry.name, opts, present);
        if (verdict.kind === 'take') safe.push(entry);
        else if (verdict.kind === 'not_ready') await unstaged(entry, 'not_ready', verdict.reason);
        else if (verdict.kind === 'ignored') {
          leftAlone.push({ name: entry.name, arrival: `${entry.size}:${entry.mtimeMs}`, size: entry.size, reason: verdict.reason });
        } else log.debug({ event: 'known-neighbour', file: entry.name }, `left alone: ${verdict.reason}`);
      }
      await ignored(leftAlone);
      if (safe.length === 0) break;

      // 2. the completeness gate: files handed over a batch at a time, as each becomes ready
      const changing = opts.changingFiles;
      changing?.keepOnly(present);
      const gate = new CompletenessGate(intake, safe, {
        stableForMs: opts.stableForSeconds * 1000,
        // watch waits one --stable-for window for a file still being written, then leaves it for a later cycle
        deadline: changing ? Math.min(deadline, Date.now() + opts.stableForSeconds * 1000 + CHANGING_GRACE_MS) : deadline,
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
      let readyInPass = 0;
      while (gate.open) {
        const batch = await gate.next();
        if (stopRequested()) break listing;
        for (const { entry, reason } of batch.notReady) {
          const now = Date.now();
          if (changing && now - changing.firstSeen(entry.name, now) < opts.maxWaitSeconds * 1000) {
            log.info(
              { event: 'still-changing', file: entry.name, size: entry.size },
              'still being written: left for a later cycle of watch, recorded not ready only once it has changed for --max-wait',
            );
            continue;
          }
          changing?.forget(entry.name);
          await unstaged(entry, 'not_ready', reason);
        }
        for (const entry of batch.gone) {
          changing?.forget(entry.name);
          await vanished(entry, 'it is no longer there');
        }
        for (const entry of batch.ready) changing?.forget(entry.name);
        // read after the wait: a close logged while the gate watched counts
        const asked = await askServerLog(batch.ready, opts.serverLog);
        if (asked.unread !== null && transferLogUnread === undefined) {
          transferLogUnread = asked.unread;
          log.error(
            { event: 'transfer-log-unread', reason: asked.unread },
            `the transfer log cannot be read, so an upload still open on the server is not told: the files are judged without it: ${asked.unread}`,
          );
        }
        for (const { entry, reason, openSince } of asked.notReady) await unstaged(entry, 'not_ready', reason, { openSince });
        readyInPass += asked.ready.length;
        await takeReady(asked.ready);
        if (run.abortedBy) break listing; // the database is gone, or a stop was asked for: the rest waits
      }
      if (readyInPass === 0) break;
    }
  } catch (err) {
    // the run cannot go on (intake unlistable, ledger locked): still close its record if possible, and say what it did
    endedInThisProcess(runId);
    let ended: IngestResult | undefined;
    try {
      const outcomes = await runOutcomes(ledger, runId);
      const counts = { ...outcomes.counts, moveFailed: run.counts.moveFailures };
      await ledger.finishRun(runId, counts, exitStatusOf(err), { status: 'finished', reason: errorMessage(err) });
      ended = { ...outcomes, counts, waitingTooLong: [], changedAfterMove, abortedBy: errorMessage(err), exitStatus: exitStatusOf(err) };
    } catch {
      // the original error says more than this one would
    }
    throw ended ? new RunEndedError(ended, err) : err;
  } finally {
    if (stagingDir) await rm(stagingDir, { recursive: true, force: true });
  }

  // stopped early (its database gone mid-file): a claim it could not release is settled by this process's next run at once
  if (run.abortedBy) endedInThisProcess(runId);
  const outcomes = await runOutcomes(ledger, runId);
  const counts = { ...outcomes.counts, moveFailed: run.counts.moveFailures };
  const waitingTooLong = await filesWaitingTooLong(ledger, outcomes.files, opts.maxWaitingRuns);
  for (const waitingFile of waitingTooLong) {
    log.error(
      { event: 'waiting-too-long', file: waitingFile.name, runs: waitingFile.runs, since: waitingFile.since },
      `still in the intake after ${waitingFile.runs} runs (since ${waitingFile.since}): ${waitingFile.outcome}`,
    );
  }
  const found: IngestFindings = {
    counts,
    waitingTooLong,
    changedAfterMove,
    ...(run.abortedBy ? { abortedBy: run.abortedBy } : {}),
    ...(run.abortedBy !== undefined && run.abortedBy === stopReason ? { stopAsked: true as const } : {}),
    ...(transferLogUnread !== undefined ? { transferLogUnread } : {}),
    ...(opts.clockSkew?.skewed ? { clockSkew: opts.clockSkew } : {}),
  };
  const exitStatus = opts.exitStatusFor(found);
  // the run's row says why it stopped early, and which of its claims another run took over (its summary line says the same)
  const notes = [
    ...(run.abortedBy ? [run.abortedBy] : []),
    ...(outcomes.claimsTakenOver.length > 0 ? [claimsTakenOverText(outcomes.claimsTakenOver)] : []),
  ];
  await ledger.finishRun(runId, counts, exitStatus, { status: 'finished', ...(notes.length > 0 ? { reason: notes.join('; ') } : {}) });
  log.info({ event: 'run-finished', ...counts, exitStatus }, 'run finished');
  return { ...outcomes, ...found, exitStatus };
}
