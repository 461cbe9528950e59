import { keyName } from '../layout/layout.js';
import { readSettlement } from '../layout/readSettlement.js';
import { keyLookup } from './keyLookup.js';
import type { FinanceTarget, LoadRequest } from './target.js';

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
export async function describeKeyOverlap(t: FinanceTarget, req: LoadRequest): Promise<{ message: string; line?: number }> {
  const lookup = keyLookup(t);
  const firstLine = new Map<string, number>();
  const found: Overlap[] = [];
  let total = 0;
  let batch: { key: string; values: string[]; line: number }[] = [];

  const lookUp = async () => {
    // rows of this very content are not a clash (they exist when it is being reprocessed)
    const loaded = await lookup.loadedFrom(
      batch.map((b) => b.values),
      req.sha256,
    );
    for (const b of batch) {
      const from = loaded.get(b.key);
      if (from === undefined) continue;
      total++;
      if (found.length < SHOW_AT_MOST) found.push({ key: lookup.show(b.values), line: b.line, from: `already loaded from ${from}` });
    }
    batch = [];
  };

  for await (const row of readSettlement(req.stagedPath, t.layout, { fileName: req.name })) {
    const values = lookup.keyOf(row.values);
    const key = lookup.identity(values);
    const seen = firstLine.get(key);
    if (seen !== undefined) {
      total++;
      if (found.length < SHOW_AT_MOST) found.push({ key: lookup.show(values), line: row.line, from: `repeats line ${seen} of this file` });
      continue;
    }
    firstLine.set(key, row.line);
    batch.push({ key, values, line: row.line });
    if (batch.length >= LOOKUP_BATCH) await lookUp();
  }
  if (batch.length > 0) await lookUp();

  const field = keyName(t.layout);
  if (total === 0) return { message: `field ${field}: a value collides with rows already loaded` };
  found.sort((a, b) => a.line - b.line);
  const listed = found.map((o) => `line ${o.line}: ${o.key} ${o.from}`).join('; ');
  const more = total > found.length ? `; and ${total - found.length} more` : '';
  return { message: `field ${field}: ${total} value(s) already used: ${listed}${more}`, line: found[0]!.line };
}
