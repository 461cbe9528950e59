import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { RejectError } from '../errors.js';
import { PROVENANCE_COLUMNS, type Layout } from './layout.js';
import { readSettlement } from './readSettlement.js';
import { describeKeyOverlap } from './keyOverlap.js';
import { findFileMarker } from './fileMarker.js';
import { isContentError, pgCode, PG_UNIQUE_VIOLATION } from './pgErrors.js';

const { escapeIdentifier } = pg;

export interface LoadRequest {
  schema: string;
  layout: Layout;
  stagedPath: string;
  sha256: string;
  name: string;
  runId: string;
  onProgress?: (rows: number) => void;
}

export type LoadResult =
  | { outcome: 'loaded'; rows: number }
  /** the finance database already holds this content: its file marker says who loaded it */
  | { outcome: 'already-loaded'; fileName: string; runId: string; rows: number };

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

export function settlementTable(schema: string): string {
  return `${escapeIdentifier(schema)}.settlement_rows`;
}

/**
 * Loads one staged file in ONE transaction: the file marker (sha256 primary key) and all
 * rows via COPY, or nothing. A bad row throws a RejectError; anything else propagates.
 */
export async function copyRows(client: pg.ClientBase, req: LoadRequest): Promise<LoadResult> {
  const s = escapeIdentifier(req.schema);
  const columns = [...req.layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS].map(escapeIdentifier).join(', ');
  await client.query('BEGIN');
  try {
    // Waits on a concurrent insert of the same content; conflicts once it has committed.
    const marker = await client.query(
      `INSERT INTO ${s}.file_loads (sha256, file_name, run_id, row_count) VALUES ($1, $2, $3, 0)
       ON CONFLICT (sha256) DO NOTHING`,
      [req.sha256, req.name, req.runId],
    );
    if (marker.rowCount === 0) {
      await client.query('ROLLBACK');
      const prior = (await findFileMarker(client, req.schema, req.sha256))!;
      return { outcome: 'already-loaded', fileName: prior.fileName, runId: prior.runId, rows: prior.rowCount };
    }
    const counter = { rows: 0 };
    const copy = client.query(copyFrom(`COPY ${settlementTable(req.schema)} (${columns}) FROM STDIN WITH (FORMAT csv)`));
    await pipeline(Readable.from(copyText(req, counter)), copy);
    await client.query(`UPDATE ${s}.file_loads SET row_count = $2 WHERE sha256 = $1`, [req.sha256, counter.rows]);
    await client.query('COMMIT');
    req.onProgress?.(counter.rows);
    return { outcome: 'loaded', rows: counter.rows };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (err instanceof RejectError) throw err;
    const code = pgCode(err);
    if (code === PG_UNIQUE_VIOLATION) {
      const overlap = await describeKeyOverlap(client, req);
      throw new RejectError(overlap.message, { line: overlap.line, field: req.layout.naturalKey }, { cause: err });
    }
    if (isContentError(code)) {
      throw new RejectError(`the database refused a value: ${(err as Error).message}`, {}, { cause: err });
    }
    throw err;
  }
}
