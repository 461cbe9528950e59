import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { privilegeError } from '../../src/finance/financePrivileges.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { newDatabase } from '../support/dbDatabase.js';

/**
 * What the finance database says to a role that lacks a privilege (src/finance/financePrivileges.ts),
 * each role made for the case in the test database: the check before a command starts, and a
 * privilege error met later.
 */
const SCHEMA = 'finance';
const SEE = 'see docs/OPERATING.md, "Database roles"';
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
const ROLES = {
  noUsage: `settle_nousage_${suffix}`,
  noInsert: `settle_noinsert_${suffix}`,
  keyColumnsOnly: `settle_keycols_${suffix}`,
  noDelete: `settle_nodelete_${suffix}`,
  noCreate: `settle_nocreate_${suffix}`,
};

let database: { url: string; drop: () => Promise<void> };
let owner: FinanceDb;
let admin: pg.Client;
const opened: FinanceDb[] = [];

/** The finance database as `role`, for the default layout. */
async function connectAs(role: string, url = database.url): Promise<FinanceDb> {
  const asRole = new URL(url);
  asRole.username = role;
  asRole.password = 'pw';
  const finance = await FinanceDb.connect(asRole.toString(), SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => undefined });
  opened.push(finance);
  return finance;
}

beforeAll(async () => {
  database = await newDatabase('privileges');
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  owner = await FinanceDb.connect(database.url, SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => undefined });
  await owner.migrate();
  const tables = `${SCHEMA}.schema_migrations, ${SCHEMA}.file_loads, ${SCHEMA}.loads`;
  for (const role of Object.values(ROLES)) await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
  for (const role of [ROLES.noInsert, ROLES.keyColumnsOnly, ROLES.noDelete, ROLES.noCreate]) {
    await admin.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${role}`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE ON ${tables} TO ${role}`);
  }
  // no USAGE on the schema, every table privilege: the schema is the first thing said
  await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${tables}, ${SCHEMA}.settlement_rows TO ${ROLES.noUsage}`);
  await admin.query(`GRANT SELECT ON ${SCHEMA}.settlement_rows TO ${ROLES.noInsert}, ${ROLES.noCreate}`);
  // SELECT on the natural key's column alone, not on the table
  await admin.query(`GRANT SELECT (transaction_id), INSERT ON ${SCHEMA}.settlement_rows TO ${ROLES.keyColumnsOnly}`);
  await admin.query(`GRANT SELECT, INSERT ON ${SCHEMA}.settlement_rows TO ${ROLES.noDelete}`);
});
afterAll(async () => {
  for (const finance of opened) await finance.close();
  await owner?.close();
  await admin?.end();
  await database?.drop();
  // the roles are the cluster's: dropped once the database that held their grants is gone
  const cluster = new pg.Client({ connectionString: database.url.replace(/\/[^/]*$/, '/postgres') });
  await cluster.connect();
  for (const role of Object.values(ROLES)) await cluster.query(`DROP ROLE IF EXISTS ${role}`);
  await cluster.end();
});

describe('a finance role without a privilege it needs', () => {
  it('without USAGE on the schema: names it and the grant to run', async () => {
    const finance = await connectAs(ROLES.noUsage);
    const refused = finance.assertReady('load');
    await expect(refused).rejects.toThrow(UsageError);
    await expect(refused).rejects.toThrow(
      `database role "${ROLES.noUsage}" lacks USAGE on schema ${SCHEMA}: GRANT USAGE ON SCHEMA ${SCHEMA} TO ${ROLES.noUsage} (${SEE})`,
    );
  });

  it('without INSERT on the layout’s table: loading is refused, reading is not', async () => {
    const finance = await connectAs(ROLES.noInsert);
    await expect(finance.assertReady('load')).rejects.toThrow(
      `database role "${ROLES.noInsert}" lacks INSERT on table ${SCHEMA}.settlement_rows: grant as the schema's owner (${SEE})`,
    );
    await finance.assertReady('read');
  });

  it('with SELECT on the key column alone: the table’s SELECT is named, with every other privilege missing', async () => {
    const finance = await connectAs(ROLES.keyColumnsOnly);
    await expect(finance.assertReady('read')).rejects.toThrow(`lacks SELECT on table ${SCHEMA}.settlement_rows:`);
    await expect(finance.assertReady('reprocess')).rejects.toThrow(
      `database role "${ROLES.keyColumnsOnly}" lacks DELETE on table ${SCHEMA}.settlement_rows, SELECT on table ${SCHEMA}.settlement_rows: grant as the schema's owner (${SEE})`,
    );
  });

  it('without DELETE: loads, but reprocessing is refused', async () => {
    const finance = await connectAs(ROLES.noDelete);
    await finance.assertReady('load');
    await expect(finance.assertReady('reprocess')).rejects.toThrow(`lacks DELETE on table ${SCHEMA}.settlement_rows:`);
  });

  it('migrate without CREATE on the schema, or on the database when there is no schema yet: each says what to do', async () => {
    const finance = await connectAs(ROLES.noCreate);
    await expect(finance.assertReady('migrate')).rejects.toThrow(
      `database role "${ROLES.noCreate}" lacks CREATE on schema ${SCHEMA}: run migrate as the schema's owner (the migration role; ${SEE})`,
    );
    await owner.assertReady('migrate');
    const empty = await newDatabase('privileges_empty');
    try {
      const emptyName = new URL(empty.url).pathname.slice(1);
      await admin.query(`REVOKE CREATE ON DATABASE ${emptyName} FROM PUBLIC`);
      const fresh = await connectAs(ROLES.noCreate, empty.url);
      await expect(fresh.assertReady('migrate')).rejects.toThrow(
        `database role "${ROLES.noCreate}" lacks CREATE on database ${emptyName}: as the database's owner, CREATE SCHEMA ${SCHEMA} AUTHORIZATION ${ROLES.noCreate}, or GRANT CREATE ON DATABASE ${emptyName} TO ${ROLES.noCreate} (${SEE})`,
      );
      // no schema at all: the privilege check leaves it to the version check, which says to migrate
      await expect(fresh.assertReady('load')).rejects.toThrow(/run `settle-ingest migrate` first/);
      await fresh.close();
      opened.splice(opened.indexOf(fresh), 1);
    } finally {
      await empty.drop();
    }
  });

  it('a privilege error met after the check (a grant revoked mid-run) is configuration, one line; any other error is not', async () => {
    const finance = await connectAs(ROLES.noInsert);
    const failed = await finance.client
      .query(`INSERT INTO ${SCHEMA}.settlement_rows (transaction_id) VALUES ('x')`)
      .catch((err: unknown) => err);
    const translated = privilegeError(failed);
    expect(translated).toBeInstanceOf(UsageError);
    expect(translated?.message).toMatch(/^the database role lacks a privilege: permission denied for table settlement_rows \(see docs/);
    const other = await finance.client.query('SELECT 1 / 0').catch((err: unknown) => err);
    expect(privilegeError(other)).toBeUndefined();
  });
});
