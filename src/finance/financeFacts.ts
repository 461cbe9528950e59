import pg from 'pg';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier: id } = pg;

export interface LoadFacts {
  sha256: string;
  fileName: string;
  runId: string;
  /** the table its rows went to */
  table: string;
  /** what the file marker says */
  markerRows: number;
  /** what that table holds for the content's current load */
  actualRows: number;
}

/**
 * Every file marker with the number of rows that really carry its current load, counted in the
 * table the marker names (one query per table: each layout has its own). A table that is gone
 * counts as holding none.
 */
export async function loadFacts({ client, schema }: FinanceTarget): Promise<LoadFacts[]> {
  const quotedSchema = id(schema);
  const markers = await client.query<{ sha256: string; file_name: string; run_id: string; row_count: number; target_table: string }>(
    `SELECT sha256, file_name, run_id, row_count, target_table FROM ${quotedSchema}.file_loads ORDER BY loaded_at, sha256`,
  );
  const actual = new Map<string, number>();
  for (const table of new Set(markers.rows.map((m) => m.target_table))) {
    const exists = await client.query<{ t: string | null }>(`SELECT to_regclass(format('%I.%I', $1::text, $2::text))::text AS t`, [
      schema,
      table,
    ]);
    if (!exists.rows[0]?.t) continue;
    const queryResult = await client.query<{ sha256: string; n: string }>(
      `SELECT f.sha256, count(r.*) AS n FROM ${quotedSchema}.file_loads f JOIN ${quotedSchema}.${id(table)} r ON r.load_id = f.load_id
        WHERE f.target_table = $1 GROUP BY f.sha256`,
      [table],
    );
    for (const row of queryResult.rows) actual.set(row.sha256, Number(row.n));
  }
  return markers.rows.map((x) => ({
    sha256: x.sha256,
    fileName: x.file_name,
    runId: x.run_id,
    table: `${schema}.${x.target_table}`,
    markerRows: x.row_count,
    actualRows: actual.get(x.sha256) ?? 0,
  }));
}
