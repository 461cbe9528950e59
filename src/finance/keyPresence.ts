import { keyLookup } from './keyLookup.js';
import { readSettlement } from '../layout/reader/readSettlement.js';
import { readContextOf, type FinanceTarget } from './target.js';

const LOOKUP_BATCH = 1000;

export interface KeyPresence {
  /** data rows in the file */
  rows: number;
  /** rows whose natural key the settlement table holds */
  present: number;
  /** the first row whose key it does not hold, to name in a message */
  /** `key`: quoted, as messages show it */
  firstMissing?: { line: number; key: string };
}

/**
 * How many of a file's rows have their natural key in the settlement table: tells a file
 * loaded before file markers existed (every key there) from one never loaded (none) or loaded
 * in part (some). Keys are looked up one batch at a time; a layout numbering repeated keys keeps
 * a count per distinct key of the file (the file's own rows, never the table's).
 * Throws the reader's RejectError when the file does not fit the layout.
 */
export async function keyPresence(
  financeTarget: FinanceTarget,
  path: string,
  fileName: string,
  deliveredAt?: number,
): Promise<KeyPresence> {
  const lookup = keyLookup(financeTarget);
  const result: KeyPresence = { rows: 0, present: 0 };
  let batch: { values: string[]; line: number }[] = [];

  const lookUp = async () => {
    const found = await lookup.present(batch.map((b) => b.values));
    for (const b of batch) {
      if (found.has(lookup.identity(b.values))) result.present++;
      else result.firstMissing ??= { line: b.line, key: lookup.show(b.values) };
    }
    batch = [];
  };

  // with `occurrence`, the n-th row of the file with a key is the n-th loaded under it: each
  // distinct key of the file is counted here (its identity, as the UNIQUE index compares it)
  const occurrences = financeTarget.layout.occurrence === undefined ? undefined : new Map<string, number>();
  for await (const row of readSettlement(path, financeTarget.layout, readContextOf({ name: fileName, deliveredAt }))) {
    result.rows++;
    let values = lookup.keyOf(row.values);
    if (occurrences) {
      const identity = lookup.identity(values);
      const occurrence = (occurrences.get(identity) ?? 0) + 1;
      occurrences.set(identity, occurrence);
      values = lookup.withOccurrence(values, occurrence);
    }
    batch.push({ values, line: row.line });
    if (batch.length >= LOOKUP_BATCH) await lookUp();
  }
  if (batch.length > 0) await lookUp();
  return result;
}
