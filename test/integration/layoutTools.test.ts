import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

// `layout suggest` and the conformance runner read files only: no database, no ledger.

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));
const CONFORMANCE = fileURLToPath(new URL('../../scripts/conformance.mjs', import.meta.url));

function conformance(dir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CONFORMANCE, dir, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

describe('layout suggest', () => {
  it('prints a draft for a file of no preset, and check accepts the config it prints', async () => {
    const root = await mkdtemp(join(tmpdir(), 'settle-suggest-'));
    const export_ = join(root, 'remittance_2026_03_14.csv');
    await writeFile(
      export_,
      'Remittance ID|Booked|Amount|Currency\nRM-1001|2026-03-14 08:00:00|1250.00|EUR\nRM-1002|2026-03-14 09:30:00|-35.50|EUR\nRM-1003|2026-03-14 10:00:00|.75|GBP\n',
    );
    const r = await runCli(['layout', 'suggest', export_, fixture('STL-20260314.01.009.csv'), '--json']);
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      files: { preset: string | null; config: string; columns: { name: string; type: string }[] | null }[];
    };
    expect(doc.files.map((f) => f.preset)).toEqual([null, 'paypal-settlement-report']);
    expect(doc.files[0]!.columns!.map((c) => `${c.name}:${c.type}`)).toEqual([
      'remittance_id:text',
      'booked:timestamp',
      'amount:decimal',
      'currency:currency',
    ]);
    const config = join(root, 'draft.json');
    await writeFile(config, doc.files[0]!.config);
    expect(JSON.parse(await readFile(config, 'utf8')).layout).toMatchObject({ delimiter: '|', naturalKey: 'remittance_id' });
    const checked = await runCli(['check', '--config', config, export_]);
    expect(checked.stdout.trim()).toBe(`${export_}: ok, 3 rows`);
    expect(checked.status).toBe(0);

    const text = await runCli(['layout', 'suggest', export_]);
    expect(text.stdout).toContain(`remittance_2026_03_14.csv: no preset fits as it is`);
    expect(text.stdout).toContain(
      '    booked (Booked): timestamp yyyy-MM-dd HH:mm:ss; times like 2026-03-14 08:00:00; no zone in the file: UTC assumed',
    );
  });
});

describe('npm run conformance', () => {
  it('accepts genuine files with the layout that claims their folder, names a file cut short as broken, counts a gap, and checks a CSV suite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-conformance-'));
    for (const d of ['adyen', 'bank-fr-semicolon', 'braintree', 'suite/csvs', 'suite/json']) await mkdir(join(dir, d), { recursive: true });
    await copyFile(fixture('settlement_detail_report_batch_42.csv'), join(dir, 'adyen', 'settlement_detail_report_batch_42.csv'));
    const adyen = (await readFile(fixture('settlement_detail_report_batch_42.csv'), 'utf8')).split('\n');
    adyen[2] = adyen[2]!.split(',').slice(0, 12).join(',');
    await writeFile(join(dir, 'adyen', 'settlement_detail_report_batch_43.csv'), adyen.join('\n'));
    await copyFile(fixture('layouts/releve_2026_03.csv'), join(dir, 'bank-fr-semicolon', 'releve_2026_03.csv'));
    await writeFile(join(dir, 'braintree', 'fees.csv'), 'Transaction ID,Amount\nx,1.00\n');
    await writeFile(join(dir, 'suite', 'csvs', 'quoted.csv'), 'a,b\n1,"x, ""y"""\n');
    await writeFile(join(dir, 'suite', 'json', 'quoted.json'), '[{"a": "1", "b": "x, \\"y\\""}]');

    const r = await conformance(dir);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as {
      results: { file: string; layout: string; result: string; why: string }[];
      totals: Record<string, number>;
    };
    expect(doc.results.map((x) => [x.file, x.layout, x.result])).toEqual([
      ['adyen/settlement_detail_report_batch_42.csv', 'adyen-settlement-details', 'accepted'],
      ['adyen/settlement_detail_report_batch_43.csv', 'adyen-settlement-details', 'broken'],
      ['bank-fr-semicolon/releve_2026_03.csv', 'bank-fr-semicolon', 'accepted'],
      ['braintree/fees.csv', 'braintree-transaction-level-fees', 'gap'],
      ['suite/csvs/quoted.csv', 'record reader', 'agrees'],
    ]);
    expect(doc.results[1]!.why).toBe('line 3: expected 25 fields, found 12');
    expect(doc.totals).toMatchObject({ exports: 4, accepted: 2, broken: 1, gaps: 1, reader_cases: 1, reader_agrees: 1 });
    expect(r.status).toBe(1);
  });

  it('names every entry it skips and why: a symlinked export, a FIFO, a link loop, a link to nothing, a file outside any partner folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-conformance-'));
    await mkdir(join(dir, 'adyen'));
    await copyFile(fixture('settlement_detail_report_batch_42.csv'), join(dir, 'adyen', 'settlement_detail_report_batch_42.csv'));
    await symlink(join(dir, 'adyen', 'settlement_detail_report_batch_42.csv'), join(dir, 'adyen', 'linked_batch_42.csv'));
    execFileSync('mkfifo', [join(dir, 'adyen', 'pipe.csv')]);
    await symlink('loop_b.csv', join(dir, 'adyen', 'loop_a.csv'));
    await symlink('loop_a.csv', join(dir, 'adyen', 'loop_b.csv'));
    await symlink('gone.csv', join(dir, 'adyen', 'dangling.csv'));
    await writeFile(join(dir, 'loose.csv'), 'a,b\n1,2\n');

    const r = await conformance(dir);
    expect(r.stderr).toBe('');
    const doc = JSON.parse(r.stdout) as {
      results: { file: string; result: string }[];
      skipped: { file: string; why: string }[];
      totals: Record<string, number>;
    };
    expect(doc.results.map((x) => [x.file, x.result])).toEqual([['adyen/settlement_detail_report_batch_42.csv', 'accepted']]);
    expect(doc.skipped).toEqual([
      { file: 'adyen/dangling.csv', why: 'a symbolic link to nothing (gone.csv): not followed' },
      {
        file: 'adyen/linked_batch_42.csv',
        why: expect.stringMatching(/^a symbolic link \(to .*settlement_detail_report_batch_42\.csv\): not followed/),
      },
      { file: 'adyen/loop_a.csv', why: 'a symbolic link in a loop (to loop_b.csv): not followed' },
      { file: 'adyen/loop_b.csv', why: 'a symbolic link in a loop (to loop_a.csv): not followed' },
      { file: 'adyen/pipe.csv', why: 'a FIFO, not a regular file: nothing to read' },
      { file: 'loose.csv', why: expect.stringMatching(/^not in a partner's folder/) },
    ]);
    expect(doc.totals).toMatchObject({ exports: 1, accepted: 1, skipped: 6 });
    const text = spawnSync(process.execPath, [CONFORMANCE, dir], { encoding: 'utf8' });
    expect(text.stdout).toContain('skipped, not checked:\n  adyen/dangling.csv: a symbolic link to nothing');
    expect(text.status).toBe(0);
  });
});
