import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { financeDatabase, parseSummary, Workspace } from '../support/workspace.js';

describe('adopt --archive', () => {
  it('records an archive from before the ledger, reports repeated bytes in it, and makes later resends skips', async () => {
    const db = await financeDatabase();
    try {
      // the old set-up loaded a01 (so the finance database has its marker) and kept an archive
      const old = await Workspace.create(db.url);
      const a01 = sampleSettlement({ date: '2026-11-01', rows: 30, idPrefix: 'ADOPT' }).text;
      await old.put('settle_20261101_a01.csv', a01);
      expect(parseSummary((await old.run()).stdout)).toMatchObject({ loaded: 1 });
      await mkdir(old.archive, { recursive: true });
      await writeFile(
        join(old.archive, 'settle_20261031_a01.csv'),
        sampleSettlement({ date: '2026-10-31', rows: 5, idPrefix: 'LEGACY' }).text,
      );
      await copyFile(join(old.archive, 'settle_20261101_a01.csv'), join(old.archive, 'settle_20261101_a02.csv')); // loaded twice back then

      const fresh = await Workspace.create(db.url);
      const r = await fresh.cli(['adopt', '--archive', old.archive, '--ledger', fresh.ledger, '--json']);
      expect(r.status).toBe(1); // repeated bytes in an archive mean a past double load
      const j = JSON.parse(r.stdout);
      expect(j.adopted.map((a: { name: string; rows: number | null }) => [a.name, a.rows])).toEqual([
        ['settle_20261031_a01.csv', null], // no file marker: loaded by something older
        ['settle_20261101_a01.csv', 30],
      ]);
      expect(j.duplicates).toEqual([expect.objectContaining({ name: 'settle_20261101_a02.csv', same_as: 'settle_20261101_a01.csv' })]);
      expect(fresh.ledgerFiles().map((f) => [f.name, f.state])).toEqual([
        ['settle_20261031_a01.csv', 'loaded'],
        ['settle_20261101_a01.csv', 'loaded'],
      ]);

      // adopting again changes nothing
      const again = JSON.parse((await fresh.cli(['adopt', '--archive', old.archive, '--ledger', fresh.ledger, '--json'])).stdout);
      expect(again.adopted).toEqual([]);
      expect(again.known).toHaveLength(2);

      // the partner resends a01 under a new name: the adopted ledger knows it
      await fresh.put('settle_20261101_a03.csv', a01);
      const run = await fresh.run(['--json']);
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout).files[0]).toMatchObject({ outcome: 'skipped', duplicate_of: { name: 'settle_20261101_a01.csv' } });
    } finally {
      await db.close();
    }
  });

  it('needs --archive (exit 2)', async () => {
    const db = await financeDatabase();
    try {
      const ws = await Workspace.create(db.url);
      expect((await ws.cli(['adopt', '--ledger', ws.ledger])).status).toBe(2);
    } finally {
      await db.close();
    }
  });
});
