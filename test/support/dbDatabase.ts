import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { createDatabase } from './harnessPostgres.js';

/** The finance schema of the test/db files. */
export const FINANCE_SCHEMA = 'finance';

let made = 0;

/** A new empty database on the db project's server; returns its URL and a drop for afterAll. */
export function newDatabase(purpose: string): Promise<{ url: string; drop: () => Promise<void> }> {
  return createDatabase(inject('pgAdminUrl'), `settle_db_${purpose}_${process.pid}_${++made}`);
}

/** What most test/db files hold for all their tests: a database, the finance schema on it, a connection to read with, a folder. */
export interface FinanceFixture {
  database: { url: string; drop: () => Promise<void> };
  /** the default layout's finance database, migrated unless asked not to be */
  finance: FinanceDb;
  /** a connection of its own, to read back what a test wrote */
  reader: pg.Client;
  /** a temporary folder for the files a test loads */
  dir: string;
}

/** A new database with its finance schema migrated (unless `migrated: false`), for beforeAll. */
export async function openFinanceFixture(purpose: string, opts: { migrated?: boolean } = {}): Promise<FinanceFixture> {
  const database = await newDatabase(purpose);
  const dir = await mkdtemp(join(tmpdir(), `settle-${purpose}-`));
  const finance = await FinanceDb.connect(database.url, FINANCE_SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => undefined });
  if (opts.migrated ?? true) await finance.migrate();
  const reader = new pg.Client({ connectionString: database.url });
  await reader.connect();
  return { database, finance, reader, dir };
}

/** For afterAll: closes what openFinanceFixture opened, and removes the database and the folder. */
export async function closeFinanceFixture(fixture: Partial<FinanceFixture>): Promise<void> {
  await fixture.finance?.close();
  await fixture.reader?.end();
  await fixture.database?.drop();
  if (fixture.dir) await rm(fixture.dir, { recursive: true, force: true });
}
