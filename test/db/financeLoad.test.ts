import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { newDatabase } from '../support/dbDatabase.js';

const SCHEMA = 'finance';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const HEADER = 'settlement_date,transaction_id,merchant_id,card_brand,transaction_type,gross_amount,fee_amount,net_amount,currency\n';
/** a file in the default layout's shape, one sale per [transaction id, gross amount] */
const settlement = (...sales: [string, string][]) =>
  HEADER + sales.map(([id, gross]) => `2026-06-01,${id},M1,VISA,sale,${gross},0.00,${gross},EUR\n`).join('');
const CSV = settlement(['T1', '10.00'], ['T2', '-2.50']);

let database: { url: string; drop: () => Promise<void> };
let dir: string;
let finance: FinanceDb;
let reader: pg.Client;

const connect = () => FinanceDb.connect(database.url, SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => undefined });
const amounts = async () =>
  (await reader.query(`SELECT transaction_id, gross_amount::text AS amount FROM ${SCHEMA}.settlement_rows ORDER BY transaction_id`)).rows;

beforeAll(async () => {
  database = await newDatabase('finance');
  dir = await mkdtemp(join(tmpdir(), 'settle-finance-'));
  await writeFile(join(dir, 'a.csv'), CSV);
  finance = await connect();
  reader = new pg.Client({ connectionString: database.url });
  await reader.connect();
});
afterAll(async () => {
  await finance.close();
  await reader.end();
  await database.drop();
  await rm(dir, { recursive: true, force: true });
});

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
    const request = { stagedPath: path, sha256: sha(content), name: `${format}.csv`, runId: `run-${format}`, format };
    expect(await finance.load(request)).toMatchObject({ outcome: 'loaded', rows: 2, format });
    const again = await finance.load({ ...request, runId: 'run-later' });
    expect(again).toMatchObject({ outcome: 'already-loaded', fileName: `${format}.csv`, runId: `run-${format}`, rows: 2 });
    expect(await finance.fileMarker(sha(content))).toMatchObject({ runId: `run-${format}` });
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
    const content = settlement(['T9', '1.00'], ['T1', '3.00']);
    const path = join(dir, 'overlap.csv');
    await writeFile(path, content);
    await expect(finance.load({ stagedPath: path, sha256: sha(content), name: 'overlap.csv', runId: 'run-overlap' })).rejects.toThrow(/T1/);
    expect(await finance.fileMarker(sha(content))).toBeNull();
    expect((await amounts()).map((row) => row.transaction_id)).not.toContain('T9');
  });

  it('reloads a loaded content in place: a dry run changes nothing, a real one replaces its rows', async () => {
    const request = { stagedPath: join(dir, 'a.csv'), sha256: sha(CSV), name: 'text.csv', runId: 'run-reload' };
    // the runs whose load carries the content's rows in the table
    const carriers = async () =>
      (
        await reader.query(
          `SELECT DISTINCT l.run_id, l.reason FROM ${SCHEMA}.settlement_rows r JOIN ${SCHEMA}.loads l USING (load_id) WHERE l.sha256 = $1`,
          [sha(CSV)],
        )
      ).rows;
    expect(await finance.reload(request, { dryRun: true, reason: 'dry' })).toEqual({ previousRows: 2, rows: 2 });
    expect(await carriers()).toEqual([{ run_id: 'run-text', reason: null }]);
    expect(await finance.reload(request, { dryRun: false, reason: 'fixed upstream' })).toEqual({ previousRows: 2, rows: 2 });
    expect(await carriers()).toEqual([{ run_id: 'run-reload', reason: 'fixed upstream' }]);
    expect((await amounts()).length).toBe(4);
  });

  it('tells how many of a staged file’s keys the table holds', async () => {
    const content = settlement(['T1', '10.00'], ['T7', '1.00']);
    const path = join(dir, 'presence.csv');
    await writeFile(path, content);
    expect(await finance.keyPresence(path, 'presence.csv')).toEqual({
      rows: 2,
      present: 1,
      firstMissing: { line: 3, key: expect.stringContaining('T7') },
    });
  });
});
