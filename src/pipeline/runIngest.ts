import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { Logger } from 'pino';
import { RejectError, SettleError, TransientError, errorMessage } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, NotRegularFileError, type DecidedFile, type Destination, type Intake, type IntakeEntry } from '../intake/intake.js';
import { isInProgressName, isUnsafeName } from '../intake/names.js';
import { currentOwner } from '../ledger/owner.js';
import { runOutcomes, type RunOutcomes } from '../ledger/runOutcomes.js';
import type { Ledger } from '../ledger/ledger.js';
import type { FileRow, RunMode } from '../ledger/types.js';
import { copyRows } from '../load/copyRows.js';
import type { Layout } from '../load/layout.js';
import { completenessGate } from './completenessGate.js';
import { isConnectionLost } from './connectionLost.js';
import { newRunId } from './runId.js';
import { settleIfStale } from './staleClaims.js';
import { stageAndHash } from './stageAndHash.js';

export interface IngestOptions {
  intake: Intake;
  ledger: Ledger;
  db: pg.ClientBase;
  schema: string;
  layout: Layout;
  pattern: RegExp;
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
}

export interface IngestResult extends RunOutcomes {
  exitStatus: 0 | 1;
  /** moves that failed, or that found the intake name replaced (the staged copy was moved instead): each makes exit 1 */
  moveFailures: number;
  /** set when the run stopped early: the finance database went away, or it was asked to stop */
  abortedBy?: string;
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
  const runId = await o.ledger.startRun({ mode: o.mode, host: hostname(), pid: process.pid }, () => newRunId());
  const log = o.logger.child({ run: runId });
  const st: RunState = { owner: currentOwner(), staleFound: false, moveFailures: 0 };
  log.info({ event: 'run-started', mode: o.mode, intake: o.intake.description }, 'run started');

  const stagingDir = await mkdtemp(join(o.stagingRoot, `settle-${runId}-`));
  const lookedAt = new Set<string>();
  const deadline = Date.now() + o.maxWaitSeconds * 1000;
  let seq = 0;

  // an outcome for a file that was never hashed: it stays in the intake for the next run
  const unstaged = async (entry: IntakeEntry, event: 'not_ready' | 'failed', reason: string) => {
    await o.ledger.record({ runId, event, name: entry.name, sha256: null, details: { reason, size: entry.size } });
    const line = event === 'failed' ? `could not stage the file, left in intake: ${reason}` : 'not ready: left for the next run';
    log[event === 'failed' ? 'error' : 'warn']({ event: event.replace('_', '-'), file: entry.name, size: entry.size, reason }, line);
  };

  try {
    const stopRequested = () => {
      if (o.stop?.aborted && !st.abortedBy) {
        st.abortedBy = `asked to stop (${String(o.stop.reason ?? 'signal')}); the files not yet taken wait for the next run`;
        log.warn({ event: 'stopping' }, st.abortedBy);
      }
      return st.abortedBy !== undefined;
    };
    listing: for (let pass = 0; pass < MAX_LISTINGS && !stopRequested(); pass++) {
      // 1. list the intake: the pattern, minus in-progress and already-seen names
      const listed = await o.intake.list().catch((err) => {
        if (err instanceof SettleError) throw err;
        throw new TransientError(`cannot list the intake ${o.intake.description}: ${errorMessage(err)}`, { cause: err });
      });
      const candidates = listed
        .filter((e) => !lookedAt.has(e.name) && o.pattern.test(e.name) && !isInProgressName(e.name))
        .sort((a, b) => a.name.localeCompare(b.name));
      for (const bad of candidates.filter((e) => isUnsafeName(e.name))) {
        lookedAt.add(bad.name);
        log.error({ event: 'unsafe-name', file: bad.name }, 'file name could escape its folder: left untouched');
      }
      const safe = candidates.filter((e) => !isUnsafeName(e.name));
      if (safe.length === 0) break;

      // 2. the completeness gate
      const gate = await completenessGate(o.intake, safe, { stableForMs: o.stableForSeconds * 1000, deadline, stop: o.stop });
      if (stopRequested()) break;
      for (const { entry, reason } of gate.notReady) {
        lookedAt.add(entry.name);
        await unstaged(entry, 'not_ready', reason);
      }
      if (gate.ready.length === 0) break;

      for (const entry of gate.ready) {
        if (stopRequested()) break listing;
        lookedAt.add(entry.name);
        const flog = log.child({ file: entry.name });
        // 3. stage + SHA-256
        const staged = await stageAndHash(o.intake, entry, stagingDir, seq++).catch((err) => {
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
        const file = { name: entry.name, sha256: staged.sha256, size: staged.size, runId, arrival: `${entry.size}:${entry.mtimeMs}` };
        const slog = flog.child({ sha256: staged.sha256 });
        try {
          await decide(o, file, { pin: staged.pin, stagedPath: staged.path, sha256: staged.sha256 }, slog, st);
        } catch (err) {
          if (!isConnectionLost(err)) throw err;
          st.abortedBy = `finance database connection lost: ${errorMessage(err)}`;
          slog.error({ event: 'db-lost', reason: errorMessage(err) }, st.abortedBy);
        } finally {
          await unlink(staged.path).catch(() => undefined);
        }
        if (st.abortedBy) break listing; // the database is gone, or a stop was asked for: the rest waits
      }
    }
  } catch (err) {
    // the run cannot go on (intake unlistable, ledger locked): still close its record if possible
    try {
      await o.ledger.finishRun(runId, (await runOutcomes(o.ledger, runId)).counts, 1);
    } catch {
      // the original error says more than this one would
    }
    throw err;
  } finally {
    await rm(stagingDir, { recursive: true, force: true });
  }

  const outcomes = await runOutcomes(o.ledger, runId);
  const c = outcomes.counts;
  const problem = c.rejected > 0 || c.failed > 0 || st.staleFound || st.moveFailures > 0 || st.abortedBy !== undefined;
  const exitStatus = problem ? 1 : 0;
  await o.ledger.finishRun(runId, c, exitStatus);
  log.info({ event: 'run-finished', ...c, exitStatus }, 'run finished');
  return { ...outcomes, exitStatus, moveFailures: st.moveFailures, ...(st.abortedBy ? { abortedBy: st.abortedBy } : {}) };
}

interface FileInRun {
  name: string;
  sha256: string;
  size: number;
  runId: string;
  /** size:mtime as listed: tells this upload from a later resend under the same name */
  arrival: string;
}

/** What the per-file steps report back to the run beyond the ledger's outcomes. */
interface RunState {
  owner: ReturnType<typeof currentOwner>;
  staleFound: boolean;
  moveFailures: number;
  abortedBy?: string;
}

/**
 * A row decided for this very upload (same size and mtime; rows from before uploads were
 * kept count as the same) whose file has not been moved yet. A later upload of the same
 * name and bytes is a resend, not this.
 */
function awaitsItsMove(row: FileRow, f: FileInRun): boolean {
  return row.location === null && (row.arrival === null || row.arrival === f.arrival);
}

/** Claim, load, finalize and move one staged file; or skip, hold, or finish an earlier move. */
async function decide(o: IngestOptions, f: FileInRun, staged: DecidedFile, log: Logger, st: RunState): Promise<void> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    // An outcome already decided for this very file whose move never happened: finish the move.
    // (This read only finds unfinished moves; whether the file may be loaded, the claim decides.)
    const own = await o.ledger.file(f.name, f.sha256);
    if (own && awaitsItsMove(own, f) && (own.state === 'loaded' || own.state === 'duplicate' || own.state === 'rejected')) {
      log.warn({ event: 'resume-move', state: own.state, decidedBy: own.runId }, `finishing the move of a ${own.state} file`);
      await move(o, f, staged, DESTINATION[own.state], log, st);
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
    const holder = await o.ledger.liveHolder(f.sha256);
    if (!holder) continue; // released between our claim and this read: decide again
    if (holder.state === 'claimed' && (await settleIfStale(o.ledger, o.db, o.schema, holder, f.runId, log)) !== 'live') {
      st.staleFound = true;
      continue; // the stale claim is settled: decide again
    }
    if (holder.state === 'loaded' && holder.name === f.name && awaitsItsMove(holder, f)) {
      continue; // this very file, loaded by another run that has not moved it yet: finish the move above
    }
    if (holder.state === 'loaded') {
      await skipDuplicate(o, f, staged, holder, log, st);
      return;
    }
    if (holder.name === f.name) {
      log.info({ event: 'busy', claimRun: holder.runId }, 'claimed by another live run: left to it');
      return;
    }
    await o.ledger.recordHeld(f, { heldFor: { name: holder.name, run: holder.runId } });
    log.warn(
      { event: 'held', twin: holder.name, twinRun: holder.runId },
      `held: its twin ${holder.name} is being loaded by run ${holder.runId}`,
    );
    return;
  }
  log.warn({ event: 'busy' }, 'claim contended repeatedly: left for the next run');
}

/** 5. LOAD in one transaction, 6. finalize in the ledger, 7. move out of the intake. */
async function loadClaimed(o: IngestOptions, f: FileInRun, staged: DecidedFile, log: Logger, st: RunState): Promise<void> {
  let copied = 0;
  try {
    const result = await copyRows(o.db, {
      schema: o.schema,
      layout: o.layout,
      stagedPath: staged.stagedPath,
      sha256: f.sha256,
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
      if (!(await o.ledger.finalizeClaim(f, { state: 'loaded', event: 'loaded', rows: result.rows }, { rows: result.rows }))) {
        log.error({ event: 'claim-lost' }, 'loaded, but the claim was taken over meanwhile: the other run finishes it');
        return;
      }
      faultPoint('after-finalize');
      log.info({ event: 'loaded', rows: result.rows }, `loaded ${result.rows} rows`);
      await move(o, f, staged, 'archive', log, st);
      return;
    }
    if (result.fileName === f.name && (await o.ledger.run(result.runId))) {
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
        st.staleFound = true;
        await move(o, f, staged, 'archive', log, st);
      }
      return;
    }
    const duplicateOf = { name: result.fileName, run: result.runId, source: 'finance-database' };
    const reason = `content already in the finance database: loaded from ${result.fileName} by run ${result.runId}`;
    if (await o.ledger.finalizeClaim(f, { state: 'duplicate', event: 'skipped', reason }, { duplicateOf, reason })) {
      log.warn({ event: 'skipped', duplicateOf }, `skipped: ${reason} (the ledger did not know it)`);
      await move(o, f, staged, 'duplicates', log, st);
    }
    return;
  } catch (err) {
    if (err instanceof RejectError) {
      const details = { reason: err.message, line: err.line, field: err.field };
      if (await o.ledger.finalizeClaim(f, { state: 'rejected', event: 'rejected', reason: err.message }, details)) {
        log.error({ event: 'rejected', ...details }, `rejected ${f.name}: ${err.message}`);
        await move(o, f, staged, 'rejected', log, st);
      }
      return;
    }
    const reason = errorMessage(err);
    await o.ledger.finalizeClaim(f, { state: 'failed', event: 'failed', reason }, { reason }, ['released']);
    log.error({ event: 'failed', reason }, `failed, claim released, file left in intake: ${reason}`);
    if (isConnectionLost(err)) st.abortedBy = `finance database connection lost: ${reason}`;
  }
}

/**
 * A skip is recorded together with the move that made it final, and only by the run whose
 * record of that move comes first: two runs that both staged the file, or that raced an
 * archiving run, never both count it. A crash between the move and the record is healed by
 * the next run, which finds the same file at the same place and records it then.
 */
async function skipDuplicate(
  o: IngestOptions,
  f: FileInRun,
  staged: DecidedFile,
  original: FileRow,
  log: Logger,
  st: RunState,
): Promise<void> {
  const duplicateOf = { name: original.name, run: original.runId, source: 'ledger' };
  const sameName = original.name === f.name;
  const routed = await route(o, f, staged, 'duplicates', log, st);
  if (routed === null) return;
  const location = routed.location;
  // A same-name resend shares the archived file's ledger row: only the events record it.
  if (!(await o.ledger.recordSkip(f, !sameName, location, { duplicateOf }))) {
    log.info({ event: 'gone', to: location }, 'another run moved and counted this file');
    return;
  }
  if (routed.replaced) await recordReplaced(o, f, location);
  log.warn(
    { event: 'skipped', duplicateOf, to: location },
    `skipped: same content as ${original.name}, loaded by run ${original.runId}${sameName ? ' (same-name resend)' : ''}; moved to ${location}`,
  );
}

/** 7. The watermark: the file leaves the intake only now that its outcome is final. */
async function move(o: IngestOptions, f: FileInRun, staged: DecidedFile, to: Destination, log: Logger, st: RunState): Promise<void> {
  const routed = await route(o, f, staged, to, log, st);
  if (routed === null) return;
  if (!(await o.ledger.markMoved(f, routed.location))) return;
  if (routed.replaced) await recordReplaced(o, f, routed.location);
  log.info({ event: 'moved', to: routed.location }, `moved to ${routed.location}`);
}

/** The history says where the decided bytes came from when the intake name no longer held them. */
async function recordReplaced(o: IngestOptions, f: FileInRun, location: string): Promise<void> {
  const details = { to: location, bytesFrom: 'staging', intakeNameReplaced: true, reason: REPLACED };
  await o.ledger.record({ runId: f.runId, event: 'moved', name: f.name, sha256: f.sha256, details });
}

const REPLACED =
  'the intake name no longer held the decided file (re-uploaded or still being written): the staged copy was moved, the new upload stays in the intake';

/**
 * Moves the file out of the intake; null when another run moved it first, or the move failed.
 * A move that found the name replaced by a new upload counts as a move failure: exit 1.
 */
async function route(
  o: IngestOptions,
  f: FileInRun,
  staged: DecidedFile,
  to: Destination,
  log: Logger,
  st: RunState,
): Promise<{ location: string; replaced: boolean } | null> {
  try {
    faultPoint('before-move', f.name);
    const routed = await o.intake.route(f.name, to, staged);
    if (routed.replaced) {
      st.moveFailures++;
      log.error({ event: 'move-replaced', to, location: routed.location }, `${REPLACED}; moved to ${routed.location}`);
    }
    return routed;
  } catch (err) {
    if (err instanceof FileGoneError) {
      log.info({ event: 'gone' }, 'left the intake before this run could move it: another run has it');
      return null;
    }
    // A decided outcome stands in the ledger; the next run finishes the move.
    st.moveFailures++;
    log.error({ event: 'move-failed', to, reason: errorMessage(err) }, `could not move to ${to}: ${errorMessage(err)}`);
    return null;
  }
}
