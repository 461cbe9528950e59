import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { describedStatementLayoutObject } from '../support/statementLayout.js';

// The built CLI on the synthetic statements of fixtures/statements/: no database, no ledger.

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/statements/${name}`, import.meta.url));

const STATEMENT_LAYOUT = describedStatementLayoutObject();

async function config(layout: Record<string, unknown>): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), 'settle-abroad-')), 'config.json');
  await writeFile(path, JSON.stringify({ layout }));
  return path;
}

describe('statements as banks abroad write them', () => {
  it('check refuses a description broken over lines, and with "continuationLines" names every join it made', async () => {
    const file = fixture('continuation_export.csv');
    const refused = await runCli(['check', '--config', await config(STATEMENT_LAYOUT), file]);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toMatch(/rejected: \d+ bad rows: line 3: /);

    const joined = await runCli(['check', '--config', await config({ ...STATEMENT_LAYOUT, continuationLines: true }), file]);
    expect(joined.stdout.trim()).toBe(`${file}: ok, 5 rows; line 3 joined with line 4; line 6 joined with lines 7, 8`);
    expect(joined.status).toBe(0);
    const json = await runCli(['check', '--config', await config({ ...STATEMENT_LAYOUT, continuationLines: true }), file, '--json']);
    const doc = JSON.parse(json.stdout) as { files: { joined_lines: unknown }[] };
    expect(doc.files[0]!.joined_lines).toEqual([
      { line: 3, continued_on: [4] },
      { line: 6, continued_on: [7, 8] },
    ]);
  });

  it('layout suggest names a GB18030 statement so, and check names windows-1251 for a Russian one read as UTF-8', async () => {
    const suggested = await runCli(['layout', 'suggest', fixture('icbc_statement_gb18030.csv'), '--json']);
    const doc = JSON.parse(suggested.stdout) as { files: { config: string; notes: string[] }[] };
    expect(JSON.parse(doc.files[0]!.config).layout).toMatchObject({ encoding: 'gb18030', skipLines: 3 });
    expect(doc.files[0]!.notes.join('\n')).toMatch(/read as gb18030 it is Simplified Chinese text/);

    const russian = fixture('sber_statement_cp1251.csv');
    const checked = await runCli(['check', '--config', await config({ ...STATEMENT_LAYOUT, delimiter: ';' }), russian]);
    expect(checked.status).toBe(1);
    expect(checked.stdout).toMatch(
      /the file looks like windows-1251 \(it reads "Дата операци"\): set the layout's "encoding" to "windows-1251"/,
    );
  });
});
