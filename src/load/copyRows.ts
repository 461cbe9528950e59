import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { RejectError } from '../errors.js';
import { PROVENANCE_COLUMNS, type Layout } from './layout.js';
import { findBadRows, readSettlement } from './readSettlement.js';
import { describeKeyOverlap } from './keyOverlap.js';
import { findFileMarker } from './fileMarker.js';
import { feedCopy } from './feedCopy.js';
import { isContentError, pgCode, PG_UNIQUE_VIOLATION } from '../pgErrors.js';
import { explainDbWait } from './statementWatch.js';

const { escapeIdentifier } = pg;

export interface LoadRequest {
  schema: string;
  layout: Layout;
  stagedPath: string;
  /** the content's SHA-256: the file marker's key and the rows' source */
  sha256: string;
  /** the SHA-256 of the bytes as delivered (compressed, encrypted), kept beside the marker */
  deliveredSha256?: string;
  name: string;
  runId: string;
  onProgress?: (rows: number) => void;
}

export type LoadResult =
  | { outcome: 'loaded'; rows: number }
  /** the finance database already holds this content: its file marker says who loaded it */
  | { outcome: 'already-loaded'; fileName: string; runId: string; rows: number; deliveredSha256: string | null };

const NEEDS_QUOTES = /[",\r\n\\]/;

function csvField(value: string | null): string {
  if (value === null) return ''; // unquoted empty is NULL in COPY's CSV format
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

const BATCH_BYTES = 64 * 1024;

/** Turns validated rows into COPY CSV text, in batches, so the stream stays cheap per row. */
async function* copyText(req: LoadRequest, counter: { rows: number }): AsyncGenerator<string> {
  const provenance = `,${req.sha256},${csvField(req.name)},`;
  const runTail = `,${csvField(req.runId)}\n`;
  let batch = '';
  for await (const row of readSettlement(req.stagedPath, req.layout)) {
    batch += row.values.map(csvField).join(',') + provenance + row.line + runTail;
    counter.rows++;
    if (batch.length >= BATCH_BYTES) {
      yield batch;
      batch = '';
      req.onProgress?.(counter.rows);
    }
  }
  if (batch) yield batch;
}

/** Streams the staged file's checked rows into the table with COPY; returns how many went in. */
export async function streamRows(client: pg.ClientBase, req: LoadRequest): Promise<number> {
  const columns = [...req.layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS].map(escapeIdentifier).join(', ');
  const counter = { rows: 0 };
  // A large file may stream for longer than --db-timeout: the COPY is judged by progress
  // (statementWatch.ts cancels it when the server stops taking data), not by its duration.
  await client.query('SET LOCAL statement_timeout = 0');
  const copy = client.query(copyFrom(`COPY ${escapeIdentifier(req.schema)}.settlement_rows (${columns}) FROM STDIN WITH (FORMAT csv)`));
  await feedCopy(copyText(req, counter), copy);
  req.onProgress?.(counter.rows);
  return counter.rows;
}

/**
 * After a rollback: the file's fault (bad value, natural key already used) as a RejectError
 * that names lines and keys; a wait cut short by a timeout as one line naming it; anything
 * else (connection, server) is returned as it was.
 */
export async function explainFailure(client: pg.ClientBase, req: LoadRequest, err: unknown): Promise<unknown> {
  // the load stopped at the first bad row; the reject names every one (read again, off the database)
  if (err instanceof RejectError) return (await findBadRows(req.stagedPath, req.layout).catch(() => null))?.error ?? err;
  const code = pgCode(err);
  if (code === PG_UNIQUE_VIOLATION) {
    const overlap = await describeKeyOverlap(client, req);
    return new RejectError(overlap.message, { line: overlap.line, field: req.layout.naturalKey }, { cause: err });
  }
  if (isContentError(code)) return new RejectError(`the database refused a value: ${(err as Error).message}`, {}, { cause: err });
  return explainDbWait(client, err);
}

/**
 * Loads one staged file in ONE transaction: the file marker (sha256 primary key) and all
 * rows via COPY, or nothing. A bad row throws a RejectError; anything else propagates.
 */
export async function copyRows(client: pg.ClientBase, req: LoadRequest): Promise<LoadResult> {
  const s = escapeIdentifier(req.schema);
  await client.query('BEGIN');
  try {
    // Waits on a concurrent insert of the same content; conflicts once it has committed.
    const marker = await client.query(
      `INSERT INTO ${s}.file_loads (sha256, file_name, run_id, row_count, delivered_sha256) VALUES ($1, $2, $3, 0, $4)
       ON CONFLICT (sha256) DO NOTHING`,
      [req.sha256, req.name, req.runId, req.deliveredSha256 ?? req.sha256],
    );
    if (marker.rowCount === 0) {
      await client.query('ROLLBACK');
      const prior = (await findFileMarker(client, req.schema, req.sha256))!;
      return { ...prior, outcome: 'already-loaded', rows: prior.rowCount };
    }
    const rows = await streamRows(client, req);
    await client.query(`UPDATE ${s}.file_loads SET row_count = $2 WHERE sha256 = $1`, [req.sha256, rows]);
    await client.query('COMMIT');
    return { outcome: 'loaded', rows };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await explainFailure(client, req, err);
  }
}
