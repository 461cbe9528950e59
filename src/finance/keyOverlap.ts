import { KeyClashes, KeyRepeats } from '../layout/reader/naturalKeys.js';
import { readSettlement } from '../layout/reader/readSettlement.js';
import { keyLookup } from './keyLookup.js';
import { readContextOf, type FinanceTarget, type LoadRequest } from './target.js';

const LOOKUP_BATCH = 1000;

/**
 * Explains a natural-key violation after the load was rolled back: re-reads the staged file
 * and names up to ten keys that repeat inside it (KeyRepeats, as `check` finds them) or were
 * loaded before from another file. Runs only on the failure path, so it may keep the file's
 * keys in memory.
 */
export async function describeKeyOverlap(financeTarget: FinanceTarget, req: LoadRequest): Promise<{ message: string; line?: number }> {
  const lookup = keyLookup(financeTarget);
  const repeats = new KeyRepeats(financeTarget.layout);
  const clashes = new KeyClashes();
  let batch: { key: string; values: string[]; line: number }[] = [];

  const lookUp = async () => {
    // rows of this very content are not a clash (they exist when it is being reprocessed)
    const loaded = await lookup.loadedFrom(
      batch.map((b) => b.values),
      req.sha256,
    );
    for (const b of batch) {
      const from = loaded.get(b.key);
      if (from !== undefined) clashes.add({ key: lookup.show(b.values), line: b.line, from: `already loaded from ${from}` });
    }
    batch = [];
  };

  try {
    for await (const row of readSettlement(req.stagedPath, financeTarget.layout, readContextOf(req))) {
      if (clashes.addRepeat(repeats, row.values, row.line)) continue;
      const values = lookup.keyOf(row.values);
      batch.push({ key: lookup.identity(values), values, line: row.line });
      if (batch.length >= LOOKUP_BATCH) await lookUp();
    }
  } finally {
    repeats.close();
  }
  if (batch.length > 0) await lookUp();
  return clashes.message(financeTarget.layout);
}
