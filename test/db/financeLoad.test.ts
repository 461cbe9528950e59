import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { socketIfAny } from '../../src/db/pgInternals.js';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { closeFinanceFixture, FINANCE_SCHEMA as SCHEMA, openFinanceFixture, type FinanceFixture } from '../support/dbDatabase.js';
import { defaultSettlement, sha256Hex } from '../support/settlementFiles.js';

const CSV = defaultSettlement(['T1', '10.00'], ['T2', '-2.50']);

let database: FinanceFixture['database'];
let dir: string;
let finance: FinanceDb;
let reader: pg.Client;

const amounts = async () =>
  (await reader.query(`SELECT transaction_id, gross_amount::text AS amount FROM ${SCHEMA}.settlement_rows ORDER BY transaction_id`)).rows;

beforeAll(async () => {
  ({ database, dir, finance, reader } = await openFinanceFixture('finance', { migrated: false }));
  await writeFile(join(dir, 'a.csv'), CSV);
});
afterAll(() => closeFinanceFixture({ database, dir, finance, reader }));

describe('the finance load', () => {
  it('without a URL or PG variables, names the settings that would give one', async () => {
    const saved = Object.entries(process.env).filter(([key]) => key.startsWith('PG'));
    for (const [key] of saved) delete process.env[key];
    try {
      await expect(FinanceDb.connect(undefined, SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 5, onLost: () => undefined })).rejects.toThrow(
        /--database-url, DATABASE_URL/,
      );
    } finally {
      for (const [key, value] of saved) process.env[key] = value;
    }
  });

  it('refuses to load into a schema that was never migrated, then migrates it once', async () => {
    await expect(finance.assertReady('load')).rejects.toThrow(/finance/);
    const migration = await finance.migrate();
    expect(migration.table).toBe(`${SCHEMA}.settlement_rows`);
    // the database's owner has every privilege each purpose needs
    for (const purpose of ['load', 'reprocess', 'read', 'migrate'] as const) await finance.assertReady(purpose);
    // a second migrate has nothing left to do
    expect((await finance.migrate()).tableChanges).toEqual([]);
    expect(await finance.migrationSql()).toMatch(/up to date/);
  });

  it.each(['text', 'binary'] as const)('loads a file in %s form with its marker, and a second load of it adds nothing', async (format) => {
    const content = format === 'text' ? CSV : CSV.replace(/T(\d)/g, 'B$1');
    const path = join(dir, `${format}.csv`);
    await writeFile(path, content);
    const request = { stagedPath: path, sha256: sha256Hex(content), name: `${format}.csv`, runId: `run-${format}`, format };
    expect(await finance.load(request)).toMatchObject({ outcome: 'loaded', rows: 2, format });
    const again = await finance.load({ ...request, runId: 'run-later' });
    expect(again).toMatchObject({ outcome: 'already-loaded', fileName: `${format}.csv`, runId: `run-${format}`, rows: 2 });
    expect(await finance.fileMarker(sha256Hex(content))).toMatchObject({ runId: `run-${format}` });
  });

  it('keeps the amounts as written, and audit sees each marker with the rows that carry it', async () => {
    expect(await amounts()).toEqual([
      { transaction_id: 'B1', amount: '10.00' },
      { transaction_id: 'B2', amount: '-2.50' },
      { transaction_id: 'T1', amount: '10.00' },
      { transaction_id: 'T2', amount: '-2.50' },
    ]);
    const facts = await finance.loadFacts();
    expect(facts).toHaveLength(2);
  });

  it('loads nothing of a file whose natural key is already held by another file', async () => {
    const content = defaultSettlement(['T9', '1.00'], ['T1', '3.00']);
    const path = join(dir, 'overlap.csv');
    await writeFile(path, content);
    await expect(finance.load({ stagedPath: path, sha256: sha256Hex(content), name: 'overlap.csv', runId: 'run-overlap' })).rejects.toThrow(
      /T1/,
    );
    expect(await finance.fileMarker(sha256Hex(content))).toBeNull();
    expect((await amounts()).map((row) => row.transaction_id)).not.toContain('T9');
  });

  it('reloads a loaded content in place: a dry run changes nothing, a real one replaces its rows', async () => {
    const request = { stagedPath: join(dir, 'a.csv'), sha256: sha256Hex(CSV), name: 'text.csv', runId: 'run-reload' };
    // the runs whose load carries the content's rows in the table
    const carriers = async () =>
      (
        await reader.query(
          `SELECT DISTINCT l.run_id, l.reason FROM ${SCHEMA}.settlement_rows r JOIN ${SCHEMA}.loads l USING (load_id) WHERE l.sha256 = $1`,
          [sha256Hex(CSV)],
        )
      ).rows;
    expect(await finance.reload(request, { dryRun: true, reason: 'dry' })).toEqual({ previousRows: 2, rows: 2, seenBefore: 0 });
    expect(await carriers()).toEqual([{ run_id: 'run-text', reason: null }]);
    expect(await finance.reload(request, { dryRun: false, reason: 'fixed upstream' })).toEqual({ previousRows: 2, rows: 2, seenBefore: 0 });
    expect(await carriers()).toEqual([{ run_id: 'run-reload', reason: 'fixed upstream' }]);
    expect((await amounts()).length).toBe(4);
  });

  it('tells how many of a staged file’s keys the table holds', async () => {
    const content = defaultSettlement(['T1', '10.00'], ['T7', '1.00']);
    const path = join(dir, 'presence.csv');
    await writeFile(path, content);
    expect(await finance.keyPresence(path, 'presence.csv')).toEqual({
      rows: 2,
      present: 1,
      firstMissing: { line: 3, key: expect.stringContaining('T7') },
    });
  });

  it('closes having said Terminate and ended its socket, and the server then ends the session by itself', async () => {
    const other = await FinanceDb.connect(database.url, SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => undefined });
    const pid = (await other.client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const socket = socketIfAny(other.client)!;
    // the server's close of its side: node-postgres's own end event, which close() does not wait for
    const serverClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await other.close();
    expect(socket.writableFinished).toBe(true);
    await serverClosed;
    expect((await reader.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]).toEqual({ n: 0 });
  });
});
