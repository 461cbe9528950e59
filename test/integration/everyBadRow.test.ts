import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { runCli } from '../support/cli.js';
import { rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

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
