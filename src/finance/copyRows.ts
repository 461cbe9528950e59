import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { RejectError } from '../errors.js';
import { keyName, PROVENANCE_COLUMNS, type Layout } from '../layout/layout.js';
import { findBadRows, settlementBlocks, type ReadStats, type SettlementRow } from '../layout/readSettlement.js';
import { describeKeyOverlap } from './keyOverlap.js';
import type { CopyFormat, FinanceTarget, LoadRequest, LoadResult } from './target.js';
import { findFileMarker } from './fileMarker.js';
import { feedCopy } from './feedCopy.js';
import { CopyBatches } from './copyBatches.js';
import { binaryRowsFor } from './copyBinary.js';
import { isContentError, pgCode, PG_UNIQUE_VIOLATION } from '../db/pgErrors.js';
import { stat } from '../syncFs.js';
import { explainDbWait } from '../db/statementWatch.js';

const { escapeIdentifier } = pg;

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
  format: { writeRow: RowWriter; start?: (out: CopyBatches) => void; end?: (out: CopyBatches) => void },
): AsyncGenerator<Buffer> {
  const out = new CopyBatches();
  format.start?.(out);
  for await (const block of settlementBlocks(req.stagedPath, layout, { stats: counter.stats, fileName: req.name })) {
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
 * load and line; returns how many went in and how many the layout's skipRows left out.
 */
export async function streamRows(
  t: FinanceTarget,
  req: LoadRequest,
  loadId: number,
): Promise<{ rows: number; skippedRows: number; format: CopyFormat }> {
  const { client, layout } = t;
  const columns = [...layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS].map(escapeIdentifier).join(', ');
  const counter = { rows: 0, stats: { skipped: 0, bytes: 0 } };
  // A large file may stream for longer than --db-timeout: the COPY is judged by progress
  // (statementWatch.ts cancels it when the server stops taking data), not by its duration.
  await client.query('SET LOCAL statement_timeout = 0');
  const table = `${escapeIdentifier(t.schema)}.${escapeIdentifier(layout.table)}`;
  // binary needs every column of a type it writes; a table changed by hand takes text
  const binary = (await preferredFormat(req)) === 'binary' ? await binaryRowsFor(t) : null;
  const format = binary
    ? {
        start: (out: CopyBatches) => binary.header(out),
        writeRow: (out: CopyBatches, row: SettlementRow) => binary.row(out, row.values, loadId, row.line),
        end: (out: CopyBatches) => binary.trailer(out),
      }
    : { writeRow: csvRows(loadId) };
  const copy = client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN WITH (FORMAT ${binary ? 'binary' : 'csv'})`));
  await feedCopy(copyData(layout, req, counter, format), copy);
  req.onProgress?.(counter.rows, counter.stats.bytes);
  return { rows: counter.rows, skippedRows: counter.stats.skipped, format: binary ? 'binary' : 'text' };
}

/** A new load of a content (its first, or a reload): the integer every row of it carries. */
export async function startLoad(t: FinanceTarget, req: LoadRequest, reason: string | null): Promise<number> {
  const s = escapeIdentifier(t.schema);
  // the load and the marker's pointer to it in one statement (one round trip a file, not two)
  const r = await t.client.query<{ load_id: number }>(
    `WITH load AS (INSERT INTO ${s}.loads (sha256, run_id, reason) VALUES ($1, $2, $3) RETURNING load_id)
     UPDATE ${s}.file_loads SET load_id = load.load_id FROM load WHERE sha256 = $1 RETURNING load.load_id`,
    [req.sha256, req.runId, reason],
  );
  if (r.rows.length !== 1) throw new Error(`the file marker of ${req.sha256} is missing: its load was not started`);
  return r.rows[0]!.load_id;
}

/** The rows a load put in: on the file marker and on the load, in one statement. */
export async function finishLoad(t: FinanceTarget, req: LoadRequest, loadId: number, rows: number): Promise<void> {
  const s = escapeIdentifier(t.schema);
  const r = await t.client.query<{ n: number }>(
    `WITH load AS (UPDATE ${s}.loads SET row_count = $3 WHERE load_id = $2 RETURNING load_id)
     UPDATE ${s}.file_loads SET row_count = $3 WHERE sha256 = $1 AND load_id IN (SELECT load_id FROM load) RETURNING 1 AS n`,
    [req.sha256, loadId, rows],
  );
  if (r.rows.length !== 1) throw new Error(`the rows of load ${loadId} (${req.sha256}) could not be counted on its marker`);
}

/**
 * After a rollback: the file's fault (bad value, natural key already used) as a RejectError
 * that names lines and keys; a wait cut short by a timeout as one line naming it; anything
 * else (connection, server) is returned as it was.
 */
export async function explainFailure(t: FinanceTarget, req: LoadRequest, err: unknown): Promise<unknown> {
  // the load stopped at the first bad row; the reject names every one (read again, off the database)
  if (err instanceof RejectError)
    return (await findBadRows(req.stagedPath, t.layout, { fileName: req.name }).catch(() => null))?.error ?? err;
  const code = pgCode(err);
  if (code === PG_UNIQUE_VIOLATION) {
    const overlap = await describeKeyOverlap(t, req);
    return new RejectError(overlap.message, { line: overlap.line, field: keyName(t.layout) }, { cause: err });
  }
  if (isContentError(code)) return new RejectError(`the database refused a value: ${(err as Error).message}`, {}, { cause: err });
  return explainDbWait(t.client, err);
}

/**
 * Loads one staged file in ONE transaction: the file marker (sha256 primary key) and all
 * rows via COPY, or nothing. A bad row throws a RejectError; anything else propagates.
 */
export async function copyRows(t: FinanceTarget, req: LoadRequest): Promise<LoadResult> {
  const { client } = t;
  const s = escapeIdentifier(t.schema);
  await client.query('BEGIN');
  try {
    // Waits on a concurrent insert of the same content; conflicts once it has committed.
    const marker = await client.query(
      `INSERT INTO ${s}.file_loads (sha256, file_name, run_id, row_count, target_table, delivered_sha256) VALUES ($1, $2, $3, 0, $4, $5)
       ON CONFLICT (sha256) DO NOTHING`,
      [req.sha256, req.name, req.runId, t.layout.table, req.deliveredSha256 ?? req.sha256],
    );
    if (marker.rowCount === 0) {
      await client.query('ROLLBACK');
      const prior = (await findFileMarker(t, req.sha256))!;
      // the same bytes with no rows: another "no activity" day, loaded as such (nothing to guard)
      if (prior.rowCount === 0) return { outcome: 'loaded', rows: 0, skippedRows: 0 };
      return {
        outcome: 'already-loaded',
        fileName: prior.fileName,
        runId: prior.runId,
        rows: prior.rowCount,
        deliveredSha256: prior.deliveredSha256,
      };
    }
    const loadId = await startLoad(t, req, null);
    const { rows, skippedRows, format } = await streamRows(t, req, loadId);
    await finishLoad(t, req, loadId, rows);
    await client.query('COMMIT');
    return { outcome: 'loaded', rows, skippedRows, format };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await explainFailure(t, req, err);
  }
}
