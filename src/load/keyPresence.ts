import pg from 'pg';
import type { Layout } from './layout.js';
import { readSettlement } from './readSettlement.js';

const { escapeIdentifier } = pg;
const LOOKUP_BATCH = 1000;

export interface KeyPresence {
  /** data rows in the file */
  rows: number;
  /** rows whose natural key the settlement table holds */
  present: number;
  /** the first row whose key it does not hold, to name in a message */
  firstMissing?: { line: number; key: string };
}

/**
 * How many of a file's rows have their natural key in the settlement table: tells a file
 * loaded before file markers existed (every key there) from one never loaded (none) or loaded
 * in part (some). Keys are looked up one batch at a time, so memory stays flat for a big file.
 * Throws the reader's RejectError when the file does not fit the layout.
 */
export async function keyPresence(client: pg.ClientBase, schema: string, layout: Layout, path: string): Promise<KeyPresence> {
  const keyIndex = layout.columns.findIndex((c) => c.name === layout.naturalKey);
  const keyCol = escapeIdentifier(layout.naturalKey);
  const table = `${escapeIdentifier(schema)}.settlement_rows`;
  const result: KeyPresence = { rows: 0, present: 0 };
  let batch: { key: string; line: number }[] = [];

  const lookUp = async () => {
    const r = await client.query<{ key: string }>(`SELECT ${keyCol} AS key FROM ${table} WHERE ${keyCol} = ANY($1::text[])`, [
      batch.map((b) => b.key),
    ]);
    const found = new Set(r.rows.map((row) => row.key));
    for (const b of batch) {
      if (found.has(b.key)) result.present++;
      else result.firstMissing ??= b;
    }
    batch = [];
  };

  for await (const row of readSettlement(path, layout)) {
    result.rows++;
    batch.push({ key: row.values[keyIndex]!, line: row.line });
    if (batch.length >= LOOKUP_BATCH) await lookUp();
  }
  if (batch.length > 0) await lookUp();
  return result;
}
