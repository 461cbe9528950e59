import type { Logger } from '../logEvents.js';
import { RejectError, errorMessage } from '../errors.js';
import { faultPoint } from '../faults.js';
import type { Destination } from '../destination.js';
import { contentDetails } from '../delivery/stagedContent.js';
import type { LoadResult } from '../finance/target.js';
import { totalsText } from '../layout/reader/totalsCheck.js';
import { isConnectionLost } from './connectionLost.js';
import { moveDecided, type FileInRun } from './moveDecided.js';
import type { RunContext, StagedDelivery } from './runContext.js';

/**
 * For a claimed file: 5. LOAD in one transaction, 6. finalize in the ledger, 7. move out of the
 * intake. The finance database may already hold the content (a lost ledger, a re-wrapped resend,
 * a run that died after its COMMIT): its file marker then says which. A file refused for its
 * content (a bad row, a bad wrapping, an upload that stopped mid-line for good) is rejected and
 * moved like any outcome; any other failure releases the claim and leaves the file in the intake.
 */
/**
 * When a file was delivered, as its layout may read a year from it: the upload's time as the
 * intake listed it (the `arrival`, size:mtime, which the ledger keeps), so that reprocessing it
 * later reads the same dates.
 */
export function deliveredAt(arrival: string): number | undefined {
  const mtime = Number(arrival.split(':')[1]);
  return Number.isFinite(mtime) ? mtime : undefined;
}

export async function loadClaimed(run: RunContext, file: FileInRun, staged: StagedDelivery, log: Logger): Promise<void> {
  try {
    const loaded = await loadRows(run, file, staged); // 5.
    const to = await finalizeLoad(run, file, staged, loaded, log); // 6.
    if (to !== null) await moveDecided(run, file, staged, to, log, { intended: true }); // 7.
  } catch (err) {
    const to = await finalizeRefused(run, file, staged, err, log);
    if (to !== null) await moveDecided(run, file, staged, to, log, { intended: true });
  }
}

/**
 * 5. LOAD: the content's rows and its file marker in one transaction, or what the finance
 * database says it already holds. Throws the RejectError of a file refused whole.
 */
async function loadRows(run: RunContext, file: FileInRun, staged: StagedDelivery): Promise<LoadResult> {
  if (staged.refusal) throw staged.refusal;
  // a delivery whose wrapping is bad (a bomb, a wrong signature) is rejected like a bad row
  if (staged.content.kind === 'refused') throw staged.content.error;
  if (staged.content.kind !== 'content') throw new Error('a delivery that could not be decoded is never claimed');
  const content = staged.content;
  let copied = 0;
  const startedAt = Date.now();
  const result = await run.finance.load({
    stagedPath: content.path,
    // the file marker holds the content's hash: a re-encrypted or re-compressed resend meets it
    sha256: content.sha256,
    deliveredSha256: file.sha256,
    name: file.name,
    deliveredAt: deliveredAt(file.arrival),
    runId: file.runId,
    onProgress: (rows, bytes) => {
      if (copied === 0 && rows > 0) faultPoint('mid-copy');
      if (rows > copied) faultPoint('copy-batch');
      copied = rows;
      run.onProgress?.({ file: file.name, rows, bytes, totalBytes: content.size, startedAt });
    },
  });
  faultPoint('after-commit');
  return result;
}

/** 6. Finalize what the load found in the ledger; returns where the file moves (null: nowhere, its claim was taken over). */
async function finalizeLoad(
  run: RunContext,
  file: FileInRun,
  staged: StagedDelivery,
  result: LoadResult,
  log: Logger,
): Promise<Destination | null> {
  if (result.outcome === 'loaded') return finalizeLoaded(run, file, staged, result, log);
  // (the same name with other delivered bytes is a resend of the content, re-encrypted or re-compressed: not that load)
  const sameDelivery = result.fileName === file.name && (result.deliveredSha256 ?? file.sha256) === file.sha256;
  if (sameDelivery && (await run.ledger.run(result.runId))) return finalizeRecovered(run, file, result, log);
  return finalizeAlreadyLoaded(run, file, staged, result, log);
}

/** This run's COMMIT landed: loaded, with its rows and the totals it proved. */
async function finalizeLoaded(
  run: RunContext,
  file: FileInRun,
  staged: StagedDelivery,
  result: Extract<LoadResult, { outcome: 'loaded' }>,
  log: Logger,
): Promise<Destination | null> {
  const { layout } = run.finance;
  faultPoint('before-finalize');
  const seen = result.seenBefore > 0 ? { seenBefore: result.seenBefore } : {};
  const details = {
    rows: result.rows,
    ...seen,
    ...(result.skippedRows > 0 ? { skippedRows: result.skippedRows, table: layout.table } : { table: layout.table }),
    ...(result.totals ? { totals: result.totals } : {}),
    ...contentDetails(staged.content, file.sha256),
  };
  const outcome = { rows: result.rows, ...seen, ...(result.totals ? { totals: result.totals } : {}) };
  if (!(await run.ledger.finalizeClaim(file, { state: 'loaded', event: 'loaded', ...outcome }, details, { moveTo: 'archive' }))) {
    // paused past its lease (a stopped process, a host asleep): another run settled or took the
    // claim meanwhile, but this run's COMMIT landed, and the load is this run's to record
    const takenBy = await claimTaker(run, file);
    if (!(await run.ledger.finalizeCommittedLoad(file, outcome, { ...details, ...(takenBy ? { claimTakenBy: takenBy } : {}) }))) {
      await claimTakenOver(run, file, log, result.rows);
      return null;
    }
    const by = takenBy ? ` (run ${takenBy.run}: ${takenBy.event})` : '';
    log.warn(
      { event: 'claim-lost', claimTakenBy: takenBy },
      `loaded after its claim had passed its lease and been settled by another run${by}: recorded as this run's load`,
    );
  }
  faultPoint('after-finalize');
  const skipped =
    (result.seenBefore > 0 ? ` (${result.seenBefore} rows seen before, identical to rows other files loaded: not loaded again)` : '') +
    (result.skippedRows > 0 ? ` (${result.skippedRows} rows left out by the layout)` : '');
  const totals = result.totals?.length ? `; ${totalsText(result.totals)}` : '';
  log.info(
    {
      event: 'loaded',
      rows: result.rows,
      seenBefore: result.seenBefore,
      skippedRows: result.skippedRows,
      ...(result.format ? { copyFormat: result.format } : {}),
      ...(result.totals ? { totals: result.totals } : {}),
    },
    `loaded ${result.rows} rows${skipped}${totals}`,
  );
  return 'archive';
}

/**
 * A run of this ledger committed the load and died before it could say so (its claim was then
 * judged stale and expired while its COMMIT was still landing): this is that load, recovered.
 */
async function finalizeRecovered(
  run: RunContext,
  file: FileInRun,
  result: Extract<LoadResult, { outcome: 'already-loaded' }>,
  log: Logger,
): Promise<Destination | null> {
  const reason = `loaded by run ${result.runId}, which had not finalized it`;
  const outcome = { state: 'loaded', event: 'recovered', rows: result.rows } as const;
  if (!(await run.ledger.finalizeClaim(file, outcome, { rows: result.rows, reason, claimRun: result.runId }, { moveTo: 'archive' }))) {
    await claimTakenOver(run, file, log);
    return null;
  }
  log.warn({ event: 'recovered', claimRun: result.runId, rows: result.rows }, `recovered: ${reason}`);
  return 'archive';
}

/** The content is in the finance database from another delivery (the ledger lost it, or a re-wrapped resend): a duplicate. */
async function finalizeAlreadyLoaded(
  run: RunContext,
  file: FileInRun,
  staged: StagedDelivery,
  result: Extract<LoadResult, { outcome: 'already-loaded' }>,
  log: Logger,
): Promise<Destination | null> {
  const both = contentDetails(staged.content, file.sha256);
  const match = (result.deliveredSha256 ?? file.contentSha256) === file.sha256 ? 'bytes' : 'content';
  // the finance database knows the run; the ledger (when it still has that run) its partner
  const originalPartner = (await run.ledger.run(result.runId))?.partner;
  const duplicateOf = {
    name: result.fileName,
    run: result.runId,
    ...(originalPartner ? { partner: originalPartner } : {}),
    source: 'finance-database',
    match,
  };
  const reason = `content already in the finance database: loaded from ${result.fileName} by run ${result.runId}`;
  const outcome = { state: 'duplicate', event: 'skipped', reason } as const;
  if (!(await run.ledger.finalizeClaim(file, outcome, { duplicateOf, reason, ...both }, { moveTo: 'duplicates' }))) {
    await claimTakenOver(run, file, log);
    return null;
  }
  // a re-compressed or re-encrypted resend meets the content's marker by design; plain bytes only when the ledger lost it
  const how = 'contentSha256' in both ? 'the same content in other delivered bytes' : 'the ledger did not know it';
  log.warn({ event: 'skipped', duplicateOf }, `skipped: ${reason} (${how})`);
  return 'duplicates';
}

/**
 * The load (or its finalize or move) threw: a file refused for its content is rejected (returns
 * `rejected`, where it moves); anything else fails the file and releases its claim, the file left
 * in the intake (null), and a lost connection stops the run after it.
 */
async function finalizeRefused(
  run: RunContext,
  file: FileInRun,
  staged: StagedDelivery,
  err: unknown,
  log: Logger,
): Promise<Destination | null> {
  if (err instanceof RejectError) {
    const details = { reason: err.message, line: err.line, field: err.field, ...contentDetails(staged.content, file.sha256) };
    if (
      !(await run.ledger.finalizeClaim(file, { state: 'rejected', event: 'rejected', reason: err.message }, details, {
        moveTo: 'rejected',
      }))
    ) {
      await claimTakenOver(run, file, log);
      return null;
    }
    log.error({ event: 'rejected', ...details }, `rejected ${file.name}: ${err.message}`);
    return 'rejected';
  }
  const reason = errorMessage(err);
  if (await run.ledger.finalizeClaim(file, { state: 'failed', event: 'failed', reason }, { reason }, { extraEvents: ['released'] })) {
    log.error({ event: 'failed', reason }, `failed, claim released, file left in intake: ${reason}`);
  } else await claimTakenOver(run, file, log);
  if (isConnectionLost(err)) run.abortedBy = `finance database connection lost: ${reason}`;
  return null;
}

/**
 * The claim was no longer this run's when it came to record the outcome (it was paused past its
 * lease, and another run settled the claim or took it): what became of the file is that run's to
 * say, and this run says so, once, in its own events (`released`, naming the run that has the
 * file and, when this run's COMMIT landed, the rows it committed). The run's summary and its
 * ledger row name it (runOutcomes: claimsTakenOver).
 */
async function claimTakenOver(run: RunContext, file: FileInRun, log: Logger, committedRows?: number): Promise<void> {
  const row = await run.ledger.file(file.name, file.sha256);
  const taker = await claimTaker(run, file);
  const by = taker && row ? { run: taker.run, state: row.state } : undefined;
  const committed = committedRows !== undefined ? `its ${committedRows} rows committed by this run; ` : '';
  const now = by ? `run ${by.run} ${by.state === 'loaded' ? 'recorded the load' : `has it (${by.state})`}` : 'no run has it now';
  const reason = `${committed}its claim passed its lease and was taken over: ${now}`;
  await run.ledger.record({
    runId: file.runId,
    event: 'released',
    name: file.name,
    sha256: file.sha256,
    details: { reason, takenOver: true, ...(by ? { by } : {}), ...(committedRows !== undefined ? { committedRows } : {}) },
  });
  log.warn({ event: 'claim-lost', ...(by ? { by } : {}), ...(committedRows !== undefined ? { committedRows } : {}) }, reason);
}

/** The last run other than this one to act on this file's (name, bytes) row: the one that settled or took its claim. */
async function claimTaker(run: RunContext, file: FileInRun): Promise<{ run: string; event: string } | undefined> {
  const events = await run.ledger.eventsFor(file.name);
  const other = events.filter((e) => e.sha256 === file.sha256 && e.runId !== null && e.runId !== file.runId && TAKING.has(e.event)).at(-1);
  return other ? { run: other.runId!, event: other.event } : undefined;
}

const TAKING = new Set(['expired', 'recovered', 'claimed', 'held', 'loaded', 'skipped', 'rejected']);
