import { rm, unlink } from 'node:fs/promises';
import type pg from 'pg';
import type { Logger } from 'pino';
import { RejectError, SettleError, TransientError, errorMessage, exitStatusOf } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, NotRegularFileError, type DecidedFile, type Destination, type Intake, type IntakeEntry } from '../intake/intake.js';
import { currentOwner } from '../ledger/owner.js';
import { runOutcomes, type RunOutcomes } from '../ledger/runOutcomes.js';
import type { Ledger } from '../ledger/ledger.js';
import type { FileRow, RunCounts, RunMode } from '../ledger/types.js';
import { copyRows } from '../load/copyRows.js';
import type { Layout } from '../load/layout.js';
import { completenessGate } from './completenessGate.js';
import { moveMarker } from './readyMarker.js';
import { sortByName } from './sortByName.js';
import {
  awaitsItsMove,
  filesChangedAfterMove,
  finishUnfinishedMoves,
  moveDecided,
  skipDuplicate,
  type ChangedAfterMove,
  type FileInRun,
  type MoveContext,
} from './moveDecided.js';
import { closeDeadRuns, makeStagingDir, removeDeadStaging, settleStaleClaims } from './startOfRun.js';
import { filesWaitingTooLong, type WaitingFile } from '../ledger/waitingFiles.js';
import { isConnectionLost } from './connectionLost.js';
import { settleIfStale } from './staleClaims.js';
import { stageAndHash } from './stageAndHash.js';
import { contentDetails, removeContent, type StagedContent } from './stagedContent.js';
import type { DecodeOptions } from '../load/decode/decodeSettings.js';
import { waitForTrailer } from './trailerGate.js';

export interface IngestOptions {
  /** the run, already recorded by the caller (so that a run that cannot start is kept too) */
  runId: string;
  intake: Intake;
  ledger: Ledger;
  db: pg.ClientBase;
  schema: string;
  layout: Layout;
  pattern: RegExp;
  /** known neighbours in the intake (a README): neither taken nor counted */
  ignore: RegExp[];
  /** the partner's completeness sidecar: NAME is taken only once NAME+suffix exists, and moves with it */
  readyMarker?: string | undefined;
  /** a file still waiting (not ready, held, failed) after this many runs makes the run exit 1 */
  maxWaitingRuns: number;
  stableForSeconds: number;
  maxWaitSeconds: number;
  claimLeaseSeconds: number;
  mode: RunMode;
  stagingRoot: string;
  logger: Logger;
  /** called as rows stream into the database, for a progress line on a terminal */
  onProgress?: (file: string, rows: number) => void;
  /** asks the run to stop after the file in hand (SIGTERM from cron or systemd) */
  stop?: AbortSignal;
  /** how gzip, zip and OpenPGP deliveries are unwrapped; unset: every file is taken as it is */
  decode?: DecodeOptions;
  /** the command layer's rule from what the run found to the exit status the ledger records */
  exitStatusFor: (found: IngestFindings) => 0 | 1;
}

/** What a finished run found beyond its files' outcomes. */
export interface IngestFindings {
  counts: RunCounts;
  /** set when the run stopped early: the finance database went away, or it was asked to stop */
  abortedBy?: string;
  /** files still in the intake after more than --max-waiting-runs runs */
  waitingTooLong: WaitingFile[];
  /** files that changed where they landed after an earlier run moved them (a stalled upload that resumed) */
  changedAfterMove: ChangedAfterMove[];
}

export interface IngestResult extends RunOutcomes, IngestFindings {
  /** as the command layer judged it, and as the ledger's `runs` keeps it */
  exitStatus: 0 | 1;
}

/** A run looks at the intake again after its batch, a bounded number of times. */
const MAX_LISTINGS = 10;
const CLAIM_ATTEMPTS = 3;

const DESTINATION: Record<'loaded' | 'duplicate' | 'rejected', Destination> = {
  loaded: 'archive',
  duplicate: 'duplicates',
  rejected: 'rejected',
};

/**
 * One ingest run, in DESIGN.md's order:
 * list intake → completeness gate → stage + SHA-256 → CLAIM → LOAD → finalize → move,
 * then list again for files that arrived meanwhile.
 */
export async function runIngest(o: IngestOptions): Promise<IngestResult> {
  const runId = o.runId;
  const log = o.logger.child({ run: runId });
  let stagingDir = '';
  let seq = 0;
  const st: RunState = {
    owner: currentOwner(),
    intake: o.intake,
    ledger: o.ledger,
    counts: { moveFailures: 0 },
    moveMarker: (name, to) => moveMarker(o, name, to, stagingDir, `m${seq++}`, log.child({ file: name })),
  };
  log.info({ event: 'run-started', mode: o.mode, intake: o.intake.description }, 'run started');

  const lookedAt = new Set<string>();
  const deadline = Date.now() + o.maxWaitSeconds * 1000;
  const changedAfterMove: ChangedAfterMove[] = [];

  // an outcome for a file that was never hashed: it stays in the intake for the next run
  const unstaged = async (entry: IntakeEntry, event: 'not_ready' | 'failed', reason: string) => {
    await o.ledger.record({ runId, event, name: entry.name, sha256: null, details: { reason, size: entry.size } });
    const line = event === 'failed' ? `could not stage the file, left in intake: ${reason}` : 'not ready: left for the next run';
    log[event === 'failed' ? 'error' : 'warn']({ event: event.replace('_', '-'), file: entry.name, size: entry.size, reason }, line);
  };
  const ignored = async (entry: IntakeEntry, reason: string) => {
    await o.ledger.record({ runId, event: 'ignored', name: entry.name, sha256: null, details: { reason, size: entry.size } });
    log.warn({ event: 'ignored', file: entry.name, size: entry.size, reason }, `ignored: ${reason}`);
  };

  try {
    // before anything new: what earlier runs left behind is settled, whether or not it shows up again
    stagingDir = await makeStagingDir(o.stagingRoot, runId);
    await removeDeadStaging(o.stagingRoot, stagingDir, log);
    await closeDeadRuns(o.ledger, runId, log);
    await settleStaleClaims(o.ledger, o.db, o.schema, runId, log);

    const stopRequested = () => {
      if (o.stop?.aborted && !st.abortedBy) {
        st.abortedBy = `asked to stop (${String(o.stop.reason ?? 'signal')}); the files not yet taken wait for the next run`;
        log.warn({ event: 'stopping' }, st.abortedBy);
      }
      return st.abortedBy !== undefined;
    };
    listing: for (let pass = 0; pass < MAX_LISTINGS && !stopRequested(); pass++) {
      // 1. list the intake: the pattern, minus in-progress and already-seen names
      faultPoint('before-list');
      const listed = await o.intake.list().catch((err) => {
        if (err instanceof SettleError) throw err;
        throw new TransientError(`cannot list the intake ${o.intake.description}: ${errorMessage(err)}`, { cause: err });
      });
      // what an ended run began moving and never recorded (the listing has put back what it had captured)
      if (pass === 0) {
        await finishUnfinishedMoves(st, runId, log);
        changedAfterMove.push(...(await filesChangedAfterMove(st, log)));
      }
      const present = new Set(listed.map((e) => e.name));
      const fresh = listed.filter((e) => !lookedAt.has(e.name)).sort((a, b) => a.name.localeCompare(b.name));
      const safe: IntakeEntry[] = [];
      for (const entry of fresh) {
        lookedAt.add(entry.name);
        const verdict = entry.notRegular
          ? { kind: 'ignored' as const, reason: `${entry.notRegular}: left untouched` }
          : sortByName(entry.name, o, present);
        if (verdict.kind === 'take') safe.push(entry);
        else if (verdict.kind === 'not_ready') await unstaged(entry, 'not_ready', verdict.reason);
        else if (verdict.kind === 'ignored') await ignored(entry, verdict.reason);
        else log.debug({ event: 'known-neighbour', file: entry.name }, `left alone: ${verdict.reason}`);
      }
      if (safe.length === 0) break;

      // 2. the completeness gate
      const gate = await completenessGate(o.intake, safe, { stableForMs: o.stableForSeconds * 1000, deadline, stop: o.stop });
      if (stopRequested()) break;
      for (const { entry, reason } of gate.notReady) await unstaged(entry, 'not_ready', reason);
      if (gate.ready.length === 0) break;

      for (const entry of gate.ready) {
        if (stopRequested()) break listing;
        const flog = log.child({ file: entry.name });
        // 3. stage + SHA-256 (+ decode)
        const staged = await stageAndHash(o.intake, entry, stagingDir, seq++, o.decode).catch((err) => {
          if (err instanceof FileGoneError) return { kind: 'gone' as const };
          // a link, FIFO or device where a file was listed: refused as it is, never read
          if (err instanceof NotRegularFileError) return { kind: 'unreadable' as const, reason: err.message };
          // disk full, an I/O error on the intake: nothing was claimed; the file waits for the next run
          return { kind: 'unreadable' as const, reason: `staging failed: ${errorMessage(err)}` };
        });
        if (staged.kind === 'unreadable') {
          await unstaged(entry, 'failed', staged.reason);
          await o.intake.ensureReachable(); // a source that stays away ends the run here, with one line
          continue;
        }
        if (staged.kind === 'gone') {
          flog.info({ event: 'gone' }, 'left the intake before it was read: another run has it');
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
          // a trailer is looked for in the content, not in its wrapping
          const incomplete =
            content.kind === 'content' ? await waitForTrailer(o.ledger, o.layout, entry.name, content.path, o.maxWaitingRuns) : null;
          if (incomplete) {
            await unstaged(entry, 'not_ready', incomplete);
            continue;
          }
          await decide(o, file, { pin: staged.pin, stagedPath: staged.path, sha256: staged.sha256, content }, slog, st);
        } catch (err) {
          if (!isConnectionLost(err)) throw err;
          st.abortedBy = `finance database connection lost: ${errorMessage(err)}`;
          slog.error({ event: 'db-lost', reason: errorMessage(err) }, st.abortedBy);
        } finally {
          await removeContent(content, staged.path);
          await unlink(staged.path).catch(() => undefined);
        }
        if (st.abortedBy) break listing; // the database is gone, or a stop was asked for: the rest waits
      }
    }
  } catch (err) {
    // the run cannot go on (intake unlistable, ledger locked): still close its record if possible
    try {
      const counts = { ...(await runOutcomes(o.ledger, runId)).counts, moveFailed: st.counts.moveFailures };
      await o.ledger.finishRun(runId, counts, exitStatusOf(err), { status: 'finished', reason: errorMessage(err) });
    } catch {
      // the original error says more than this one would
    }
    throw err;
  } finally {
    if (stagingDir) await rm(stagingDir, { recursive: true, force: true });
  }

  const outcomes = await runOutcomes(o.ledger, runId);
  const c = { ...outcomes.counts, moveFailed: st.counts.moveFailures };
  const waitingTooLong = await filesWaitingTooLong(o.ledger, outcomes.files, o.maxWaitingRuns);
  for (const w of waitingTooLong) {
    log.error(
      { event: 'waiting-too-long', file: w.name, runs: w.runs, since: w.since },
      `still in the intake after ${w.runs} runs (since ${w.since}): ${w.outcome}`,
    );
  }
  const found: IngestFindings = { counts: c, waitingTooLong, changedAfterMove, ...(st.abortedBy ? { abortedBy: st.abortedBy } : {}) };
  const exitStatus = o.exitStatusFor(found);
  await o.ledger.finishRun(runId, c, exitStatus, { status: 'finished', ...(st.abortedBy ? { reason: st.abortedBy } : {}) });
  log.info({ event: 'run-finished', ...c, exitStatus }, 'run finished');
  return { ...outcomes, ...found, exitStatus };
}

/** The staged delivered bytes (what moves when the intake name was replaced) and the content inside them (what loads). */
type StagedDelivery = DecidedFile & { content: StagedContent };

/** What the per-file steps share with the run beyond the ledger's outcomes. */
interface RunState extends MoveContext {
  owner: ReturnType<typeof currentOwner>;
  abortedBy?: string;
}

/** Claim, load, finalize and move one staged file; or skip, hold, or finish an earlier move. */
async function decide(o: IngestOptions, f: FileInRun, staged: StagedDelivery, log: Logger, st: RunState): Promise<void> {
  const wrapped = contentDetails(staged.content, f.sha256);
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    // An outcome already decided for this very file whose move never happened: finish the move.
    // (This read only finds unfinished moves; whether the file may be loaded, the claim decides.)
    const own = await o.ledger.file(f.name, f.sha256);
    if (own && awaitsItsMove(own, f) && (own.state === 'loaded' || own.state === 'duplicate' || own.state === 'rejected')) {
      log.warn({ event: 'resume-move', state: own.state, decidedBy: own.runId }, `finishing the move of a ${own.state} file`);
      await moveDecided(st, f, staged, DESTINATION[own.state], log);
      return;
    }

    // content the ledger has loaded from other bytes: a re-wrapped resend (also of content adopted without a file marker)
    const sameContent = f.contentSha256 ? await o.ledger.liveContentHolder(f.contentSha256) : undefined;
    if (sameContent?.state === 'loaded' && sameContent.sha256 !== f.sha256) {
      await skipDuplicate(st, f, staged, sameContent, log, { match: 'content', details: wrapped });
      return;
    }
    // 4. CLAIM: one conditional create in the ledger decides who loads this content
    const leaseUntil = new Date(Date.now() + o.claimLeaseSeconds * 1000);
    if (await o.ledger.claim({ ...f, owner: st.owner, leaseUntil })) {
      log.info({ event: 'claimed', leaseUntil }, 'claimed');
      faultPoint('after-claim');
      await loadClaimed(o, f, staged, log, st);
      return;
    }
    // an empty file of this very name and bytes, loaded (0 rows) and moved: a same-name resend of it
    const holder = (await o.ledger.liveHolder(f.sha256)) ?? (own?.state === 'loaded' && own.rowCount === 0 ? own : undefined);
    if (!holder) continue; // released between our claim and this read: decide again
    if (holder.state === 'claimed' && (await settleIfStale(o.ledger, o.db, o.schema, holder, f.runId, log)) !== 'live') {
      continue; // the stale claim is settled: decide again
    }
    if (holder.state === 'loaded' && holder.name === f.name && awaitsItsMove(holder, f)) {
      continue; // this very file, loaded by another run that has not moved it yet: finish the move above
    }
    if (holder.state === 'loaded') {
      await skipDuplicate(st, f, staged, holder, log, { match: 'bytes', details: wrapped });
      return;
    }
    // claimed by another live run (this very file, or its twin under another name): held, counted, left in the intake
    const why = holder.name === f.name ? 'is being loaded by another run' : `its twin ${holder.name} is being loaded`;
    await o.ledger.recordHeld(f, { heldFor: { name: holder.name, run: holder.runId }, reason: `${why} (run ${holder.runId})` });
    log.warn({ event: 'held', twin: holder.name, twinRun: holder.runId }, `held: ${why} by run ${holder.runId}`);
    return;
  }
  const reason = `the claim was contended ${CLAIM_ATTEMPTS} times: left for the next run`;
  await o.ledger.recordHeld(f, { reason });
  log.warn({ event: 'held', reason }, `held: ${reason}`);
}

/** 5. LOAD in one transaction, 6. finalize in the ledger, 7. move out of the intake. */
async function loadClaimed(o: IngestOptions, f: FileInRun, staged: StagedDelivery, log: Logger, st: RunState): Promise<void> {
  let copied = 0;
  const both = contentDetails(staged.content, f.sha256);
  try {
    // a delivery whose wrapping is bad (a bomb, a wrong signature) is rejected like a bad row
    if (staged.content.kind === 'refused') throw staged.content.error;
    if (staged.content.kind !== 'content') throw new Error('a delivery that could not be decoded is never claimed');
    const result = await copyRows(o.db, {
      schema: o.schema,
      layout: o.layout,
      stagedPath: staged.content.path,
      // the file marker holds the content's hash: a re-encrypted or re-compressed resend meets it
      sha256: staged.content.sha256,
      deliveredSha256: f.sha256,
      name: f.name,
      runId: f.runId,
      onProgress: (rows) => {
        if (copied === 0 && rows > 0) faultPoint('mid-copy');
        copied = rows;
        o.onProgress?.(f.name, rows);
      },
    });
    faultPoint('after-commit');
    if (result.outcome === 'loaded') {
      faultPoint('before-finalize');
      const details = {
        rows: result.rows,
        ...(result.skippedRows > 0 ? { skippedRows: result.skippedRows, table: o.layout.table } : { table: o.layout.table }),
        ...both,
      };
      if (!(await o.ledger.finalizeClaim(f, { state: 'loaded', event: 'loaded', rows: result.rows }, details))) {
        log.error({ event: 'claim-lost' }, 'loaded, but the claim was taken over meanwhile: the other run finishes it');
        return;
      }
      faultPoint('after-finalize');
      const skipped = result.skippedRows > 0 ? ` (${result.skippedRows} rows left out by the layout's skipRows)` : '';
      log.info({ event: 'loaded', rows: result.rows, skippedRows: result.skippedRows }, `loaded ${result.rows} rows${skipped}`);
      await moveDecided(st, f, staged, 'archive', log);
      return;
    }
    // (the same name with other delivered bytes is a resend of the content, re-encrypted or re-compressed: not that load)
    const sameDelivery = result.fileName === f.name && (result.deliveredSha256 ?? f.sha256) === f.sha256;
    if (sameDelivery && (await o.ledger.run(result.runId))) {
      // A run of this ledger committed the load and died before it could say so (its claim was
      // then judged stale and expired while its COMMIT was still landing): this is that load.
      const reason = `loaded by run ${result.runId}, which died before finalizing`;
      if (
        await o.ledger.finalizeClaim(
          f,
          { state: 'loaded', event: 'recovered', rows: result.rows },
          { rows: result.rows, reason, claimRun: result.runId },
        )
      ) {
        log.warn({ event: 'recovered', claimRun: result.runId, rows: result.rows }, `recovered: ${reason}`);
        await moveDecided(st, f, staged, 'archive', log);
      }
      return;
    }
    const match = (result.deliveredSha256 ?? staged.content.sha256) === f.sha256 ? 'bytes' : 'content';
    const duplicateOf = { name: result.fileName, run: result.runId, source: 'finance-database', match };
    const reason = `content already in the finance database: loaded from ${result.fileName} by run ${result.runId}`;
    if (await o.ledger.finalizeClaim(f, { state: 'duplicate', event: 'skipped', reason }, { duplicateOf, reason, ...both })) {
      // a re-compressed or re-encrypted resend meets the content's marker by design; plain bytes only when the ledger lost it
      const how = 'contentSha256' in both ? 'the same content in other delivered bytes' : 'the ledger did not know it';
      log.warn({ event: 'skipped', duplicateOf }, `skipped: ${reason} (${how})`);
      await moveDecided(st, f, staged, 'duplicates', log);
    }
    return;
  } catch (err) {
    if (err instanceof RejectError) {
      const details = { reason: err.message, line: err.line, field: err.field, ...both };
      if (await o.ledger.finalizeClaim(f, { state: 'rejected', event: 'rejected', reason: err.message }, details)) {
        log.error({ event: 'rejected', ...details }, `rejected ${f.name}: ${err.message}`);
        await moveDecided(st, f, staged, 'rejected', log);
      }
      return;
    }
    const reason = errorMessage(err);
    await o.ledger.finalizeClaim(f, { state: 'failed', event: 'failed', reason }, { reason }, ['released']);
    log.error({ event: 'failed', reason }, `failed, claim released, file left in intake: ${reason}`);
    if (isConnectionLost(err)) st.abortedBy = `finance database connection lost: ${reason}`;
  }
}
