import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { financeDatabase, parseSummary, Workspace } from '../support/workspace.js';

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((d) => d.close()));
});

/** The incident night in a database of its own, so that audit sees only this ledger's loads. */
async function incidentNight() {
  const db = await financeDatabase();
  opened.push(db);
  const ws = await Workspace.create(db.url);
  const a01 = sampleSettlement({ date: '2026-10-01', rows: 40, idPrefix: 'REP' }).text;
  await ws.put('settle_20261001_a01.csv', a01);
  const first = parseSummary((await ws.run()).stdout);
  await ws.put('settle_20261001_a02.csv', a01);
  const second = parseSummary((await ws.run()).stdout);
  await ws.run();
  return { db, ws, first, second };
}

describe('reports', () => {
  it('report runs lists each run with the counts it recorded, newest first', async () => {
    const { ws, first, second } = await incidentNight();
    const r = await ws.cli(['report', 'runs', '--ledger', ws.ledger, '--json']);
    expect(r.status).toBe(0);
    const runs = JSON.parse(r.stdout).runs;
    expect(runs).toHaveLength(3);
    expect(runs[1]).toMatchObject({ run: second.run, loaded: 0, skipped: 1, exit_status: 0 });
    expect(runs[2]).toMatchObject({ run: first.run, loaded: 1, skipped: 0, rows: 40, exit_status: 0 });
    const text = await ws.cli(['report', 'runs', '--ledger', ws.ledger, '--last', '1']);
    expect(text.stdout.trim().split('\n')).toHaveLength(2); // header + one run
  });

  it('history of a renamed resend shows its original’s load and its own skip', async () => {
    const { ws, first, second } = await incidentNight();
    const r = await ws.cli(['history', join(ws.duplicates, 'settle_20261001_a02.csv'), '--ledger', ws.ledger, '--json']);
    expect(r.status).toBe(0);
    const events = JSON.parse(r.stdout).events.map((e: { event: string; name: string; run: string }) => [e.event, e.name, e.run]);
    expect(events).toEqual([
      ['claimed', 'settle_20261001_a01.csv', first.run],
      ['loaded', 'settle_20261001_a01.csv', first.run],
      ['moved', 'settle_20261001_a01.csv', first.run],
      ['skipped', 'settle_20261001_a02.csv', second.run],
      ['moved', 'settle_20261001_a02.csv', second.run],
    ]);
  });

  it('report skips groups skips per ISO week with what each duplicated', async () => {
    const { ws, first } = await incidentNight();
    const r = await ws.cli(['report', 'skips', '--ledger', ws.ledger, '--json']);
    const weeks = JSON.parse(r.stdout).weeks;
    expect(weeks).toHaveLength(1);
    expect(weeks[0]).toMatchObject({ skipped: 1, held: 0 });
    expect(weeks[0].week).toMatch(/^\d{4}-W\d{2}$/);
    expect(weeks[0].files).toEqual([
      expect.objectContaining({
        name: 'settle_20261001_a02.csv',
        outcome: 'skipped',
        same_as: 'settle_20261001_a01.csv',
        original_run: first.run,
      }),
    ]);
  });
});

describe('audit', () => {
  const auditArgs = (ws: Workspace) => ['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--json'];

  it('is clean after ordinary nights', async () => {
    const { ws } = await incidentNight();
    const r = await ws.cli(auditArgs(ws));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).discrepancies).toBe(0);
    const text = await ws.cli(auditArgs(ws).filter((a) => a !== '--json'));
    expect(text.stdout).toMatch(/audit clean: 6 checks, 0 discrepancies/);
  });

  it('finds rows missing behind a file marker, an unknown archived file and a stale claim (exit 1)', async () => {
    const { db, ws } = await incidentNight();
    await db.client.query(`DELETE FROM settle.settlement_rows WHERE transaction_id = 'REP-0000007'`);
    await mkdir(ws.archive, { recursive: true });
    await writeFile(join(ws.archive, 'settle_20261001_x.csv'), 'dropped here by hand\n');
    ws.stageDeadClaim('settle_20261002_a01.csv');
    const r = await ws.cli(auditArgs(ws));
    expect(r.status).toBe(1);
    const result = JSON.parse(r.stdout);
    const by = Object.fromEntries(
      result.checks.map((c: { name: string; discrepancies: { message: string }[] }) => [c.name, c.discrepancies.map((d) => d.message)]),
    );
    expect(by['row counts match the file markers']).toEqual([
      expect.stringMatching(/settle_20261001_a01.csv: the file marker says 40 rows, .* holds 39/),
    ]);
    expect(by['every archived file is known to the ledger']).toEqual([expect.stringContaining('settle_20261001_x.csv')]);
    expect(by['no stale claims']).toEqual([expect.stringContaining('settle_20261002_a01.csv')]);
    const kinds = result.checks.flatMap((c: { discrepancies: { kind: string; file: string; run: string | null }[] }) =>
      c.discrepancies.map((d) => [d.kind, d.file, d.run]),
    );
    expect(kinds).toEqual([
      ['table_row_count_differs', 'settle_20261001_a01.csv', expect.stringMatching(/^r-/)],
      ['stale_claim', 'settle_20261002_a01.csv', 'r-dead'],
      ['archived_file_unknown', 'settle_20261001_x.csv', null],
    ]);
    expect(by['each content loaded once']).toEqual([]);
    expect(result.discrepancies).toBe(3);
  });

  it('notices a ledger that does not know the loads in the finance database', async () => {
    const { db, ws } = await incidentNight();
    const fresh = await Workspace.create(db.url);
    const r = await fresh.cli(['audit', '--archive', ws.archive, '--ledger', fresh.ledger, '--json']);
    expect(r.status).toBe(1);
    const by = Object.fromEntries(
      JSON.parse(r.stdout).checks.map((c: { name: string; discrepancies: { message: string }[] }) => [
        c.name,
        c.discrepancies.map((d) => d.message),
      ]),
    );
    expect(by['ledger loads match the finance database']).toEqual([
      expect.stringMatching(/settle_20261001_a01.csv .* the ledger has no load of it/),
    ]);
    expect(by['every archived file is known to the ledger']).toHaveLength(1);
  });
});
