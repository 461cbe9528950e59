import pg from 'pg';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier } = pg;

export interface FileMarker {
  fileName: string;
  runId: string;
  rowCount: number;
  /** the bytes as delivered, when they were wrapped (null on markers from before deliveries were decoded) */
  deliveredSha256: string | null;
}

/** The finance database's own record that a content was loaded, if it has one. */
export async function findFileMarker({ client, schema }: FinanceTarget, sha256: string): Promise<FileMarker | null> {
  const r = await client.query<FileMarker>(
    `SELECT file_name AS "fileName", run_id AS "runId", row_count AS "rowCount", delivered_sha256 AS "deliveredSha256"
       FROM ${escapeIdentifier(schema)}.file_loads WHERE sha256 = $1`,
    [sha256],
  );
  return r.rows[0] ?? null;
}
