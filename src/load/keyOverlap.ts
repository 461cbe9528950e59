import pg from 'pg';
import { quoteValue } from './quoteValue.js';
import { readSettlement } from './readSettlement.js';
import type { LoadRequest } from './copyRows.js';

const { escapeIdentifier } = pg;
const SHOW_AT_MOST = 10;
const LOOKUP_BATCH = 1000;

interface Overlap {
  key: string;
  line: number;
  /** where the key was loaded before; for a key repeated inside this file, its first line */
  from: string;
}

/**
 * Explains a natural-key violation after the load was rolled back: re-reads the staged file
 * and names up to ten keys that repeat inside it or were loaded before from another file.
 * Runs only on the failure path, so it may keep the file's keys in memory.
 */
export async function describeKeyOverlap(client: pg.ClientBase, req: LoadRequest): Promise<{ message: string; line?: number }> {
  const keyIndex = req.layout.columns.findIndex((c) => c.name === req.layout.naturalKey);
  const keyCol = escapeIdentifier(req.layout.naturalKey);
  const table = `${escapeIdentifier(req.schema)}.settlement_rows`;
  const firstLine = new Map<string, number>();
  const found: Overlap[] = [];
  let total = 0;
  let batch: { key: string; line: number }[] = [];

  const lookUp = async () => {
    const r = await client.query<{ key: string; source_name: string; run_id: string }>(
      // rows of this very content are not a clash (they exist when it is being reprocessed)
      `SELECT ${keyCol} AS key, source_name, run_id FROM ${table} WHERE ${keyCol} = ANY($1::text[]) AND source_sha256 <> $2`,
      [batch.map((b) => b.key), req.sha256],
    );
    const loaded = new Map(r.rows.map((row) => [row.key, `${row.source_name} (run ${row.run_id})`]));
    for (const b of batch) {
      const from = loaded.get(b.key);
      if (from === undefined) continue;
      total++;
      if (found.length < SHOW_AT_MOST) found.push({ ...b, from: `already loaded from ${from}` });
    }
    batch = [];
  };

  for await (const row of readSettlement(req.stagedPath, req.layout)) {
    const key = row.values[keyIndex]!;
    const seen = firstLine.get(key);
    if (seen !== undefined) {
      total++;
      if (found.length < SHOW_AT_MOST) found.push({ key, line: row.line, from: `repeats line ${seen} of this file` });
      continue;
    }
    firstLine.set(key, row.line);
    batch.push({ key, line: row.line });
    if (batch.length >= LOOKUP_BATCH) await lookUp();
  }
  if (batch.length > 0) await lookUp();

  const field = req.layout.naturalKey;
  if (total === 0) return { message: `field ${field}: a value collides with rows already loaded` };
  found.sort((a, b) => a.line - b.line);
  const listed = found.map((o) => `line ${o.line}: ${quoteValue(o.key)} ${o.from}`).join('; ');
  const more = total > found.length ? `; and ${total - found.length} more` : '';
  return { message: `field ${field}: ${total} value(s) already used: ${listed}${more}`, line: found[0]!.line };
}
