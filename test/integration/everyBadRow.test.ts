import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, runCli, startCli } from '../support/cli.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** The sample file with the amounts of the given data lines (2 = the first row) made bad. */
function withBadAmounts(rows: number, prefix: string, badLines: number[]): string {
  const lines = sampleSettlement({ date: '2026-10-10', rows, idPrefix: prefix }).text.split('\n');
  for (const n of badLines) lines[n - 1] = lines[n - 1]!.replace(/,(-?\d+)\.(\d\d),/, ',$1.$2O,');
  return lines.join('\n');
}

describe('a file with several bad rows', () => {
  it('is rejected naming every bad row with its line and field, and check prints the same', async () => {
    const ws = await Workspace.create(db.url);
    const text = withBadAmounts(20, 'EVERY', [4, 9, 17]);
    await ws.put('settle_20261010_a01.csv', text);

    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    const file = (JSON.parse(r.stdout) as { files: { outcome: string; error: string }[] }).files[0]!;
    expect(file.outcome).toBe('rejected');
    expect(file.error).toMatch(/^3 bad rows: line 4, field \w+: .*; line 9, field \w+: .*; line 17, field \w+: /);
    expect(ws.ledgerFile('settle_20261010_a01.csv')).toMatchObject({ state: 'rejected', reason: file.error });
    expect(await rowsWithPrefix(db, 'EVERY')).toBe(0);
    expect((await ws.read('rejected', 'settle_20261010_a01.csv')).toString()).toBe(text);

    const path = join(ws.root, 'copy.csv');
    await writeFile(path, text);
    const checked = await runCli(['check', path], {});
    expect(checked.status).toBe(1);
    expect(checked.stdout.trim()).toBe(`${path}: rejected: ${file.error}`);
  });

  it('names the first hundred bad rows, then how many more', async () => {
    const ws = await Workspace.create(db.url);
    const bad = Array.from({ length: 150 }, (_, i) => i + 2);
    const path = join(ws.root, 'many.csv');
    await writeFile(path, withBadAmounts(160, 'MANY', bad));
    const r = await runCli(['check', path, '--json'], {});
    expect(r.status).toBe(1);
    const error = (JSON.parse(r.stdout) as { files: { error: string }[] }).files[0]!.error;
    expect(error).toMatch(/^150 bad rows: line 2, /);
    expect(error.match(/; line \d+, field/g)).toHaveLength(99);
    expect(error).toMatch(/line 101, field [^;]*; and 50 more$/);
  });

  it('the cron mail names each rejected file and why, one line each, before the summary line (a reject of many rows cut after a row)', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261010_b01.csv', withBadAmounts(6, 'MAILB', [3]));
    await ws.put(
      'settle_20261010_c01.csv',
      withBadAmounts(
        160,
        'MAILC',
        Array.from({ length: 150 }, (_, i) => i + 2),
      ),
    );
    await ws.put('settle_20261010_d01.csv', sampleSettlement({ date: '2026-10-10', rows: 5, idPrefix: 'MAILD' }).text);
    const summaryFile = join(ws.root, 'summary.log');
    // as cron runs it: its output through a pipe, the log in its file
    const r = await finished(
      startCli(
        [...ws.runArgs(), '--log-file', join(ws.root, 'run.log'), '--summary-file', summaryFile],
        { DATABASE_URL: ws.databaseUrl },
        { cwd: ws.root, throughPipe: true },
      ),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    const run = parseSummary(r.stdout).run;
    expect(lines[0]).toMatch(/^rejected settle_20261010_b01.csv: line 3, field \w+: "-?\d+\.\d\dO" is not a decimal amount/);
    expect(lines[1]).toMatch(
      /^rejected settle_20261010_c01.csv: 150 bad rows: line 2, field \w+: "[^"]+" is not a decimal amount[^;]*; line 3, /,
    );
    expect(lines[1]).toMatch(new RegExp(`"[^;]*; … \\(all of it: settle-ingest report run ${run}\\)$`));
    expect(lines[1]!.length).toBeLessThan(400);
    expect(lines[2]).toMatch(/^run \S+ done: loaded=1 skipped=0 held=0 rejected=2 /);
    // the summary file has what stdout had, each line after its time
    expect(
      (await readFile(summaryFile, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => line.replace(/^\S+Z /, '')),
    ).toEqual(lines);
    expect(await ws.files('rejected')).toEqual(['settle_20261010_b01.csv', 'settle_20261010_c01.csv']);
  });

  it('check says ok with the rows of a good file, exit 0, and refuses a missing file (exit 2)', async () => {
    const ws = await Workspace.create(db.url);
    const path = join(ws.root, 'good.csv');
    await writeFile(path, sampleSettlement({ date: '2026-10-11', rows: 7, idPrefix: 'GOOD' }).text);
    const ok = await runCli(['check', path], {});
    expect(ok.status).toBe(0);
    expect(ok.stdout.trim()).toBe(`${path}: ok, 7 rows`);
    const missing = await runCli(['check', join(ws.root, 'nope.csv')], {});
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  });
});
