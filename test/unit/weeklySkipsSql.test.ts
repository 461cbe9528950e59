import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isoWeek } from '../../src/report/isoWeek.js';

describe('ops/weekly-skips.sql', () => {
  it('numbers every day from 2015 to 2035 with the same ISO week as report skips', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE ledger_events (id INTEGER PRIMARY KEY, run_id TEXT, at TEXT NOT NULL, event TEXT NOT NULL,
             name TEXT NOT NULL, sha256 TEXT, details TEXT NOT NULL DEFAULT '{}')`);
    const add = db.prepare(`INSERT INTO ledger_events (at, event, name) VALUES (?, 'skipped', 'f')`);
    const expected = new Map<string, number>();
    for (let t = Date.UTC(2015, 0, 1); t < Date.UTC(2036, 0, 1); t += 86_400_000) {
      const at = new Date(t + 23 * 3600_000 + 59 * 60_000); // late in the day: the UTC date, not a shifted one, decides
      add.run(at.toISOString());
      expected.set(isoWeek(at), (expected.get(isoWeek(at)) ?? 0) + 1);
    }
    const sql = readFileSync(new URL('../../ops/weekly-skips.sql', import.meta.url), 'utf8');
    const weeks = Math.ceil((Date.now() - Date.UTC(2015, 0, 1)) / (7 * 86_400_000)) + 1;
    const rows = db.prepare(sql).all({ weeks }) as { week: string; skipped: number }[];
    db.close();
    expect(new Map(rows.map((r) => [r.week, r.skipped]))).toEqual(expected);
    expect(expected.get('2026-W53')).toBe(7);
    expect(expected.has('2027-W00')).toBe(false);
  });
});
