import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { sharedFinanceDatabase, parseSummary, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const a01 = sampleSettlement({ date: '2026-03-14', rows: 1240, idPrefix: 'T20260314' });

async function rowCount(): Promise<number> {
  const r = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.settlement_rows');
  return Number(r.rows[0]!.n);
}

describe('the incident night', () => {
  it('loads a01, skips its renamed resend a02 naming a01’s run, and an operator re-run loads nothing', async () => {
    const ws = await Workspace.create(db.url);

    await ws.put('settle_20260314_a01.csv', a01.text);
    const first = await ws.run();
    expect(first.status).toBe(0);
    const s1 = parseSummary(first.stdout);
    expect(s1).toMatchObject({ loaded: 1, skipped: 0, held: 0, rejected: 0, failed: 0, rows: 1240 });
    expect(await rowCount()).toBe(1240);
    expect(await ws.files('archive')).toEqual(['settle_20260314_a01.csv']);

    await ws.put('settle_20260314_a02.csv', a01.text);
    const second = await ws.run(['--json']);
    expect(second.status).toBe(0);
    const j = JSON.parse(second.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 1, held: 0, rejected: 0, failed: 0, rows: 0 });
    expect(j.files).toEqual([
      expect.objectContaining({
        name: 'settle_20260314_a02.csv',
        outcome: 'skipped',
        duplicate_of: expect.objectContaining({ name: 'settle_20260314_a01.csv', run: s1.run }),
      }),
    ]);
    expect(await rowCount()).toBe(1240);
    expect(await ws.files('duplicates')).toEqual(['settle_20260314_a02.csv']);

    const rerun = await ws.run();
    expect(rerun.status).toBe(0);
    expect(parseSummary(rerun.stdout)).toMatchObject({ loaded: 0, skipped: 0, held: 0, rejected: 0, failed: 0, rows: 0 });
    expect(await rowCount()).toBe(1240);

    expect(await ws.files('intake')).toEqual([]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.row_count])).toEqual([
      ['settle_20260314_a01.csv', 'loaded', 1240],
      ['settle_20260314_a02.csv', 'duplicate', null],
    ]);
    const loads = await db.client.query('SELECT file_name, row_count, run_id FROM settle.file_loads');
    expect(loads.rows).toEqual([{ file_name: 'settle_20260314_a01.csv', row_count: 1240, run_id: s1.run }]);
    const net = await db.client.query<{ s: string }>('SELECT sum(net_amount)::text AS s FROM settle.settlement_rows');
    expect(net.rows[0]!.s).toBe(a01.netTotal);
  });
});
