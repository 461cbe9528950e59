import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { financeDatabase, Workspace, type FinanceDatabase } from '../support/workspace.js';

const OPERATING = new URL('../../docs/OPERATING.md', import.meta.url);

/** The SQL blocks of OPERATING.md's "Database roles", in order, as written there. */
async function roleSql(): Promise<string[]> {
  const text = await readFile(OPERATING, 'utf8');
  const section = text.slice(text.indexOf('### Database roles'), text.indexOf('\n### ', text.indexOf('### Database roles') + 1));
  return [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("OPERATING.md's database roles, run as written, for the finance schema and a PostgreSQL ledger", () => {
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
  const migrator = `settle_migrate_${suffix}`;
  const ingest = `settle_ingest_${suffix}`;
  let db: FinanceDatabase;
  let dbName: string;
  const as = (role: string) => {
    const url = new URL(db.url);
    url.username = role;
    url.password = 'pw';
    return url.toString();
  };
  /** The documented SQL with this test's role and database names. */
  const ours = (sql: string) =>
    sql
      .replaceAll('settle_migrate', migrator)
      .replaceAll('settle_ingest', ingest)
      .replace(/ON DATABASE finance\b/g, `ON DATABASE ${dbName}`);
  const runAs = async (url: string, sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    db = await financeDatabase({ migrated: false });
    dbName = new URL(db.url).pathname.slice(1);
    // a database as a careful DBA leaves it: nobody creates anything unless granted
    await db.client.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    await db.client.query(`REVOKE ALL ON DATABASE ${dbName} FROM PUBLIC`);
    await db.client.query(`CREATE ROLE ${migrator} PASSWORD 'pw'`);
    await db.client.query(`CREATE ROLE ${ingest} PASSWORD 'pw'`);
  });
  afterAll(async () => {
    await db.client.query(`DROP OWNED BY ${migrator}, ${ingest} CASCADE`).catch(() => undefined);
    await db.close();
  });

  it('migrate names the privilege it lacks; with exactly the SQL of the docs a night of every outcome runs, reports and audits as the ingest role', async () => {
    const [setup, finance, ledger] = await roleSql();
    expect([setup, finance, ledger].every(Boolean)).toBe(true);
    // the roles exist already (with a password, for the test's logins): the docs' CREATE ROLE lines aside
    const statements = ours(setup!)
      .split(';')
      .map((statement) => statement.replace(/--.*$/gm, '').trim())
      .filter(Boolean);
    const roles = statements.filter((s) => s.startsWith('CREATE ROLE'));
    expect(roles.map((s) => s.replace(/\s+LOGIN$/, ''))).toEqual([`CREATE ROLE ${migrator}`, `CREATE ROLE ${ingest}`]);
    for (const role of [migrator, ingest]) await db.client.query(`ALTER ROLE ${role} LOGIN`);
    const rest = statements.filter((s) => !s.startsWith('CREATE ROLE'));
    const ledgerSchema = rest.find((s) => s.includes('settle_ledger'))!;
    for (const statement of rest.filter((s) => s !== ledgerSchema)) await db.client.query(statement);

    // the ledger's schema not made yet: migrate says which privilege it lacks, and touches nothing
    const ws = await Workspace.create(as(ingest), { migrate: false, ledger: 'postgres' });
    const migrate = ['migrate', '--ledger', as(migrator)];
    const refused = await ws.cli(migrate, { DATABASE_URL: as(migrator) });
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim()).toBe(
      `settle-ingest: database role "${migrator}" lacks CREATE on database ${dbName}: as the database's owner, CREATE SCHEMA settle_ledger AUTHORIZATION ${migrator}, or GRANT CREATE ON DATABASE ${dbName} TO ${migrator} (see docs/OPERATING.md, "Database roles")`,
    );
    const made = await db.client.query(
      `SELECT to_regclass('settle.schema_migrations') AS finance, to_regclass('settle_ledger.runs') AS ledger`,
    );
    expect(made.rows[0]).toEqual({ finance: null, ledger: null });

    await db.client.query(ledgerSchema);
    const migrated = await ws.cli(migrate, { DATABASE_URL: as(migrator) });
    expect(migrated.status, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(/; ledger postgres:\/\/\S+ at version (\d+) \(applied 1, 2, 3, [\d, ]+\)\n$/);
    await runAs(as(migrator), ours(finance!));
    await runAs(as(migrator), ours(ledger!));

    // a night of every outcome, as the ingest role, ledger and finance database alike
    const a01 = sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'ROLEA' }).text;
    await ws.put('settle_20261201_a01.csv', a01);
    await ws.put('settle_20261201_a02.csv', a01);
    await ws.put(
      'settle_20261201_b01.csv',
      sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: 'ROLEB' }).text.replace(/,(-?\d+\.\d\d),/, ',x,'),
    );
    await ws.put('notes.txt', 'not ours');
    const config = join(ws.root, 'config.json');
    await writeFile(
      config,
      JSON.stringify({ intake: ws.intake, ledger: ws.ledger, stableFor: 0, expect: { every: 'day', by: '04:00', timeZone: 'UTC' } }),
    );
    const night = await ws.cli(['run', '--config', config, '--json']);
    expect(night.status, night.stderr).toBe(1); // the reject
    expect(JSON.parse(night.stdout)).toMatchObject({ loaded: 1, skipped: 1, rejected: 1, ignored: 1, move_failed: 0 });
    expect(await ws.files('archive')).toEqual(['settle_20261201_a01.csv']);
    expect(await ws.files('duplicates')).toEqual(['settle_20261201_a02.csv']);
    expect(await ws.files('rejected')).toEqual(['settle_20261201_b01.csv']);
    const again = await ws.cli(['run', '--config', config]);
    expect(again.status, again.stderr).toBe(0);
    // a day the partner owes (from its first run on: a day before it was never due, and is refused)
    // tomorrow: owed (every day), not delivered yet (today is: a delivered day is not waived)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const waived = await ws.cli(['waive', '--config', config, '--day', tomorrow, '--reason', 'no settlement that day']);
    expect(waived.status, waived.stderr).toBe(0);
    for (const args of [['report', 'runs'], ['report', 'run'], ['report', 'skips'], ['history', 'settle_20261201_a02.csv'], ['audit']]) {
      const r = await ws.cli([...args, '--config', config]);
      expect({ args, status: r.status, stderr: r.stderr }).toEqual({ args, status: 0, stderr: '' });
    }
    expect(ws.events().map((e) => e.event)).toEqual(
      expect.arrayContaining(['claimed', 'loaded', 'skipped', 'rejected', 'ignored', 'waived']),
    );

    // the ingest role migrates nothing
    const asIngest = await ws.cli(['migrate', '--config', config]);
    expect(asIngest.status).toBe(2);
    expect(asIngest.stderr).toContain(`database role "${ingest}" lacks CREATE on schema settle`);
  });
});
