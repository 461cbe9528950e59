import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it, vi } from 'vitest';
import { openSqliteLedger, withLedgerClock } from '../../src/ledger/sqliteLedger.js';
import { claim, SHA_A, SHA_B, withTwoRuns } from '../support/claimScenarios.js';

/** The tables that grow with every file a partner ever sent: a statement a run makes per file must never scan one. */
const GROWING = /\bSCAN (processed_files|live|ledger_events|moves)\b/;

afterEach(() => vi.restoreAllMocks());

it("searches every growing table by an index in each statement of a file's way through the ledger", async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite');
  const ledger = await withTwoRuns(openSqliteLedger(path, { create: true }));
  const prepared = new Set<string>();
  const prepare = Database.prototype.prepare;
  vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
    prepared.add(sql);
    return prepare.call(this, sql);
  });
  // a file loaded and moved, as claimFile, loadClaimed and moveDecided take it
  const loaded = { name: 'settle_a.csv', sha256: SHA_A, runId: 'r1', arrival: '10:1' };
  await ledger.file(loaded.name, loaded.sha256);
  await ledger.liveContentHolder(SHA_A);
  expect(await claim(ledger, loaded.name, loaded.sha256)).toBe(true);
  expect(await ledger.finalizeClaim(loaded, { state: 'loaded', event: 'loaded', rows: 1 }, {}, { moveTo: 'archive' })).toBe(true);
  expect(await ledger.markMoved(loaded, 'archive/settle_a.csv')).toBe(true);
  // its resend under another name: the claim is lost to the loaded holder, a skip recorded with its move
  const resend = { name: 'settle_b.csv', sha256: SHA_A, runId: 'r2', arrival: '10:2', size: 10 };
  expect(await claim(ledger, resend.name, resend.sha256, 'r2')).toBe(false);
  expect((await ledger.liveHolder(SHA_A))?.name).toBe(loaded.name);
  await ledger.intendMove(resend, 'duplicates');
  expect(await ledger.recordSkip(resend, true, 'duplicates/settle_b.csv', {})).toBe(true);
  await ledger.recordHeld({ name: 'settle_c.csv', sha256: SHA_B, size: 10, runId: 'r2' }, {});
  vi.restoreAllMocks();
  await ledger.close();

  const db = withLedgerClock(new Database(path, { readonly: true }));
  const scans = [...prepared]
    .filter((sql) => /^\s*(SELECT|INSERT|UPDATE|DELETE)/i.test(sql))
    .map((sql) => {
      const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => null);
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
      return { sql: sql.replace(/\s+/g, ' ').trim(), scans: plan.map((row) => row.detail).filter((detail) => GROWING.test(detail)) };
    })
    .filter((statement) => statement.scans.length > 0);
  db.close();
  expect(prepared.size).toBeGreaterThan(10);
  expect(scans).toEqual([]);
});

it('looks at the runs without an end (every partner’s run does, first) by the partial index of them, never over every run', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite');
  const ledger = await withTwoRuns(openSqliteLedger(path, { create: true }));
  const prepared: string[] = [];
  const prepare = Database.prototype.prepare;
  vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
    prepared.push(sql);
    return prepare.call(this, sql);
  });
  expect((await ledger.openRuns()).map((run) => run.runId)).toEqual(['r1', 'r2']);
  vi.restoreAllMocks();
  await ledger.close();

  const db = withLedgerClock(new Database(path, { readonly: true }));
  const [sql] = prepared.filter((each) => /FROM runs WHERE ended_at IS NULL/.test(each));
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql!}`).all() as { detail: string }[]).map((row) => row.detail);
  db.close();
  expect(plan).toEqual([expect.stringMatching(/^SCAN runs USING (COVERING )?INDEX runs_open$/)]);
});

it("reads the audit's claims of a few names (uploads without an outcome) by the index of names, never over every event", async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite');
  const ledger = await withTwoRuns(openSqliteLedger(path, { create: true }));
  expect(await claim(ledger, 'settle_a.csv', SHA_A)).toBe(true);
  const prepared: string[] = [];
  const prepare = Database.prototype.prepare;
  vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
    prepared.push(sql);
    return prepare.call(this, sql);
  });
  const page = { afterId: 0, limit: 100 };
  const claims = await ledger.eventsInContextSince(['claimed'], '2000-01-01T00:00:00.000Z', ['default'], page, ['settle_a.csv', 'b.csv']);
  expect(claims.map((event) => [event.name, event.event, event.fileSize])).toEqual([['settle_a.csv', 'claimed', 10]]);
  vi.restoreAllMocks();
  await ledger.close();

  const db = withLedgerClock(new Database(path, { readonly: true }));
  const [sql] = prepared.filter((each) => /FROM ledger_events e/.test(each));
  const params = Array.from({ length: (sql!.match(/\?/g) ?? []).length }, () => null);
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql!}`).all(...params) as { detail: string }[]).map((row) => row.detail);
  db.close();
  expect(plan).toContainEqual(expect.stringMatching(/^SEARCH e USING INDEX ledger_events_by_name \(name=\?/));
  expect(plan.filter((detail) => GROWING.test(detail))).toEqual([]);
});
