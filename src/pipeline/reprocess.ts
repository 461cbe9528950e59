import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import type { Logger } from '../logEvents.js';
import { RejectError, errorMessage } from '../errors.js';
import type { FolderReader } from '../intake/intake.js';
import type { RunLedger } from '../ledger/ledger.js';
import { NO_COUNTS, type FileRow } from '../ledger/types.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { isConnectionLost } from './connectionLost.js';
import { newRunId } from '../ledger/runIds.js';
import { stageAndHash } from './stageAndHash.js';
import { removeContent } from '../delivery/stagedContent.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { contentOf } from '../ledger/types.js';
import { deliveredAt } from './loadFile.js';
import { faultPoint } from '../faults.js';
import { totalsText, type CheckedTotal } from '../layout/reader/totalsCheck.js';

export interface ReprocessOptions {
  ledger: RunLedger;
  /** bound to today's layout: the files are read with it */
  finance: FinanceDb;
  /** the archive folder, read only */
  archive: FolderReader;
  names: string[];
  reason: string;
  operator: string;
  dryRun: boolean;
  stagingRoot: string;
  logger: Logger;
  /** archived deliveries are kept as delivered (compressed, encrypted): decoded again here */
  decode?: DecodeOptions;
  /** the command layer's rule from the counts to the exit status the ledger records */
  exitStatusFor: (counts: ReprocessCounts) => 0 | 1;
}

export interface ReprocessCounts {
  reprocessed: number;
  rejected: number;
  failed: number;
  rows: number;
}

export interface ReprocessedFile {
  name: string;
  sha256: string | null;
  outcome: 'reprocessed' | 'would-reprocess' | 'rejected' | 'failed';
  rows: number;
  previousRows?: number;
  /** rows identical to rows other files loaded, not loaded again (a layout comparing rows seen before) */
  seenBefore?: number;
  /** the control totals the fresh load proved (layout/reader/totalsCheck.ts) */
  totals?: CheckedTotal[];
  error?: string;
}

export interface ReprocessResult {
  runId: string;
  dryRun: boolean;
  counts: ReprocessCounts;
  files: ReprocessedFile[];
  exitStatus: 0 | 1;
}

/**
 * `run --reprocess`: reloads already-loaded files from the archive with today's code. Each
 * content's rows are replaced in one transaction (the new rows carry this run's id) and a
 * `reprocessed` event records the reason and the operator. Nothing is claimed and nothing
 * moves. A dry run validates and counts, then rolls back and writes nothing to the ledger.
 */
export async function runReprocess(opts: ReprocessOptions): Promise<ReprocessResult> {
  // a dry run leaves no trace in the ledger, not even its run
  const runId = opts.dryRun
    ? newRunId(new Date(), { dryRun: true })
    : await opts.ledger.startRun({ mode: 'reprocess', host: hostname(), pid: process.pid }, () => newRunId());
  const log = opts.logger.child({ run: runId, reprocess: true });
  log.info(
    { event: 'reprocess-started', reason: opts.reason, operator: opts.operator, dryRun: opts.dryRun, files: opts.names },
    'reprocessing',
  );
  const staging = await mkdtemp(join(opts.stagingRoot, `settle-${runId}-`));
  const files: ReprocessedFile[] = [];
  const reprocessing: Reprocessing = { opts, runId, log, staging, seq: 0 };
  try {
    for (const name of opts.names) {
      const loaded = await opts.ledger.loadedNamed(name);
      if (loaded.length === 0) {
        files.push({ name, sha256: null, outcome: 'failed', rows: 0, error: 'this ledger has no load of it: nothing to reprocess' });
        log.error({ event: 'reprocess-failed', file: name }, `${name}: never loaded, nothing to reprocess`);
        continue;
      }
      for (const row of loaded) files.push(await reprocessOne(reprocessing, row));
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }

  const count = (outcome: ReprocessedFile['outcome']) => files.filter((reprocessedFile) => reprocessedFile.outcome === outcome).length;
  const counts = {
    reprocessed: count(opts.dryRun ? 'would-reprocess' : 'reprocessed'),
    rejected: count('rejected'),
    failed: count('failed'),
    rows: files.reduce((n, f) => n + f.rows, 0),
  };
  const exitStatus = opts.exitStatusFor(counts);
  if (!opts.dryRun) {
    await opts.ledger.finishRun(runId, { ...NO_COUNTS, ...counts }, exitStatus);
  }
  return { runId, dryRun: opts.dryRun, counts, files, exitStatus };
}

/** One reprocessing run as its files share it. */
interface Reprocessing {
  opts: ReprocessOptions;
  runId: string;
  log: Logger;
  staging: string;
  /** the next staging file's number */
  seq: number;
}

/**
 * One loaded file reloaded from its archived copy, which must still be the bytes (and decode to
 * the content) that were loaded; a file that cannot be is named and its rows stay as they are. A
 * lost connection ends the reprocessing.
 */
async function reprocessOne(reprocessing: Reprocessing, row: FileRow): Promise<ReprocessedFile> {
  const { opts, runId, log } = reprocessing;
  const fail = (outcome: 'rejected' | 'failed', error: string): ReprocessedFile => {
    log.error({ event: `reprocess-${outcome}`, file: row.name, reason: error }, `${row.name}: ${error} (its rows are unchanged)`);
    return { name: row.name, sha256: row.sha256, outcome, rows: 0, error };
  };
  if (!row.location) return fail('failed', 'its move to the archive never happened: let a run finish it first');
  const archived = basename(row.location);
  const entry = await opts.archive.stat(archived);
  if (!entry) return fail('failed', `${archived} is not in the archive ${opts.archive.description}`);
  const staged = await stageAndHash(opts.archive, entry, reprocessing.staging, reprocessing.seq++, opts.decode);
  if (staged.kind !== 'staged') return fail('failed', `${archived} could not be read whole from the archive`);
  const { content } = staged;
  try {
    if (staged.sha256 !== row.sha256) return fail('failed', `${archived} in the archive no longer has the content that was loaded`);
    if (content.kind === 'refused') return fail('rejected', content.error.message);
    if (content.kind === 'failed') return fail('failed', content.reason);
    if (content.sha256 !== contentOf(row)) return fail('failed', `${archived} no longer decodes to the content that was loaded`);
    // the rows hang off the content's file marker, whatever wrapping the delivery had
    // the delivery's time as the run that loaded it read it: the same dates (a year from it) again
    const delivered = row.arrival !== null ? deliveredAt(row.arrival) : Date.parse(row.firstSeenAt);
    let streaming = false;
    const req = {
      stagedPath: content.path,
      sha256: content.sha256,
      name: row.name,
      runId,
      ...(delivered !== undefined ? { deliveredAt: delivered } : {}),
      // the reload's rows are streaming: its content's old rows are deleted, nothing committed
      onProgress: (rows: number) => {
        if (rows > 0 && !streaming) faultPoint('mid-copy');
        streaming ||= rows > 0;
      },
    };
    const reloadResult = await opts.finance.reload(req, { dryRun: opts.dryRun, reason: opts.reason });
    const seen = reloadResult.seenBefore > 0 ? { seenBefore: reloadResult.seenBefore } : {};
    const { rows, previousRows } = reloadResult;
    const totals = reloadResult.totals ? { totals: reloadResult.totals } : {};
    if (!opts.dryRun) {
      const details = { rows, previousRows, ...seen, reason: opts.reason, operator: opts.operator, ...totals };
      await opts.ledger.recordReprocessed({ name: row.name, sha256: row.sha256, runId }, details);
    }
    const outcome = opts.dryRun ? 'would-reprocess' : 'reprocessed';
    log.info(
      { event: outcome, file: row.name, rows, previousRows, ...seen, ...totals },
      `${row.name}: ${previousRows} rows ${opts.dryRun ? 'would be' : 'were'} replaced by ${rows}${reloadResult.totals?.length ? `; ${totalsText(reloadResult.totals)}` : ''}`,
    );
    return { name: row.name, sha256: row.sha256, outcome, rows, previousRows, ...seen, ...totals };
  } catch (err) {
    if (err instanceof RejectError) return fail('rejected', err.message);
    if (isConnectionLost(err)) throw err;
    return fail('failed', errorMessage(err));
  } finally {
    await removeContent(content, staged.path);
    await unlink(staged.path).catch(() => undefined);
  }
}
