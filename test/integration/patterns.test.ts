import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

describe('--pattern and --ignore', () => {
  it('take braces and negated classes as a shell does', async () => {
    const ws = await Workspace.create(db.url);
    for (const p of ['a', 'b', 'c'])
      await ws.put(`settle_${p}.csv`, sampleSettlement({ date: '2026-09-01', rows: 2, idPrefix: `PAT${p}` }).text);
    const r = await ws.run(['--pattern', 'settle_{a,b,c}.csv', '--ignore', 'settle_[!ab].csv']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 2, ignored: 0 }); // an --ignore'd neighbour is not counted
    expect(await ws.files('archive')).toEqual(['settle_a.csv', 'settle_b.csv']);
    expect(await ws.files('intake')).toEqual(['settle_c.csv']);
  });

  it.each([
    ['--pattern', 'settle_[z-a].csv'],
    ['--ignore', 'settle_[z-a].csv'],
  ])('refuses a bad %s with exit 2 and one line naming it, nothing loaded', async (flag, pattern) => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_z.csv', sampleSettlement({ date: '2026-09-02', rows: 2, idPrefix: 'BADPAT' }).text);
    const r = await ws.run([flag, pattern]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(
      `settle-ingest: ${flag} "settle_[z-a].csv" is not a usable file name pattern (Range out of order in character class): use *, ? and [a-z] with ranges in order`,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(await ws.files('intake')).toEqual(['settle_z.csv']);
    expect(ws.ledgerFiles()).toEqual([]);
  });

  // the patterns are compiled before a run is recorded
  it('leaves no run open behind a bad pattern', async () => {
    const ws = await Workspace.create(db.url);
    expect((await ws.run(['--pattern', 'settle_[z-a].csv'])).status).toBe(2);
    expect(ws.runs().filter((r) => r.status === 'running')).toEqual([]);
  });
});
