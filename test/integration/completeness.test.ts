import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const rowsOf = (prefix: string) => rowsWithPrefix(db, prefix);

describe('completeness evidence', () => {
  it('with --ready-marker takes a file only once its marker exists, and moves the marker with it', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-10-01', rows: 15, idPrefix: 'RDY' });
    await ws.put('settle_20261001_a01.csv', f.text);

    const waiting = await ws.run(['--ready-marker', '.done']);
    expect(waiting.status).toBe(0);
    expect(parseSummary(waiting.stdout)).toMatchObject({ loaded: 0, not_ready: 1, ignored: 0 });
    expect(await rowsOf('RDY')).toBe(0);
    expect(await ws.files('intake')).toEqual(['settle_20261001_a01.csv']);

    await ws.put('settle_20261001_a01.csv.done', '');
    const ready = await ws.run(['--ready-marker', '.done']);
    expect(ready.status).toBe(0);
    expect(parseSummary(ready.stdout)).toMatchObject({ loaded: 1, not_ready: 0, ignored: 0 });
    expect(await rowsOf('RDY')).toBe(15);
    expect(await ws.files('intake')).toEqual([]);
    expect(await ws.files('archive')).toEqual(['settle_20261001_a01.csv', 'settle_20261001_a01.csv.done']);
  });

  it('reports by name a file that changed in archive/ after its move (an upload that stalled, then resumed), once', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-10-02', rows: 10, idPrefix: 'STL' });
    await ws.put('settle_20261002_a01.csv', f.text);
    expect((await ws.run()).status).toBe(0);
    expect(await rowsOf('STL')).toBe(10);

    // the partner's writer wakes up and finishes its file, which now sits in archive/
    const rest = sampleSettlement({ date: '2026-10-02', rows: 3, idPrefix: 'STL2' }).text.split('\n').slice(1).join('\n');
    await appendFile(join(ws.archive, 'settle_20261002_a01.csv'), rest);

    const next = await ws.run(['--json']);
    expect(next.status).toBe(1);
    const summary = JSON.parse(next.stdout) as { changed_after_move: { name: string; location: string }[] };
    expect(summary.changed_after_move).toEqual([
      expect.objectContaining({ name: 'settle_20261002_a01.csv', location: join(ws.archive, 'settle_20261002_a01.csv') }),
    ]);
    const line = await ws.run();
    expect(line.status).toBe(0); // said once by the run; audit keeps saying it
    const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger]);
    expect(audit.status).toBe(1);
    expect(audit.stdout).toContain('settle_20261002_a01.csv');
    expect(await rowsOf('STL')).toBe(10);
  });
});
