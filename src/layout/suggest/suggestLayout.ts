import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAt } from '../../syncFs.js';
import { findBadRows } from '../reader/readSettlement.js';
import { totalsText } from '../reader/totalsCheck.js';
import { draftLayout, widths, type Draft, type SampleFacts } from './draftLayout.js';
import { asciiWords, loadRomanizer, type Romanize } from './columnNames.js';
import type { CsvRecord } from '../reader/csvRecords.js';
import { proveDraft } from './draftProof.js';
import { addFooter, guessFooter } from './footerGuess.js';
import { decodeTail } from '../reader/textDecoding.js';
import { guessEncoding, type EncodingGuess } from '../values/encodingGuess.js';
import { MAX_LAYOUT_COLUMNS, type Layout } from '../model/layout.js';
import { firstRecords, namedFor, rankLayouts, type LayoutFit } from './layoutFit.js';
import { PRESETS } from '../model/presets.js';
import { quoteValue } from '../values/quoteValue.js';

/** What `layout suggest` says of one file. */
export interface Suggestion {
  /** the preset that fits, if one does */
  preset: string | null;
  /** why that preset, or why none */
  why: string;
  /** other presets that read the file as well */
  alsoFits: string[];
  /** the config file to start from: `{"layout": …}` (a preset's name, an extension of one, or a draft); empty when nothing could be read */
  config: Record<string, unknown>;
  /** for a draft: each column as inferred, the key candidate and the draft's assumptions */
  draft?: Draft;
  /** the encoding the file's first bytes are in, and why */
  encoding?: EncodingGuess;
}

/** How much of a file `layout suggest` learns a draft from. */
const SAMPLE_BYTES = 1024 * 1024;

const DELIMITERS = [',', ';', '\t', '|'];

/** A table name from a file's name: its words (romanized) without dates, batch numbers or the extension. */
function tableName(fileName: string, romanize: Romanize): string {
  const stem = fileName.replace(/^.*[\\/]/, '').replace(/(\.[A-Za-z0-9]+)+$/, '');
  const words = asciiWords(stem, romanize)
    .split('_')
    .filter((w) => w !== '' && !/^\d+$/.test(w));
  const name = words.join('_').slice(0, 50).replace(/_+$/, '');
  return /^[a-z]/.test(name) ? name : name === '' ? 'partner_rows' : `partner_${name}`;
}

/**
 * The file's first bytes decoded from the encoding they are in, as a UTF-8 file of their own
 * for the record reader (which reads UTF-8): `use` gets its path; it is removed after.
 */
async function withDecodedSample<T>(
  path: string,
  use: (decoded: string, encoding: EncodingGuess, whole: boolean) => Promise<T>,
): Promise<T> {
  const bytes = await readAt(path, SAMPLE_BYTES, 0);
  const encoding = guessEncoding(bytes);
  const dir = mkdtempSync(join(tmpdir(), 'settle-suggest-'));
  try {
    const decoded = join(dir, 'sample.csv');
    const text = new TextDecoder(encoding.encoding).decode(bytes);
    // a sample cut inside a record ends at its last whole line
    writeFileSync(decoded, bytes.length < SAMPLE_BYTES ? text : text.slice(0, text.lastIndexOf('\n') + 1));
    return await use(decoded, encoding, bytes.length < SAMPLE_BYTES);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The delimiter whose reading gives the most records of one width above one field. */
async function sniffDelimiter(path: string) {
  let best = { delimiter: ',', score: -1, records: [] as Awaited<ReturnType<typeof firstRecords>> };
  for (const delimiter of DELIMITERS) {
    const records = await firstRecords(path, delimiter, 1000);
    const counts = new Map<number, number>();
    for (const r of records) if (r.fields.length > 1) counts.set(r.fields.length, (counts.get(r.fields.length) ?? 0) + 1);
    let score = 0;
    for (const [width, n] of counts) score = Math.max(score, n * Math.log2(width));
    if (score > best.score) best = { delimiter, score, records };
  }
  return best;
}

/** Of layouts that fit alike, the one the file's name points to, else the first. */
const byName = (fits: LayoutFit[], fileName: string) => fits.find((f) => namedFor(f.layout, fileName) === 1) ?? fits[0]!;

const describe = (fit: LayoutFit) =>
  fit.layout.header
    ? `the header names ${fit.found} of its ${fit.layout.columns.length} columns (all it requires), and the first ${fit.rows} rows check`
    : `its records and the first ${fit.rows} rows check`;

/** The control totals a preset states, checked over the whole file: `; its totals: … balances`, or why they do not. */
async function totalsFound(path: string, fileName: string, layout: Layout): Promise<string> {
  if (!layout.totals) return '';
  const { totals, error } = await findBadRows(path, layout, { fileName });
  if (error) return `; but the whole file does not check: ${error.message}`;
  return totals?.length ? `; its totals: ${totalsText(totals)}` : '; it states none of the totals the preset checks';
}

/**
 * Which preset reads a file, and why; or, when none does, a draft layout inferred from the
 * file's first records for a person to review (`check` then proves it). `layouts`: the
 * candidates, the shipped presets by default.
 */
export async function suggestLayout(
  path: string,
  fileName: string,
  layouts: readonly Layout[] = [...PRESETS.values()],
): Promise<Suggestion> {
  const ranked = await rankLayouts(path, fileName, layouts);
  const fitting = ranked.filter((layoutFit) => layoutFit.fits && layoutFit.found > 0);
  if (fitting.length > 0) {
    const top = fitting.filter((f) => f.found === fitting[0]!.found);
    const hinted = byName(top, fileName);
    const others = fitting.filter((f) => f !== hinted).map((f) => f.layout.name);
    const tie =
      top.length > 1
        ? `; ${top
            .filter((f) => f !== hinted)
            .map((f) => f.layout.name)
            .join(', ')} reads it as well${hinted !== top[0] ? ' (the file name points here)' : ''}`
        : '';
    const totals = await totalsFound(path, fileName, hinted.layout);
    return {
      preset: hinted.layout.name,
      why: `${describe(hinted)}${tie}${totals}`,
      alsoFits: others,
      config: { layout: hinted.layout.name },
    };
  }
  // a preset whose columns are all there but whose times need a zone the file's name does not give
  const needZone = ranked.filter((f) => f.problem?.includes("is in the report's own time zone"));
  if (needZone.length > 0) {
    const zoned = byName(
      needZone.filter((f) => f.found === needZone[0]!.found),
      fileName,
    );
    const config = { layout: { extends: zoned.layout.name, timeZone: 'UTC' } };
    const why =
      `${zoned.layout.name} reads its columns, but the file's times are in the report's own zone and its name (${quoteValue(fileName)}) does not say which: ` +
      'extend the preset with the zone the reports are made in (UTC, as here, is what Stripe uses when none was asked for; a Dashboard download named like …_America-Chicago.csv needs none)';
    return { preset: null, why, alsoFits: [], config };
  }
  return withDecodedSample(path, async (decoded, encoding, whole) => {
    const { delimiter, records } = await sniffDelimiter(decoded);
    if (records.length === 0)
      return {
        preset: null,
        why: 'no record could be read to learn from: the file is empty, or not CSV',
        alsoFits: [],
        config: {},
        encoding,
      };
    const width = widths(records)[0]!;
    if (width > MAX_LAYOUT_COLUMNS) {
      const why = `its records are ${width} fields wide: more columns than a table holds (${MAX_LAYOUT_COLUMNS}), so no layout loads it and none is drafted`;
      return { preset: null, why, alsoFits: [], config: {}, encoding };
    }
    const romanize = await loadRomanizer();
    const table = tableName(fileName, romanize);
    // the file's last lines, where a footer would be: the sample when it is the whole file, else the file's end
    const ending = whole ? readFileSync(decoded, 'utf8') : (await decodeTail(path, encoding.encoding, 64 * 1024)).text;
    /** A draft from records, without the lines after the rows when the file ends with a footer (declared in the draft, said). */
    const drafted = (from: readonly CsvRecord[], facts: SampleFacts) => {
      const first = draftLayout(from, delimiter, table, romanize, facts);
      const footer = guessFooter(ending, delimiter, from, first, whole);
      if (!footer) return first;
      const before = footer.firstLine;
      const redrafted =
        before !== undefined
          ? draftLayout(
              from.filter((r) => r.line < before),
              delimiter,
              table,
              romanize,
              facts,
            )
          : first;
      addFooter(redrafted, footer);
      return redrafted;
    };
    let draft = drafted(records, { encoding });
    // the sample taught the draft; the whole file proves it, as its own check will
    await proveDraft(path, fileName, draft);
    if (draft.layout.continuationLines === true) {
      // rows broken over lines: learnt again from the records as joined, and proved again
      const joined = await firstRecords(decoded, delimiter, 1000, undefined, true);
      draft = drafted(joined, { encoding, continuationLines: true });
      await proveDraft(path, fileName, draft);
    }
    const closest = ranked.find((f) => f.found > 0);
    const why = closest
      ? `no preset fits (closest: ${closest.layout.name}, ${closest.problem ?? 'which does not read it'}): a draft layout from the first ${records.length} records`
      : `no preset fits: a draft layout from the first ${records.length} records`;
    return { preset: null, why, alsoFits: [], config: { layout: draft.layout }, draft, encoding };
  });
}
