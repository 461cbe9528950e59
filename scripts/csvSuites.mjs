// The record reader against CSV conformance suites: folders of CSV files, each with the JSON
// records it must give (csv-spectrum's csvs/ + json/, csv-test-data's csv/ + json/). Used by
// scripts/conformance.mjs; reads the built reader in dist/.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { csvRecordBlocks } from '../dist/layout/reader/csvRecords.js';
import { parseLayout } from '../dist/layout/model/parseLayout.js';
import { findBadRows } from '../dist/layout/reader/readSettlement.js';

/** csv-test-data's files named bad-header-* and header-* are read with this header. */
const SUITE_HEADER = { columns: ['foo', 'bar', 'baz'].map((name) => ({ name, type: 'text', required: false })), extraColumns: 'reject' };

const isDir = async (path) => (await stat(path).catch(() => null))?.isDirectory() === true;

/** The CSV folder of a suite: a sibling of a `json` folder holding CSV files. */
export async function suiteFolders(dir) {
  if (!(await isDir(join(dir, 'json')))) return null;
  for (const name of ['csvs', 'csv']) if (await isDir(join(dir, name))) return { csv: join(dir, name), json: join(dir, 'json') };
  return null;
}

async function records(path) {
  const out = [];
  for await (const block of csvRecordBlocks(path, { delimiter: ',', maxRecordBytes: 1024 * 1024 }))
    for (let r = block.next(); r !== null; r = block.next()) out.push(r.fields);
  return out;
}

/**
 * What the suite expects, as records: objects under their header (csv-spectrum's, and
 * csv-test-data's header-* files), arrays as they are; `emptyLines`: the expected records that
 * are a line holding nothing, which the reader skips by design (docs/DESIGN.md: an empty line is no record).
 */
function expectedRecords(json, csvHeader, withHeader) {
  const list = Array.isArray(json) ? json : [json];
  if (withHeader || (list.length > 0 && !Array.isArray(list[0])))
    return { records: [csvHeader, ...list.map((o) => csvHeader.map((h) => o[h]))], emptyLines: 0 };
  const records = list.filter((r) => !(r.length === 1 && r[0] === ''));
  return { records, emptyLines: list.length - records.length };
}

/** Whether csv-parse in its strict RFC 4180 reading refuses the file too: the referee for a refusal. */
function csvParseRefuses(text) {
  try {
    parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true });
    return false;
  } catch {
    return true;
  }
}

/**
 * One case: `agrees`, `refused by design` (the reader refuses what RFC 4180 forbids, as
 * csv-parse does, where the suite expected a lenient reading), or `differs`.
 */
async function checkCase(csvPath, jsonPath, name) {
  const text = await readFile(csvPath, 'utf8');
  if (name.startsWith('bad-header-')) {
    const { error } = await findBadRows(
      csvPath,
      parseLayout(
        { ...SUITE_HEADER, naturalKey: 'foo', columns: SUITE_HEADER.columns.map((c, i) => (i === 0 ? { ...c, required: true } : c)) },
        name,
      ),
    );
    return error
      ? { result: 'agrees', why: `refused, as the suite expects: ${error.message}` }
      : { result: 'differs', why: 'read without a refusal; the suite says it is bad' };
  }
  let got;
  try {
    got = await records(csvPath);
  } catch (err) {
    if (name.startsWith('bad-')) return { result: 'agrees', why: `refused, as the suite expects: ${err.message}` };
    if (csvParseRefuses(text))
      return { result: 'refused by design', why: `${err.message}; csv-parse refuses it too (the suite expects a lenient reading)` };
    return { result: 'differs', why: `refused: ${err.message}` };
  }
  if (name.startsWith('bad-')) return { result: 'differs', why: 'read without a refusal; the suite says it is bad' };
  const json = JSON.parse(await readFile(jsonPath, 'utf8'));
  const { records: expected, emptyLines } = expectedRecords(
    json,
    got[0] ?? [],
    name.startsWith('header-') || !Array.isArray(json) || !Array.isArray(json[0] ?? []),
  );
  const same = JSON.stringify(expected) === JSON.stringify(got);
  const skipped = emptyLines > 0 ? `; the suite's ${emptyLines} empty line(s) are no record here, by design` : '';
  return same
    ? { result: 'agrees', why: `${got.length} records${skipped}` }
    : { result: 'differs', why: `expected ${JSON.stringify(expected).slice(0, 120)}, read ${JSON.stringify(got).slice(0, 120)}` };
}

/** Every case of one suite folder. */
export async function checkSuite(folders) {
  const out = [];
  for (const file of (await readdir(folders.csv)).filter((f) => f.endsWith('.csv')).sort()) {
    const name = file.slice(0, -4);
    out.push({ file, ...(await checkCase(join(folders.csv, file), join(folders.json, `${name}.json`), name)) });
  }
  return out;
}
