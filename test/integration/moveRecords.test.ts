import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const rowsOf = (prefix: string) => rowsWithPrefix(db, prefix);

describe('a crash between a move and its record', () => {
  it('leaves no loaded file without its location: the next run finds it in archive/ and records it there', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-09-01', rows: 30, idPrefix: 'MVA' });
    await ws.put('settle_20260901_a01.csv', f.text);

    const killed = await ws.run([], { SETTLE_TEST_FAULT: 'after-move' });
    expect(killed.signal).toBe('SIGKILL');
    expect(await ws.files('intake')).toEqual([]);
    expect(ws.ledgerFile('settle_20260901_a01.csv')).toMatchObject({ state: 'loaded', location: null });

    const next = await ws.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 0, skipped: 0, move_failed: 0 });
    expect(ws.ledgerFile('settle_20260901_a01.csv')).toMatchObject({
      state: 'loaded',
      location: join(ws.archive, 'settle_20260901_a01.csv'),
    });
    const moved = ws.events().filter((e) => e.event === 'moved');
    expect(moved).toEqual([
      expect.objectContaining({ run_id: parseSummary(next.stdout).run, details: expect.objectContaining({ recovered: true }) }),
    ]);
    expect(ws.query(`SELECT * FROM move_intents`)).toEqual([]);
    expect(await rowsOf('MVA')).toBe(30);
    // the killed run is shown for what it was
    expect(ws.runs()[0]).toMatchObject({ status: 'died' });
  });

  it('counts a renamed duplicate moved before its record exactly once, by the run that records it', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-09-02', rows: 12, idPrefix: 'MVB' });
    await ws.put('settle_20260902_a01.csv', f.text);
    expect((await ws.run()).status).toBe(0);
    await ws.put('settle_20260902_a02.csv', f.text);

    const killed = await ws.run([], { SETTLE_TEST_FAULT: 'after-move' });
    expect(killed.signal).toBe('SIGKILL');
    expect(await ws.files('duplicates')).toEqual(['settle_20260902_a02.csv']);
    expect(ws.ledgerFile('settle_20260902_a02.csv')).toBeUndefined();

    const next = await ws.run(['--json']);
    expect(next.status).toBe(0);
    const summary = JSON.parse(next.stdout) as { skipped: number; files: { name: string; outcome: string }[] };
    expect(summary.skipped).toBe(1);
    expect(summary.files).toEqual([expect.objectContaining({ name: 'settle_20260902_a02.csv', outcome: 'skipped' })]);
    expect(ws.ledgerFile('settle_20260902_a02.csv')).toMatchObject({
      state: 'duplicate',
      location: join(ws.duplicates, 'settle_20260902_a02.csv'),
    });
    expect(ws.events().filter((e) => e.event === 'skipped')).toHaveLength(1);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 0, skipped: 0 });
    expect(await rowsOf('MVB')).toBe(12);
  });

  it('settles the claim of a run that died after its COMMIT even when the file never comes back', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-09-03', rows: 8, idPrefix: 'MVC' });
    const path = await ws.put('settle_20260903_a01.csv', f.text);
    const killed = await ws.run([], { SETTLE_TEST_FAULT: 'after-commit' });
    expect(killed.signal).toBe('SIGKILL');
    await unlink(path); // the operator removed it by hand: its content never reappears
    expect(ws.ledgerFile('settle_20260903_a01.csv')).toMatchObject({ state: 'claimed' });

    const next = await ws.run();
    expect(next.status).toBe(1); // a stale claim was found: worth a look
    expect(parseSummary(next.stdout)).toMatchObject({ stale: 1, loaded: 0 });
    expect(ws.ledgerFile('settle_20260903_a01.csv')).toMatchObject({ state: 'loaded', row_count: 8 });
    expect(ws.events().map((e) => e.event)).toContain('recovered');
    expect(await rowsOf('MVC')).toBe(8);
    // settled once: the run after is clean
    expect((await ws.run()).status).toBe(0);
    const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger]);
    expect(audit.stdout).toMatch(/no stale claims: ok/);
  });
});
