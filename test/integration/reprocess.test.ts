import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { parseSummary, sharedFinanceDatabase, Workspace, ROWS_WITH_SOURCE } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function runIdsOf(prefix: string): Promise<Record<string, number>> {
  const r = await db.client.query<{ run_id: string; n: string }>(
    `SELECT run_id, count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE transaction_id LIKE $1 GROUP BY run_id`,
    [`${prefix}-%`],
  );
  return Object.fromEntries(r.rows.map((x) => [x.run_id, Number(x.n)]));
}

async function loadedWorkspace(prefix: string) {
  const ws = await Workspace.create(db.url);
  await ws.put(`settle_${prefix}_a01.csv`, sampleSettlement({ date: '2026-10-10', rows: 60, idPrefix: prefix }).text);
  const first = parseSummary((await ws.run()).stdout);
  return { ws, first, name: `settle_${prefix}_a01.csv` };
}

const reprocess = (ws: Workspace, extra: string[]) =>
  ws.cli(['run', '--reprocess', '--intake', ws.intake, '--ledger', ws.ledger, '--reason', 'fee rounding fix, ticket FIN-42', ...extra]);

describe('run --reprocess', () => {
  it('replaces a loaded file’s rows from the archive in one go, the new rows carrying its run, and records who and why', async () => {
    const { ws, first, name } = await loadedWorkspace('RPA');
    const r = await reprocess(ws, ['--files', name, '--json']);
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ mode: 'reprocess', dry_run: false, reprocessed: 1, rejected: 0, failed: 0, rows: 60 });
    expect(j.files[0]).toMatchObject({ name, outcome: 'reprocessed', rows: 60, previous_rows: 60 });
    expect(await runIdsOf('RPA')).toEqual({ [j.run]: 60 });
    const marker = await db.client.query('SELECT run_id, row_count FROM settle.file_loads WHERE file_name = $1', [name]);
    expect(marker.rows).toEqual([{ run_id: first.run, row_count: 60 }]); // the marker still names the first load
    const event = ws.events().find((e) => e.event === 'reprocessed');
    expect(event).toMatchObject({ run_id: j.run, name });
    expect(event?.details).toMatchObject({
      reason: 'fee rounding fix, ticket FIN-42',
      operator: expect.any(String),
      rows: 60,
      previousRows: 60,
    });
    expect(ws.runs().at(-1)).toMatchObject({ run_id: j.run, mode: 'reprocess', reprocessed: 1, exit_status: 0 });
    expect(await ws.files('archive')).toEqual([name]);
    expect(ws.ledgerFile(name)).toMatchObject({ state: 'loaded', run_id: first.run });
  });

  it('with --dry-run checks and counts but commits nothing and writes nothing to the ledger', async () => {
    const { ws, first, name } = await loadedWorkspace('RPB');
    const eventsBefore = ws.events().length;
    const r = await reprocess(ws, ['--files', name, '--dry-run']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/reprocess dry run \(nothing committed\): reprocessed=1 rejected=0 failed=0 rows=60/);
    expect(await runIdsOf('RPB')).toEqual({ [first.run]: 60 });
    expect(ws.events()).toHaveLength(eventsBefore);
    expect(ws.runs()).toHaveLength(1);
  });

  it('leaves the old rows when today’s layout rejects the file, naming line and field (exit 1)', async () => {
    const { ws, first, name } = await loadedWorkspace('RPC');
    const stricter = {
      layout: {
        naturalKey: DEFAULT_LAYOUT.naturalKey,
        columns: DEFAULT_LAYOUT.columns.map((c) => (c.name === 'card_brand' ? { ...c, type: 'currency' } : c)),
      },
    };
    const config = join(ws.root, 'stricter.json');
    await writeFile(config, JSON.stringify(stricter));
    const r = await reprocess(ws, ['--files', name, '--config', config, '--json']);
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ reprocessed: 0, rejected: 1 });
    // every card brand is refused: each bad row is named with its line and field
    expect(j.files[0].error).toMatch(/^60 bad rows: line 2, field card_brand: "[A-Z]+" is not an active ISO 4217 currency code/);
    expect(await runIdsOf('RPC')).toEqual({ [first.run]: 60 });
    expect(ws.events().filter((e) => e.event === 'reprocessed')).toEqual([]);
  });

  it('takes names from --file-list and fails, without touching anything, a name that was never loaded', async () => {
    const { ws, name } = await loadedWorkspace('RPD');
    const list = join(ws.root, 'names.txt');
    await writeFile(list, `# to reload after the fix\n${name}\nsettle_never_seen.csv\n\n`);
    const r = await reprocess(ws, ['--file-list', list, '--json']);
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j.files.map((f: { name: string; outcome: string }) => [f.name, f.outcome])).toEqual([
      [name, 'reprocessed'],
      ['settle_never_seen.csv', 'failed'],
    ]);
    expect(j.files[1].error).toMatch(/nothing to reprocess/);
  });

  it.each([
    [['--files', 'x.csv']], // no --reason
    [['--reason', 'why']], // no files
    [['--reason', 'why', '--files', '../etc/passwd']],
  ])('refuses %j as bad usage (exit 2)', async (args) => {
    const ws = await Workspace.create(db.url);
    const r = await ws.cli(['run', '--reprocess', '--intake', ws.intake, '--ledger', ws.ledger, ...args]);
    expect(r.status).toBe(2);
    expect(ws.runs()).toEqual([]);
  });

  it('refuses --dry-run without --reprocess (exit 2)', async () => {
    const ws = await Workspace.create(db.url);
    expect((await ws.cli(['run', '--intake', ws.intake, '--ledger', ws.ledger, '--dry-run'])).status).toBe(2);
  });
});
