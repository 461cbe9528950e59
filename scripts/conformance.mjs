#!/usr/bin/env node
// `npm run conformance -- DIR [--config FILE]… [--json]`: checks every partner export in DIR
// against the layouts that claim it, and prints one table: file, layout, result and why.
//
// How a folder maps to layouts: a subfolder of DIR named exactly as a preset or an example
// config (fixtures/layouts/NAME.config.json, or a --config FILE's name) is read with that layout
// only; any other subfolder is a partner's, and every preset and config whose name begins with a
// word the folder's name begins with is a candidate (`adyen-other` takes adyen-*, `checkoutcom`
// checkout-*, `stripe` stripe-*). Each file is read with the candidates in the order they fit it
// (the header naming most of a layout's columns first); the first that accepts the whole file
// wins. A folder holding a CSV conformance suite (csvs/ or csv/ beside json/) checks the record
// reader against the records the suite expects. Nothing is loaded: a file is accepted when the
// run's own checks without a database accept it (checkContent, as `check` makes them: every row,
// the trailer and count records, a last record cut short, the natural key's repeats).
//
// A refusal is `broken` when the file itself is at fault whatever the layout (a record cut short
// or too long for its own header, a quote left open, bytes that are not UTF-8, a trailer or count
// record that disagrees) and a `gap` otherwise. Exit status 1 when there is a gap.
import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import { textTable } from '../dist/report/textTable.js';
import { PRESETS } from '../dist/layout/model/presets.js';
import { parseLayout } from '../dist/layout/model/parseLayout.js';
import { rankLayouts } from '../dist/layout/suggest/layoutFit.js';
import { checkContent } from '../dist/pipeline/fileChecks.js';
import { checkSuite, suiteFolders } from './csvSuites.mjs';

const CONFIGS = new URL('../fixtures/layouts/', import.meta.url);
const BROKEN = [
  /: expected (at least )?\d+ fields, found \d+/,
  /a quoted value is not closed/,
  /not valid UTF-8/,
  /closing double quote is followed by/,
  /trailer/,
  /says \d+ data records/,
  /the upload stopped mid-line/,
  // a control total of the file's own that its rows disagree with (layout/reader/totalsCheck.ts)
  /: nets to -?[\d.]+ with its/,
  /: says the .+ total .+, the rows add up to/,
  /: says \d+ rows, the file has \d+/,
  /totals disagree/,
];

function usage(message) {
  process.stderr.write(`conformance: ${message}\nusage: npm run conformance -- DIR [--config FILE]... [--json]\n`);
  process.exit(2);
}

async function exampleLayouts(extra) {
  const files = [...(await readdir(CONFIGS)).filter((f) => f.endsWith('.config.json')).map((f) => new URL(f, CONFIGS).pathname), ...extra];
  const out = [];
  for (const path of files) {
    const name = basename(path).replace(/\.config\.json$|\.json$/, '');
    const config = JSON.parse(await readFile(path, 'utf8'));
    if (config.layout === undefined) usage(`${path} has no "layout"`);
    try {
      out.push({ ...parseLayout(config.layout, `${path}: "layout"`), name });
    } catch (err) {
      // a --config this release cannot read (a key it does not know yet) is named on the files it claims; an example must read
      if (!extra.includes(path)) throw err;
      out.push({ name, unreadable: err.message.replace(`${path}: "layout": `, '') });
    }
  }
  return out;
}

/** The layouts that claim a folder: the one named like it, else every one of the partner its name begins with. */
function candidates(folder, layouts) {
  const exact = layouts.filter((l) => l.name === folder);
  if (exact.length > 0) return exact;
  return layouts.filter((l) => l.name !== 'default' && folder.startsWith(l.name.split('-')[0]));
}

/** The run's own checks without a database (src/pipeline/fileChecks.ts), as `check` makes them: a corpus file is delivered plain. */
const check = (path, layout, fileName) => checkContent(path, layout, { fileName, plain: true });

async function checkFile(path, fileName, claimed) {
  if (claimed.length === 0) return { layout: '—', result: 'gap', why: 'no preset or example config claims this folder' };
  const unread = claimed.filter((l) => l.unreadable);
  const layouts = claimed.filter((l) => !l.unreadable);
  const found = layouts.length > 0 ? await judged(path, fileName, layouts) : undefined;
  if (found?.result === 'accepted' || unread.length === 0) return found;
  // not accepted by the layouts this release reads: the configs it cannot read may be the ones that fit
  const why = unread.map((l) => `${l.name} not read: ${l.unreadable}`).join('; ');
  return { layout: unread.map((l) => l.name).join(', '), result: 'gap', why: found ? `${why}; ${found.layout}: ${found.why}` : why };
}

/** The first of the readable `layouts`, in the order they fit the file, that accepts it; else why the best fit refuses it. */
async function judged(path, fileName, layouts) {
  const ranked = await rankLayouts(path, fileName, layouts);
  let first;
  for (const fit of ranked.filter((f) => f.fits)) {
    const { rows, skippedRows, error } = await check(path, fit.layout, fileName);
    if (!error)
      return {
        layout: fit.layout.name,
        result: 'accepted',
        why: `${rows} rows${skippedRows ? `, ${skippedRows} counted, not loaded` : ''}`,
      };
    first ??= { layout: fit.layout.name, error };
  }
  // refused by every layout that fits it: why, by the one that fits it best
  const best = ranked[0];
  const why = first?.error.message ?? (await check(path, best.layout, fileName)).error?.message ?? best.problem ?? 'refused';
  const layout = first?.layout ?? best.layout.name;
  return { layout, result: BROKEN.some((re) => re.test(why)) ? 'broken' : 'gap', why };
}

/** Why a link is not followed: a run never reads one either (what it points at may be anything, anywhere). */
async function linkWhy(path) {
  const target = await readlink(path);
  const reached = await stat(path).then(
    () => null,
    (err) => err.code,
  );
  if (reached === 'ELOOP') return `a symbolic link in a loop (to ${target}): not followed`;
  if (reached === 'ENOENT') return `a symbolic link to nothing (${target}): not followed`;
  return `a symbolic link (to ${target}): not followed, as a run never reads a link; copy the file itself in`;
}

function kindOf(entry) {
  if (entry.isFIFO()) return 'a FIFO';
  if (entry.isSocket()) return 'a socket';
  if (entry.isBlockDevice() || entry.isCharacterDevice()) return 'a device';
  return 'not a file';
}

async function main() {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const extra = [];
  const dirs = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--json') continue;
    if (args[i] === '--config') extra.push(args[++i] ?? usage('--config needs a file'));
    else if (args[i].startsWith('--')) usage(`unknown option ${args[i]}`);
    else dirs.push(args[i]);
  }
  if (dirs.length !== 1) usage('give one folder of partner exports');
  const dir = dirs[0];
  if (!(await stat(dir).catch(() => null))?.isDirectory()) usage(`${dir} is not a folder`);
  const layouts = [...PRESETS.values(), ...(await exampleLayouts(extra))];

  const results = [];
  // every entry not checked is named with why: nothing in the folder passes unseen
  const skipped = [];
  const skip = (path, why) => skipped.push({ file: relative(dir, path), why });
  const walk = async (folder, claimed) => {
    const suite = await suiteFolders(folder);
    if (suite) {
      for (const c of await checkSuite(suite))
        results.push({ file: relative(dir, join(suite.csv, c.file)), layout: 'record reader', result: c.result, why: c.why });
      return;
    }
    for (const entry of (await readdir(folder, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(folder, entry.name);
      if (entry.isSymbolicLink()) skip(path, await linkWhy(path));
      else if (entry.isDirectory()) await walk(path, claimed ?? candidates(entry.name, layouts));
      else if (!entry.isFile()) skip(path, `${kindOf(entry)}, not a regular file: nothing to read`);
      else if (/^readme/i.test(entry.name)) skip(path, 'a README, not an export');
      else if (!claimed) skip(path, "not in a partner's folder: put it in a folder named for its partner or layout");
      else results.push({ file: relative(dir, path), ...(await checkFile(path, entry.name, claimed)) });
    }
  };
  await walk(dir, null);

  const count = (r) => results.filter((x) => x.result === r).length;
  const exports = results.filter((r) => r.layout !== 'record reader');
  const suite = results.filter((r) => r.layout === 'record reader');
  const totals = {
    cases: results.length,
    exports: exports.length,
    accepted: count('accepted'),
    broken: count('broken'),
    gaps: count('gap'),
    reader_cases: suite.length,
    reader_agrees: count('agrees'),
    reader_by_design: count('refused by design'),
    reader_differs: count('differs'),
    skipped: skipped.length,
  };
  const right = totals.accepted + totals.broken + totals.reader_agrees + totals.reader_by_design;
  if (json) process.stdout.write(`${JSON.stringify({ version: 1, results, skipped, totals: { ...totals, right } })}\n`);
  else {
    const short = (s) => (s.length > 140 ? `${s.slice(0, 139)}…` : s);
    process.stdout.write(
      `${textTable(
        ['file', 'layout', 'result', 'why'],
        results.map((r) => [r.file, r.layout, r.result, short(r.why)]),
      )}\n\n`,
    );
    if (skipped.length > 0) {
      process.stdout.write(`skipped, not checked:\n${skipped.map((x) => `  ${x.file}: ${x.why}`).join('\n')}\n\n`);
    }
    process.stdout.write(
      `${totals.exports} exports: ${totals.accepted} accepted, ${totals.broken} broken (the file is at fault), ${totals.gaps} gaps; ` +
        `record reader: ${totals.reader_agrees} of ${totals.reader_cases} cases agree, ${totals.reader_by_design} refused by design, ${totals.reader_differs} differ\n` +
        `${right} of ${totals.cases} cases right\n`,
    );
  }
  process.exitCode = totals.gaps + totals.reader_differs > 0 ? 1 : 0;
}

await main();
