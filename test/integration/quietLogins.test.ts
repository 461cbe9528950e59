import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, financeDatabase, Workspace, type FinanceDatabase } from '../support/workspace.js';

/** What Node.js prints for a warning of its own or a package's: `(node:PID) DeprecationWarning: …`, `Warning: …`. */
const NODE_WARNING = /Warning|\(node:\d+\)/;

/**
 * A login role with a password, as production has one, given what `migrate`, `run`, `status`
 * and `audit` need in its own database: the finance schema and the PostgreSQL ledger are its.
 */
const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
const role = `settle_quiet_${suffix}`;
const PASSWORD = 'quiet-pw';
const databases: FinanceDatabase[] = [];

async function databaseFor(role: string): Promise<{ url: URL; db: FinanceDatabase }> {
  const db = await financeDatabase({ migrated: false });
  databases.push(db);
  const name = new URL(db.url).pathname.slice(1);
  await db.client.query(`GRANT CONNECT, CREATE ON DATABASE ${name} TO ${role}`);
  const url = new URL(db.url);
  url.username = role;
  url.password = '';
  return { url, db };
}

beforeAll(async () => {
  const admin = await financeDatabase({ migrated: false });
  databases.push(admin);
  await admin.client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}'`);
});
afterAll(async () => {
  for (const db of databases) {
    await db.client.query(`DROP OWNED BY ${role} CASCADE`).catch(() => undefined);
    await db.close();
  }
  const last = new pg.Client({ connectionString: databases[0]!.url });
  await last.connect();
  await last.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await last.end();
});

/** migrate, run, status, audit and two reports through one way of giving the password: each exits as it should and prints no warning. */
async function everyCommandQuietly(databaseUrl: string, env: Record<string, string>, prefix: string) {
  const ws = await Workspace.create(databaseUrl, { migrate: false, ledger: 'postgres' });
  const commands: [string, string[]][] = [
    ['migrate', ['migrate', '--ledger', ws.ledger]],
    ['run', ws.runArgs()],
    ['status', ['status', '--ledger', ws.ledger]],
    ['audit', ['audit', '--intake', ws.intake, '--ledger', ws.ledger]],
    ['report runs', ['report', 'runs', '--ledger', ws.ledger]],
    ['history', ['history', 'settle_20261120_a01.csv', '--ledger', ws.ledger]],
  ];
  await ws.put('settle_20261120_a01.csv', sampleSettlement({ date: '2026-11-20', rows: 3, idPrefix: prefix }).text);
  for (const [name, args] of commands) {
    const r = await ws.cli(args, env);
    expect(r.status, `${name}: ${r.stderr}`).toBe(0);
    expect(r.stderr, name).not.toMatch(NODE_WARNING);
    if (name === 'run') expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, rows: 3 });
  }
}

describe('password logins print no Node.js warning', () => {
  it('with the password in the URL', async () => {
    const { url } = await databaseFor(role);
    url.password = PASSWORD;
    await everyCommandQuietly(url.toString(), {}, 'QUIETURL');
  });

  it('with PGPASSWORD', async () => {
    const { url } = await databaseFor(role);
    await everyCommandQuietly(url.toString(), { PGPASSWORD: PASSWORD }, 'QUIETENV');
  });

  it('with a password file (PGPASSFILE, and ~/.pgpass)', async () => {
    const { url } = await databaseFor(role);
    const home = await mkdtemp(join(tmpdir(), 'settle-quiet-home-'));
    const line = `${url.hostname}:${url.port}:${url.pathname.slice(1)}:${role}:${PASSWORD}\n`;
    await writeFile(join(home, 'pgpass'), line);
    await chmod(join(home, 'pgpass'), 0o600);
    await everyCommandQuietly(url.toString(), { PGPASSFILE: join(home, 'pgpass') }, 'QUIETFILE');

    const { url: other } = await databaseFor(role);
    await writeFile(join(home, '.pgpass'), `${other.hostname}:${other.port}:*:${role}:${PASSWORD}\n`);
    await chmod(join(home, '.pgpass'), 0o600);
    await everyCommandQuietly(other.toString(), { HOME: home }, 'QUIETHOME');
  });
});
