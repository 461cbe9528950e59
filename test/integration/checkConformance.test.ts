import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

// the conformance runner reads files only (no database): it judges by the same checks as `check`
const CONFORMANCE = fileURLToPath(new URL('../../scripts/conformance.mjs', import.meta.url));

interface Result {
  file: string;
  layout: string;
  result: string;
  why: string;
}

function conformance(dir: string, configs: string[]): { status: number | null; results: Result[] } {
  const r = spawnSync(process.execPath, [CONFORMANCE, dir, ...configs.flatMap((c) => ['--config', c]), '--json'], { encoding: 'utf8' });
  return { status: r.status, results: (JSON.parse(r.stdout) as { results: Result[] }).results };
}

const LAYOUT = {
  table: 'ledger_lines',
  columns: [
    { name: 'ref', type: 'text' },
    { name: 'amount', type: 'decimal' },
    { name: 'note', type: 'text', required: false },
  ],
  naturalKey: 'ref',
};

describe('npm run conformance judges by the run’s own checks', () => {
  it('as check does: a repeated key and a cut last record are refused, for the reasons check gives', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-conformance-'));
    await mkdir(join(dir, 'acme'));
    const config = join(dir, 'acme-ledger.config.json');
    await writeFile(config, JSON.stringify({ layout: LAYOUT }));
    const files = {
      'good.csv': 'ref,amount,note\nA1,1.00,\nA2,2.00,paid\n',
      'repeated.csv': 'ref,amount,note\nA1,1.00,\nA2,2.00,\nA1,3.00,\n',
      'cut.csv': 'ref,amount,note\nA1,1.00,\nA2',
    };
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, 'acme', name), text);

    const { status, results } = conformance(dir, [config]);
    expect(status).toBe(1);
    const checked = await runCli(['check', '--config', config, '--json', ...Object.keys(files).map((f) => join(dir, 'acme', f))]);
    const byCheck = (JSON.parse(checked.stdout) as { files: { file: string; error: string | null }[] }).files;
    const why = (name: string) => byCheck.find((f) => f.file.endsWith(`/${name}`))!.error;
    expect(results).toEqual([
      { file: 'acme/cut.csv', layout: 'acme-ledger', result: 'broken', why: why('cut.csv') },
      { file: 'acme/good.csv', layout: 'acme-ledger', result: 'accepted', why: '2 rows' },
      { file: 'acme/repeated.csv', layout: 'acme-ledger', result: 'gap', why: why('repeated.csv') },
    ]);
    expect(why('repeated.csv')).toBe('field ref: 1 value(s) already used: line 4: "A1" repeats line 2 of this file');
    expect(why('cut.csv')).toMatch(/^the upload stopped mid-line 3 \(1 of 3 fields, no line end\)/);
  });

  it('a --config this release cannot read is named on the files of its folder that no other layout accepts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-conformance-'));
    await mkdir(join(dir, 'acme'));
    const readable = join(dir, 'acme-ledger.config.json');
    await writeFile(readable, JSON.stringify({ layout: LAYOUT }));
    const unreadable = join(dir, 'acme-padded.config.json');
    await writeFile(
      unreadable,
      JSON.stringify({ layout: { ...LAYOUT, columns: [{ name: 'ref', type: 'text', padding: true }, ...LAYOUT.columns.slice(1)] } }),
    );
    await writeFile(join(dir, 'acme', 'good.csv'), 'ref,amount,note\nA1,1.00,\n');
    await writeFile(join(dir, 'acme', 'other.csv'), 'ref;amount;note\nA1;1.00;\n');

    const { status, results } = conformance(dir, [readable, unreadable]);
    expect(status).toBe(1);
    expect(results[0]).toEqual({ file: 'acme/good.csv', layout: 'acme-ledger', result: 'accepted', why: '1 rows' });
    expect(results[1]).toMatchObject({ file: 'acme/other.csv', layout: 'acme-padded', result: 'gap' });
    expect(results[1]!.why).toMatch(/^acme-padded not read: layout column "ref": key "padding" is unknown/);
  });
});
