import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { RejectError } from '../errors.js';
import { keyName, PROVENANCE_COLUMNS, type Layout } from '../layout/layout.js';
import { findBadRows, settlementBlocks, type ReadStats } from '../layout/readSettlement.js';
import { describeKeyOverlap } from './keyOverlap.js';
import type { FinanceTarget, LoadRequest, LoadResult } from './target.js';
import { findFileMarker } from './fileMarker.js';
import { feedCopy } from './feedCopy.js';
import { isContentError, pgCode, PG_UNIQUE_VIOLATION } from '../db/pgErrors.js';
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

/** Large batches: each is one CopyData message and one write, whatever the rows' size. */
const BATCH_BYTES = 256 * 1024;

/**
 * Turns validated rows into COPY CSV, each with its load and line, in batches written straight
 * into Buffers: each row's text dies young instead of living in a long string until its batch
 * is full, and the COPY stream gets bytes it need not encode again.
 */
async function* copyText(
  layout: Layout,
  req: LoadRequest,
  loadId: number,
  counter: { rows: number; stats: ReadStats },
): AsyncGenerator<Buffer> {
  const provenance = `,${loadId},`;
  let batch = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  for await (const block of settlementBlocks(req.stagedPath, layout, { stats: counter.stats, fileName: req.name })) {
    for (let row = block.next(); row !== null; row = block.next()) {
      // a row COPY can take as the partner wrote it is not joined again
      const text = (row.text ?? copyLine(row.values)) + provenance + row.line + '\n';
      // a UTF-16 unit is at most 3 bytes of UTF-8: a row that might not fit starts the next batch
      if (used + text.length * 3 > batch.length) {
        if (used > 0) yield batch.subarray(0, used);
        batch = Buffer.allocUnsafe(Math.max(BATCH_BYTES, text.length * 3));
        used = 0;
        req.onProgress?.(counter.rows, counter.stats.bytes ?? 0);
      }
      used += batch.write(text, used);
      counter.rows++;
    }
  }
  if (used > 0) yield batch.subarray(0, used);
}

/**
 * Streams the staged file's checked rows into the layout's table with COPY, each carrying its
 * load and line; returns how many went in and how many the layout's skipRows left out.
 */
export async function streamRows(t: FinanceTarget, req: LoadRequest, loadId: number): Promise<{ rows: number; skippedRows: number }> {
  const { client, layout } = t;
  const columns = [...layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS].map(escapeIdentifier).join(', ');
  const counter = { rows: 0, stats: { skipped: 0, bytes: 0 } };
  // A large file may stream for longer than --db-timeout: the COPY is judged by progress
  // (statementWatch.ts cancels it when the server stops taking data), not by its duration.
  await client.query('SET LOCAL statement_timeout = 0');
  const table = `${escapeIdentifier(t.schema)}.${escapeIdentifier(layout.table)}`;
  const copy = client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN WITH (FORMAT csv)`));
  await feedCopy(copyText(layout, req, loadId, counter), copy);
  req.onProgress?.(counter.rows, counter.stats.bytes);
  return { rows: counter.rows, skippedRows: counter.stats.skipped };
}

/** A new load of a content (its first, or a reload): the integer every row of it carries. */
export async function startLoad(t: FinanceTarget, req: LoadRequest, reason: string | null): Promise<number> {
  const s = escapeIdentifier(t.schema);
  const r = await t.client.query<{ load_id: number }>(
    `INSERT INTO ${s}.loads (sha256, run_id, reason) VALUES ($1, $2, $3) RETURNING load_id`,
    [req.sha256, req.runId, reason],
  );
  const loadId = r.rows[0]!.load_id;
  await t.client.query(`UPDATE ${s}.file_loads SET load_id = $2 WHERE sha256 = $1`, [req.sha256, loadId]);
  return loadId;
}

/** The rows a load put in: on the file marker and on the load. */
export async function finishLoad(t: FinanceTarget, req: LoadRequest, loadId: number, rows: number): Promise<void> {
  const s = escapeIdentifier(t.schema);
  await t.client.query(`UPDATE ${s}.file_loads SET row_count = $2 WHERE sha256 = $1`, [req.sha256, rows]);
  await t.client.query(`UPDATE ${s}.loads SET row_count = $2 WHERE load_id = $1`, [loadId, rows]);
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
    const { rows, skippedRows } = await streamRows(t, req, loadId);
    await finishLoad(t, req, loadId, rows);
    await client.query('COMMIT');
    return { outcome: 'loaded', rows, skippedRows };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await explainFailure(t, req, err);
  }
}
