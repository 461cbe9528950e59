import pg from 'pg';

const { escapeIdentifier } = pg;

export interface LoadFacts {
  sha256: string;
  fileName: string;
  runId: string;
  /** what the file marker says */
  markerRows: number;
  /** what the table holds for that content */
  actualRows: number;
}

/** Every file marker with the number of rows that really carry its SHA-256. */
export async function loadFacts(client: pg.ClientBase, schema: string): Promise<LoadFacts[]> {
  const s = escapeIdentifier(schema);
  const r = await client.query<{ sha256: string; file_name: string; run_id: string; row_count: number; actual: string }>(
    `SELECT f.sha256, f.file_name, f.run_id, f.row_count,
            (SELECT count(*) FROM ${s}.settlement_rows r WHERE r.source_sha256 = f.sha256) AS actual
       FROM ${s}.file_loads f ORDER BY f.loaded_at, f.sha256`,
  );
  return r.rows.map((x) => ({
    sha256: x.sha256,
    fileName: x.file_name,
    runId: x.run_id,
    markerRows: x.row_count,
    actualRows: Number(x.actual),
  }));
}
