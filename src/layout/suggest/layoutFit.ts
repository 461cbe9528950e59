import { RejectError } from '../../errors.js';
import { csvRecordBlocks, type CsvRecord } from '../reader/csvRecords.js';
import { DEFAULT_MAX_RECORD_BYTES, type Layout } from '../model/layout.js';
import { readSettlement } from '../reader/readSettlement.js';

/** How many rows of a file `layout suggest` and the conformance runner check against a layout. */
export const SAMPLE_ROWS = 1000;

/** How well a layout fits a file: its columns the header names, and whether the first rows check. */
export interface LayoutFit {
  layout: Layout;
  /** the layout's columns the file's header names (for a file without a header: its columns) */
  found: number;
  /** the first rows (up to SAMPLE_ROWS) read with the layout without a reject */
  fits: boolean;
  /** why not, when it does not fit: the reader's reject */
  problem?: string;
  /** the rows checked */
  rows: number;
}

/**
 * The first records of a file (up to `count`), read with one delimiter (and encoding: UTF-8 unless
 * given; lines continuing a record joined to it, when asked); none when the file is not readable as CSV.
 */
export async function firstRecords(
  path: string,
  delimiter: string,
  count: number,
  encoding?: string,
  continuationLines?: boolean,
): Promise<CsvRecord[]> {
  const records: CsvRecord[] = [];
  try {
    const opts = {
      delimiter,
      maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
      ...(encoding !== undefined ? { encoding } : {}),
      ...(continuationLines ? { continuationLines } : {}),
    };
    for await (const block of csvRecordBlocks(path, opts)) {
      for (let csvRecord = block.next(); csvRecord !== null; csvRecord = block.next()) {
        records.push(csvRecord);
        if (records.length >= count) return records;
      }
    }
  } catch {
    // what was read before the problem is the sample
  }
  return records;
}

/** The header record a layout would match against: the first after its preamble, or its header type's first. */
function headerOf(layout: Layout, records: readonly CsvRecord[]): readonly string[] | undefined {
  const type = layout.recordTypes && [...layout.recordTypes].find(([, r]) => r.role === 'header')?.[0];
  if (type !== undefined) return records.find((r) => r.fields[0] === type)?.fields;
  return records.find((r) => r.line > layout.skipLines)?.fields;
}

/** The layout's columns a header names, by their own header text or an alternative. */
function columnsFound(layout: Layout, header: readonly string[] | undefined): number {
  if (!layout.header) return layout.columns.length;
  const names = new Set((header ?? []).map((f) => f.trim()));
  return layout.columns.filter((c) => names.has(c.from) || (c.alternatives ?? []).some((a) => names.has(a.header))).length;
}

/**
 * Words of a file's name that say which of two layouts reading the same columns it is, by the
 * table they load (Stripe's two itemized reports share their columns; a layout extending one
 * keeps its table).
 */
const NAME_HINTS: Record<string, RegExp> = {
  stripe_payout_reconciliation: /payout|settlement/i,
  stripe_balance_change: /activity|balance/i,
};

/** Whether a file's name points to a layout (1) or not (0). */
export const namedFor = (layout: Layout, fileName: string) => Number(NAME_HINTS[layout.table]?.test(fileName) ?? false);

/**
 * Each layout against a file's first rows, best first: those that read them come before those
 * that refuse them, then more columns found before fewer (a preset naming more of the header is
 * the more specific), then the one the file's name points to, then the layouts' own order.
 */
export async function rankLayouts(path: string, fileName: string, layouts: readonly Layout[]): Promise<LayoutFit[]> {
  const byDelimiter = new Map<string, CsvRecord[]>();
  const fits: LayoutFit[] = [];
  for (const layout of layouts) {
    const reading = `${layout.delimiter} ${layout.encoding ?? ''}`;
    let records = byDelimiter.get(reading);
    if (!records) byDelimiter.set(reading, (records = await firstRecords(path, layout.delimiter, 50, layout.encoding)));
    const found = columnsFound(layout, headerOf(layout, records));
    fits.push({ layout, found, ...(await checkSample(path, fileName, layout)) });
  }
  return fits
    .map((fit, order) => ({ fit, order }))
    .sort(
      (a, b) =>
        Number(b.fit.fits) - Number(a.fit.fits) ||
        b.fit.found - a.fit.found ||
        namedFor(b.fit.layout, fileName) - namedFor(a.fit.layout, fileName) ||
        a.order - b.order,
    )
    .map(({ fit }) => fit);
}

/** The first rows of a file read with a layout: whether they check, or the reject that says why not. */
async function checkSample(path: string, fileName: string, layout: Layout): Promise<{ fits: boolean; rows: number; problem?: string }> {
  let rows = 0;
  try {
    for await (const row of readSettlement(path, layout, { fileName })) {
      if (row && ++rows >= SAMPLE_ROWS) break;
    }
    return { fits: true, rows };
  } catch (err) {
    if (!(err instanceof RejectError)) throw err;
    return { fits: false, rows, problem: err.message };
  }
}
