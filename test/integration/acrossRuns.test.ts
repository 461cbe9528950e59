import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function rowsOf(prefix: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE $1`, [
    `${prefix}-%`,
  ]);
  return Number(r.rows[0]!.n);
}

const hookAt = (step: string, command: string) => ({ SETTLE_TEST_FAULT: `hook:${step}`, SETTLE_TEST_HOOK: command });

describe('the intake over time', () => {
  it('loads, in the same run, a file that arrived while the run was busy with the batch', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260701_a01.csv', sampleSettlement({ date: '2026-07-01', rows: 10, idPrefix: 'RELA' }).text);
    const later = sampleSettlement({ date: '2026-07-01', rows: 7, idPrefix: 'RELB' }).text;
    const waiting = join(ws.root, 'later.csv');
    await writeFile(waiting, later);
    const old = new Date(Date.now() - 3600_000);
    await utimes(waiting, old, old);
    // the partner's upload lands while a01 is about to leave the intake, once
    const arrive = `[ -e "${ws.intake}/settle_20260701_b01.csv" ] || [ -e "${ws.archive}/settle_20260701_b01.csv" ] || cp -p "${waiting}" "${ws.intake}/settle_20260701_b01.csv"`;

    const r = await ws.run([], hookAt('before-move', arrive));
    expect(r.status, r.stderr).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 2, rows: 17 });
    expect(await ws.files('intake')).toEqual([]);
    expect(await ws.files('archive')).toEqual(['settle_20260701_a01.csv', 'settle_20260701_b01.csv']);
    expect((await ws.read('archive', 'settle_20260701_b01.csv')).toString()).toBe(later);
    expect(await rowsOf('RELB')).toBe(7);
    expect(new Set(ws.ledgerFiles().map((f) => f.run_id))).toEqual(new Set([parseSummary(r.stdout).run]));
  });

  it('finishes, in the next run, a move that failed: the rows stay loaded once', async () => {
    const ws = await Workspace.create(db.url);
    const text = sampleSettlement({ date: '2026-07-02', rows: 12, idPrefix: 'MOVF' }).text;
    await ws.put('settle_20260702_a01.csv', text);
    // root ignores folder permissions: a file where archive/ should be fails the move for anyone
    await writeFile(ws.archive, 'not a folder');

    const first = await ws.run();
    expect(first.status).toBe(1);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, move_failed: 1, rows: 12 });
    expect(await ws.files('intake')).toEqual(['settle_20260702_a01.csv']);
    expect(ws.ledgerFile('settle_20260702_a01.csv')).toMatchObject({ state: 'loaded', location: null });

    await rm(ws.archive);
    await mkdir(ws.archive);
    const second = await ws.run();
    expect(second.status, second.stderr).toBe(0);
    expect(parseSummary(second.stdout)).toMatchObject({ loaded: 0, skipped: 0, move_failed: 0, rows: 0 });
    expect(await ws.files('intake')).toEqual([]);
    expect(await ws.files('archive')).toEqual(['settle_20260702_a01.csv']);
    expect((await ws.read('archive', 'settle_20260702_a01.csv')).toString()).toBe(text);
    expect(await ws.files('duplicates')).toEqual([]);
    expect(await rowsOf('MOVF')).toBe(12);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.location])).toEqual([
      ['settle_20260702_a01.csv', 'loaded', `${ws.archive}/settle_20260702_a01.csv`],
    ]);
  });

  it('loads new bytes under a name already loaded as new content, archived beside the first as NAME.1', async () => {
    const ws = await Workspace.create(db.url);
    const v1 = sampleSettlement({ date: '2026-07-03', rows: 5, idPrefix: 'REUA' }).text;
    const v2 = sampleSettlement({ date: '2026-07-03', rows: 9, idPrefix: 'REUB' }).text;
    await ws.put('settle_x.csv', v1);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 1, rows: 5 });
    await ws.put('settle_x.csv', v2);

    const r = await ws.run();
    expect(r.status, r.stderr).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, skipped: 0, rows: 9 });
    expect(await ws.files('archive')).toEqual(['settle_x.1.csv', 'settle_x.csv']);
    expect((await ws.read('archive', 'settle_x.csv')).toString()).toBe(v1);
    expect((await ws.read('archive', 'settle_x.1.csv')).toString()).toBe(v2);
    expect(await ws.files('duplicates')).toEqual([]);
    expect([await rowsOf('REUA'), await rowsOf('REUB')]).toEqual([5, 9]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.location])).toEqual([
      ['settle_x.csv', 'loaded', `${ws.archive}/settle_x.csv`],
      ['settle_x.csv', 'loaded', `${ws.archive}/settle_x.1.csv`],
    ]);
  });
});
