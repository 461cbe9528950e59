import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { RejectError } from '../errors.js';
import { keyName, loadsThroughStaging, PROVENANCE_COLUMNS, type Layout } from '../layout/model/layout.js';
import { findBadRows, readSettlement, settlementBlocks, type ReadStats, type SettlementRow } from '../layout/reader/readSettlement.js';
import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import { describeKeyOverlap } from './keyOverlap.js';
import { readContextOf, type CopyFormat, type FinanceTarget, type LoadRequest, type LoadResult } from './target.js';
import { findFileMarker } from './fileMarker.js';
import { feedCopy } from './feedCopy.js';
import { CopyBatches } from './copyBatches.js';
import { binaryRowsFor } from './copyBinary.js';
import { isContentError, pgCode, PG_UNIQUE_VIOLATION } from '../db/pgErrors.js';
import { stat } from '../syncFs.js';
import { explainDbWait } from '../db/statementWatch.js';
import { createStagingSql, judgeStagedRows, settleStagedRows, STAGING_TABLE, type StagedRows } from './stagedLoad.js';

const { escapeIdentifier, escapeLiteral } = pg;

const NEEDS_QUOTES = /[",\r\n\\]/;

function csvField(value: string | null): string {
  if (value === null) return ''; // unquoted empty is NULL in COPY's CSV format
  return value === '' || NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One row as COPY CSV, without its line end: joined as it is unless a value needs quotes (a null joins as COPY's NULL). */
function copyLine(values: (string | null)[]): string {
  for (const v of values) if (v === '' || (v !== null && NEEDS_QUOTES.test(v))) return values.map(csvField).join(',');
  return values.join(',');
}

/** One row into the COPY's batches, as text or binary. */
type RowWriter = (out: CopyBatches, row: SettlementRow) => void;

/** A row COPY can take as the partner wrote it is not joined again; each carries its load and line. */
function csvRows(loadId: number): RowWriter {
  const provenance = `,${loadId},`;
  return (out, row) => {
    const text = (row.text ?? copyLine(row.values)) + provenance + row.line + '\n';
    // a UTF-16 unit is at most 3 bytes of UTF-8
    out.room(text.length * 3);
    out.used += out.buf.write(text, out.used);
  };
}

/**
 * The COPY's data: the staged file's checked rows written by `writeRow` into batches that go to
 * the server as each fills (copyBatches.ts), between what the format puts first and last.
 */
async function* copyData(
  layout: Layout,
  req: LoadRequest,
  counter: { rows: number; stats: ReadStats },
  format: { writeRow: RowWriter; start?: (out: CopyBatches) => void; end?: (out: CopyBatches) => void; asWritten: boolean },
): AsyncGenerator<Buffer> {
  const out = new CopyBatches();
  format.start?.(out);
  const read = { stats: counter.stats, ...readContextOf(req), asWritten: format.asWritten };
  for await (const block of settlementBlocks(req.stagedPath, layout, read)) {
    for (let row = block.next(); row !== null; row = block.next()) {
      format.writeRow(out, row);
      counter.rows++;
      if (out.hasFull) {
        req.onProgress?.(counter.rows, counter.stats.bytes ?? 0);
        yield* out.take();
      }
    }
  }
  format.end?.(out);
  yield* out.take(true);
}

/**
 * Which format a file's rows take when the request does not say: binary spares the server the
 * parsing of every value, which pays on a file of many rows; a small file goes as text, without
 * the look at the table's column types that binary needs first (docs/BENCHMARKS.md).
 */
export async function preferredFormat(req: LoadRequest): Promise<CopyFormat> {
  if (req.format) return req.format;
  const { size } = await stat(req.stagedPath);
  return size >= BINARY_FROM_BYTES ? 'binary' : 'text';
}

/** Files from this size on are sent in binary (when the table's columns allow it). */
export const BINARY_FROM_BYTES = 1024 * 1024;

/**
 * Streams the staged file's checked rows into the layout's table with COPY, each carrying its
 * load and line; returns how many went in and how many the layout's skipRows left out. The
 * transaction has its statement timeout off by then (NO_STATEMENT_TIMEOUT): a large file may
 * stream for longer than --db-timeout, and the COPY is judged by progress instead
 * (statementWatch.ts cancels it when the server stops taking data).
 */
async function streamRows(
  financeTarget: FinanceTarget,
  req: LoadRequest,
  loadId: number,
  into?: string,
): Promise<{ rows: number; skippedRows: number; format: CopyFormat; totals?: CheckedTotal[] }> {
  const { client, layout } = financeTarget;
  const columns = [...layout.columns.map((columnSpec) => columnSpec.name), ...PROVENANCE_COLUMNS].map(escapeIdentifier).join(', ');
  const counter = { rows: 0, stats: { skipped: 0, bytes: 0 } as ReadStats & { bytes: number } };
  const table = into ?? `${escapeIdentifier(financeTarget.schema)}.${escapeIdentifier(layout.table)}`;
  // binary needs every column of a type it writes; a table changed by hand takes text
  const binary = (await preferredFormat(req)) === 'binary' ? await binaryRowsFor(financeTarget) : null;
  const format = binary
    ? {
        start: (out: CopyBatches) => binary.header(out),
        writeRow: (out: CopyBatches, row: SettlementRow) => binary.row(out, row.values, loadId, row.line),
        end: (out: CopyBatches) => binary.trailer(out),
        asWritten: false,
      }
    : { writeRow: csvRows(loadId), asWritten: true };
  const copy = client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN WITH (FORMAT ${binary ? 'binary' : 'csv'})`));
  await feedCopy(copyData(layout, req, counter, format), copy);
  req.onProgress?.(counter.rows, counter.stats.bytes);
  const { totals } = counter.stats;
  return { rows: counter.rows, skippedRows: counter.stats.skipped, format: binary ? 'binary' : 'text', ...(totals ? { totals } : {}) };
}

/** What a load's rows came to: `rows` new ones in the table, `seenBefore` identical to rows another file loaded (not loaded again). */
export interface LoadedRows {
  rows: number;
  seenBefore: number;
  skippedRows: number;
  format: CopyFormat;
  totals?: CheckedTotal[];
}

/**
 * A file's rows into the layout's table, in the load's open transaction: streamed straight in,
 * or, for a layout that numbers repeated keys or compares rows seen before, streamed into the
 * transaction's staging table and settled from there (stagedLoad.ts).
 */
export async function loadRows(financeTarget: FinanceTarget, req: LoadRequest, loadId: number): Promise<LoadedRows> {
  if (!loadsThroughStaging(financeTarget.layout)) return { ...(await streamRows(financeTarget, req, loadId)), seenBefore: 0 };
  await financeTarget.client.query(createStagingSql(financeTarget));
  const streamed = await streamRows(financeTarget, req, loadId, STAGING_TABLE);
  const settled = await settleStagedRows(financeTarget, loadId, streamed.rows);
  return { ...streamed, ...settled };
}

/**
 * What a load of a good file would make of its rows, loading none (`check` of a layout comparing
 * rows seen before): how many are new and how many seen before, or the refusal a load would meet
 * (a RejectError). The rows are staged in a transaction that is rolled back.
 */
export async function judgeRows(financeTarget: FinanceTarget, req: Pick<LoadRequest, 'stagedPath' | 'name'>): Promise<StagedRows> {
  const { client } = financeTarget;
  await client.query('BEGIN');
  try {
    await client.query(createStagingSql(financeTarget));
    const streamed = await streamRows(financeTarget, { ...req, sha256: '', runId: '', format: 'text' }, 0, STAGING_TABLE);
    return await judgeStagedRows(financeTarget, streamed.rows);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
  }
}

/**
 * Whether a content whose file marker counts no rows holds data rows all the same: a statement
 * every row of which another file had loaded (seen before), never an empty "no activity" file.
 */
async function hasRows(financeTarget: FinanceTarget, req: LoadRequest): Promise<boolean> {
  for await (const _ of readSettlement(req.stagedPath, financeTarget.layout, { fileName: req.name })) return true;
  return false;
}

/**
 * The statements a load sends as text, each batch in one round trip (a file of a few rows spends
 * most of its load waiting on them: docs/BENCHMARKS.md). Their values go in as literals: hex
 * hashes, our run id, integers, the layout's table and the file's name, each quoted by
 * `escapeLiteral` (a name with quotes, backslashes or semicolons is stored as it is: tested).
 */
const lit = escapeLiteral;

/** The results of a text batch of several statements (node-postgres returns one per statement). */
async function batch(t: FinanceTarget, sql: string): Promise<pg.QueryResult[]> {
  return (await t.client.query(sql)) as unknown as pg.QueryResult[];
}

/** A COPY may stream for longer than --db-timeout: it is judged by progress (statementWatch.ts), not by its duration. */
const NO_STATEMENT_TIMEOUT = 'SET LOCAL statement_timeout = 0';

/**
 * A file's first load, in one round trip: BEGIN, its file marker (waiting on a concurrent insert
 * of the same content, conflicting once that has committed) and its load, then the COPY's
 * timeout. Returns the load's integer, or null when the content has a marker already: nothing
 * is inserted and the transaction is still open, for the caller to roll back.
 */
async function beginFirstLoad(t: FinanceTarget, req: LoadRequest): Promise<number | null> {
  const s = escapeIdentifier(t.schema);
  const [, started] = await batch(
    t,
    `BEGIN;
     WITH marker AS (
       INSERT INTO ${s}.file_loads (sha256, file_name, run_id, row_count, target_table, delivered_sha256)
       VALUES (${lit(req.sha256)}, ${lit(req.name)}, ${lit(req.runId)}, 0, ${lit(t.layout.table)}, ${lit(req.deliveredSha256 ?? req.sha256)})
       ON CONFLICT (sha256) DO NOTHING RETURNING sha256),
     load AS (INSERT INTO ${s}.loads (sha256, run_id, reason) SELECT sha256, ${lit(req.runId)}, NULL FROM marker RETURNING load_id)
     SELECT load_id FROM load;
     ${NO_STATEMENT_TIMEOUT}`,
  );
  return (started!.rows[0] as { load_id: number } | undefined)?.load_id ?? null;
}

/** A reload of a content whose marker is locked (`run --reprocess`): its new load, and the COPY's timeout. */
export async function startReload(financeTarget: FinanceTarget, req: LoadRequest, reason: string): Promise<number> {
  const s = escapeIdentifier(financeTarget.schema);
  const [started] = await batch(
    financeTarget,
    `INSERT INTO ${s}.loads (sha256, run_id, reason) VALUES (${lit(req.sha256)}, ${lit(req.runId)}, ${lit(reason)}) RETURNING load_id;
     ${NO_STATEMENT_TIMEOUT}`,
  );
  return (started!.rows[0] as { load_id: number }).load_id;
}

/**
 * Ends a load's transaction, in one round trip: the rows it put in counted on the load and on the
 * file marker, which then points to this load, then `end` (COMMIT, or ROLLBACK for a dry run).
 * Unless both rows were there to count, the statement fails and `end` is never reached.
 */
export async function endLoad(
  financeTarget: FinanceTarget,
  req: LoadRequest,
  loadId: number,
  rows: number,
  end: 'COMMIT' | 'ROLLBACK',
): Promise<void> {
  const s = escapeIdentifier(financeTarget.schema);
  const unCounted = `the rows of load ${loadId} (${req.sha256}) could not be counted on its marker`;
  // a failed cast is the error that stops the batch before `end`: a plain statement has no RAISE
  await batch(
    financeTarget,
    `WITH load AS (UPDATE ${s}.loads SET row_count = ${rows} WHERE load_id = ${loadId} AND sha256 = ${lit(req.sha256)} RETURNING load_id),
     marker AS (UPDATE ${s}.file_loads f SET row_count = ${rows}, load_id = load.load_id FROM load WHERE f.sha256 = ${lit(req.sha256)} RETURNING 1)
     SELECT CASE WHEN count(*) = 1 THEN 1 ELSE (${lit(unCounted)} || ': ' || count(*))::integer END AS counted FROM marker;
     ${end}`,
  );
}

/**
 * After a rollback: the file's fault (bad value, natural key already used) as a RejectError
 * that names lines and keys; a wait cut short by a timeout as one line naming it; anything
 * else (connection, server) is returned as it was.
 */
export async function explainFailure(financeTarget: FinanceTarget, req: LoadRequest, err: unknown): Promise<unknown> {
  // the load stopped at the first bad row; the reject names every one (read again, off the database)
  if (err instanceof RejectError)
    return (await findBadRows(req.stagedPath, financeTarget.layout, readContextOf(req)).catch(() => null))?.error ?? err;
  const code = pgCode(err);
  if (code === PG_UNIQUE_VIOLATION) {
    const overlap = await describeKeyOverlap(financeTarget, req);
    return new RejectError(overlap.message, { line: overlap.line, field: keyName(financeTarget.layout) }, { cause: err });
  }
  if (isContentError(code)) return new RejectError(`the database refused a value: ${(err as Error).message}`, {}, { cause: err });
  return explainDbWait(financeTarget.client, err);
}

/**
 * Loads one staged file in ONE transaction: the file marker (sha256 primary key) and all
 * rows via COPY, or nothing. A bad row throws a RejectError; anything else propagates.
 */
export async function copyRows(financeTarget: FinanceTarget, req: LoadRequest): Promise<LoadResult> {
  const { client } = financeTarget;
  try {
    const loadId = await beginFirstLoad(financeTarget, req);
    if (loadId === null) {
      await client.query('ROLLBACK');
      const prior = (await findFileMarker(financeTarget, req.sha256))!;
      // the same bytes with no rows: another "no activity" day, loaded as such (nothing to guard);
      // a statement whose rows were all seen before has rows, and is its content's resend
      if (prior.rowCount === 0 && !(loadsThroughStaging(financeTarget.layout) && (await hasRows(financeTarget, req).catch(() => false))))
        return { outcome: 'loaded', rows: 0, seenBefore: 0, skippedRows: 0 };
      return {
        outcome: 'already-loaded',
        fileName: prior.fileName,
        runId: prior.runId,
        rows: prior.rowCount,
        deliveredSha256: prior.deliveredSha256,
      };
    }
    const { rows, seenBefore, skippedRows, format, totals } = await loadRows(financeTarget, req, loadId);
    await endLoad(financeTarget, req, loadId, rows, 'COMMIT');
    return { outcome: 'loaded', rows, seenBefore, skippedRows, format, ...(totals ? { totals } : {}) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await explainFailure(financeTarget, req, err);
  }
}
