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
 * in part (some). Keys are looked up one batch at a time, so memory stays flat for a big file.
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

  for await (const row of readSettlement(path, financeTarget.layout, readContextOf({ name: fileName, deliveredAt }))) {
    result.rows++;
    batch.push({ values: lookup.keyOf(row.values), line: row.line });
    if (batch.length >= LOOKUP_BATCH) await lookUp();
  }
  if (batch.length > 0) await lookUp();
  return result;
}
