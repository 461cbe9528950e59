import Database from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownMigrations } from '../../src/db/migrator.js';
import { LEDGER_SCHEMA, openPgLedger } from '../../src/ledger/pgLedger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { redactSecrets } from '../../src/redactSecrets.js';
import { closeFinanceFixture, FINANCE_SCHEMA, openFinanceFixture, type FinanceFixture } from '../support/dbDatabase.js';

/**
 * The one migrator (src/db/migrator.ts) behind three schemas in two stores: each is refused
 * behind this release (until migrated) and ahead of it (always), in one wording naming the store.
 */
let fixture: FinanceFixture;

beforeAll(async () => {
  fixture = await openFinanceFixture('migrator');
});
afterAll(() => closeFinanceFixture(fixture));

const behind = (label: string, version: number, latest: number) =>
  `${label} is at version ${version}, this release needs ${latest}: run \`settle-ingest migrate\` first`;
const ahead = (label: string, version: number, latest: number) =>
  `${label} is at version ${version}, newer than this release knows (${latest}): upgrade settle-ingest`;

/**
 * Runs `check` with the schema's recorded version moved: its last migration's row removed
 * (behind), or a later release's row added (ahead); the rows are as they were after.
 */
async function withVersionMoved(client: pg.Client, schema: string, change: 'ahead' | 'behind', check: () => Promise<void>): Promise<void> {
  const table = `${pg.escapeIdentifier(schema)}.schema_migrations`;
  const { rows } = await client.query<{ version: number; name: string }>(
    `SELECT version, name FROM ${table} ORDER BY version DESC LIMIT 1`,
  );
  const last = rows[0]!;
  if (change === 'ahead')
    await client.query(`INSERT INTO ${table} (version, name) VALUES ($1, 'from_a_later_release')`, [last.version + 1]);
  else await client.query(`DELETE FROM ${table} WHERE version = $1`, [last.version]);
  try {
    await check();
  } finally {
    if (change === 'ahead') await client.query(`DELETE FROM ${table} WHERE version = $1`, [last.version + 1]);
    else await client.query(`INSERT INTO ${table} (version, name) VALUES ($1, $2)`, [last.version, last.name]);
  }
}

describe('one migrator, one set of messages', () => {
  it('the finance schema: refused behind until migrated again, refused ahead by migrate too', async () => {
    const { finance, reader } = fixture;
    const { latest } = knownMigrations('finance');
    const label = `finance schema "${FINANCE_SCHEMA}"`;
    await withVersionMoved(reader, FINANCE_SCHEMA, 'behind', async () => {
      await expect(finance.assertReady('load')).rejects.toThrow(behind(label, latest - 1, latest));
    });
    await withVersionMoved(reader, FINANCE_SCHEMA, 'ahead', async () => {
      await expect(finance.assertReady('load')).rejects.toThrow(ahead(label, latest + 1, latest));
      await expect(finance.migrate()).rejects.toThrow(ahead(label, latest + 1, latest));
    });
    await finance.assertReady('load');
  });

  it('the PostgreSQL ledger: the same words, naming the ledger and its schema', async () => {
    const { database, reader } = fixture;
    const { latest } = knownMigrations('ledger-pg');
    const label = `ledger ${redactSecrets(database.url)}: schema "${LEDGER_SCHEMA}"`;
    await (await openPgLedger(database.url, { create: true })).close();
    await withVersionMoved(reader, LEDGER_SCHEMA, 'behind', async () => {
      await expect(openPgLedger(database.url, { create: false })).rejects.toThrow(behind(label, latest - 1, latest));
    });
    await withVersionMoved(reader, LEDGER_SCHEMA, 'ahead', async () => {
      await expect(openPgLedger(database.url, { create: false })).rejects.toThrow(ahead(label, latest + 1, latest));
      await expect(openPgLedger(database.url, { create: true })).rejects.toThrow(ahead(label, latest + 1, latest));
    });
  });

  it('the SQLite ledger: the same words, naming its file', async () => {
    const path = join(fixture.dir, 'ledger.sqlite');
    const { latest } = knownMigrations('ledger');
    await openSqliteLedger(path, { create: true }).close();
    const raw = new Database(path);
    raw.prepare('UPDATE schema_migrations SET version = -1 WHERE version = ?').run(latest);
    expect(() => openSqliteLedger(path, { create: false })).toThrow(behind(`ledger ${path}`, latest - 1, latest));
    raw.prepare('UPDATE schema_migrations SET version = ? WHERE version = -1').run(latest + 1);
    raw.close();
    expect(() => openSqliteLedger(path, { create: false })).toThrow(ahead(`ledger ${path}`, latest + 1, latest));
    expect(() => openSqliteLedger(path, { create: true })).toThrow(ahead(`ledger ${path}`, latest + 1, latest));
  });
});
