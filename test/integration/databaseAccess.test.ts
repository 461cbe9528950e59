import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { runCli } from '../support/cli.js';
import { financeDatabase, parseSummary, Workspace, type FinanceDatabase } from '../support/workspace.js';

/** One line on stderr, no stack trace. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
  return lines[0]!;
}

describe('least privilege: a migration role owns the schema, an ingest role only loads', () => {
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
  const migrator = `settle_migrate_${suffix}`;
  const ingest = `settle_ingest_${suffix}`;
  let db: FinanceDatabase;
  let admin: pg.Client;
  const as = (role: string) => {
    const u = new URL(db.url);
    u.username = role;
    u.password = 'pw';
    return u.toString();
  };

  beforeAll(async () => {
    db = await financeDatabase({ migrated: false });
    admin = db.client;
    const dbName = new URL(db.url).pathname.slice(1);
    // the README's "Database roles" section, verbatim in substance
    await admin.query(`CREATE ROLE ${migrator} LOGIN PASSWORD 'pw'`);
    await admin.query(`CREATE ROLE ${ingest} LOGIN PASSWORD 'pw'`);
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    await admin.query(`REVOKE ALL ON DATABASE ${dbName} FROM PUBLIC`);
    await admin.query(`GRANT CONNECT ON DATABASE ${dbName} TO ${migrator}, ${ingest}`);
    await admin.query(`CREATE SCHEMA settle AUTHORIZATION ${migrator}`);
  });
  afterAll(async () => {
    await db.close();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query(`DROP OWNED BY ${migrator}, ${ingest} CASCADE`).catch(() => undefined);
    await c.end();
  });

  it('migrate as the ingest role is exit 2 naming the privilege; as the migration role it migrates; the ingest role runs, reports and audits once granted', async () => {
    const ws = await Workspace.create(as(ingest), { migrate: false });
    const refused = await ws.cli(['migrate', '--ledger', ws.ledger]);
    expect(refused.status).toBe(2);
    expect(oneLine(refused.stderr)).toMatch(new RegExp(`role "${ingest}" lacks CREATE on schema settle`));

    const migrated = await ws.cli(['migrate', '--ledger', ws.ledger], { DATABASE_URL: as(migrator) });
    expect(migrated.status, migrated.stderr).toBe(0);

    await ws.put('settle_20261201_a01.csv', sampleSettlement({ date: '2026-12-01', rows: 5, idPrefix: 'PRIV' }).text);
    const noUsage = await ws.run();
    expect(noUsage.status).toBe(2);
    expect(oneLine(noUsage.stderr)).toBe(
      `settle-ingest: database role "${ingest}" lacks USAGE on schema settle: GRANT USAGE ON SCHEMA settle TO ${ingest} (see docs/OPERATING.md, "Database roles")`,
    );
    expect(await ws.files('intake')).toEqual(['settle_20261201_a01.csv']);

    const owner = new pg.Client({ connectionString: as(migrator) });
    await owner.connect();
    await owner.query(`GRANT USAGE ON SCHEMA settle TO ${ingest}`);
    await owner.query(`GRANT SELECT ON settle.schema_migrations TO ${ingest}`);
    await owner.query(`GRANT SELECT, INSERT ON settle.file_loads TO ${ingest}`);
    const noTables = await ws.run();
    expect(noTables.status).toBe(2);
    expect(oneLine(noTables.stderr)).toMatch(
      /lacks UPDATE on table settle\.file_loads, INSERT on table settle\.loads, SELECT on table settle\.loads, UPDATE on table settle\.loads, INSERT on table settle\.settlement_rows, SELECT on table settle\.settlement_rows/,
    );
    expect(await ws.files('intake')).toEqual(['settle_20261201_a01.csv']);

    await owner.query(`GRANT UPDATE ON settle.file_loads TO ${ingest}`);
    await owner.query(`GRANT SELECT, INSERT, UPDATE ON settle.loads TO ${ingest}`);
    await owner.query(`GRANT SELECT, INSERT ON settle.settlement_rows TO ${ingest}`);
    await owner.end();
    const run = await ws.run();
    expect(run.status, run.stderr).toBe(0);
    expect(parseSummary(run.stdout)).toMatchObject({ loaded: 1, rows: 5 });
    const rows = await admin.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'PRIV-%'`);
    expect(rows.rows[0].n).toBe(5);
    expect(await ws.files('archive')).toEqual(['settle_20261201_a01.csv']);

    expect((await ws.cli(['report', 'runs', '--ledger', ws.ledger])).status).toBe(0);
    expect((await ws.cli(['report', 'skips', '--ledger', ws.ledger])).status).toBe(0);
    const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger]);
    expect(audit.status, audit.stderr + audit.stdout).toBe(0);

    // reprocessing deletes the rows it replaces: without DELETE it says so first, exit 2, nothing touched
    const reprocess = ['--reprocess', '--reason', 'layout fix', '--files', 'settle_20261201_a01.csv'];
    const noDelete = await ws.run(reprocess);
    expect(noDelete.status).toBe(2);
    expect(oneLine(noDelete.stderr)).toMatch(/lacks DELETE on table settle\.settlement_rows: grant as the schema's owner/);
    expect(noDelete.stdout).toBe('');
    const kept = await admin.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'PRIV-%'`);
    expect(kept.rows[0].n).toBe(5);
    expect(ws.events().map((e) => e.event)).not.toContain('reprocessed');
    expect(ws.runs().map((r) => r.mode)).not.toContain('reprocess');
  });
});

describe('libpq conventions', () => {
  let db: FinanceDatabase;
  beforeAll(async () => {
    db = await financeDatabase();
  });
  afterAll(async () => db.close());

  /** PGHOST, PGPORT, PGUSER, PGDATABASE from the test database's URL; no DATABASE_URL. */
  const libpq = () => {
    const u = new URL(db.url);
    return { PGHOST: u.hostname, PGPORT: u.port, PGUSER: decodeURIComponent(u.username), PGDATABASE: u.pathname.slice(1) };
  };
  const password = () => decodeURIComponent(new URL(db.url).password);

  it('reaches the finance database from the PG* variables with PGPASSWORD, and with ~/.pgpass when there is none', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261202_a01.csv', sampleSettlement({ date: '2026-12-02', rows: 3, idPrefix: 'LIBPQ' }).text);
    const env = { ...libpq(), PGPASSWORD: password() };
    const byEnv = await runCli(ws.runArgs(), env, { cwd: ws.root });
    expect(byEnv.status, byEnv.stderr).toBe(0);
    expect(parseSummary(byEnv.stdout)).toMatchObject({ loaded: 1, rows: 3 });

    const home = await mkdtemp(join(tmpdir(), 'settle-home-'));
    const p = libpq();
    await writeFile(join(home, '.pgpass'), `${p.PGHOST}:${p.PGPORT}:${p.PGDATABASE}:${p.PGUSER}:${password()}\n`);
    await chmod(join(home, '.pgpass'), 0o600);
    const byPgpass = await runCli(['audit', '--intake', ws.intake, '--ledger', ws.ledger], { ...libpq(), HOME: home }, { cwd: ws.root });
    expect(byPgpass.status, byPgpass.stderr).toBe(0);
    expect(byPgpass.stderr).not.toMatch(/deprecat/i);
  });

  it('without any password is exit 2, one line saying where to put one', async () => {
    const home = await mkdtemp(join(tmpdir(), 'settle-home-'));
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261203_a01.csv', sampleSettlement({ date: '2026-12-03', rows: 2, idPrefix: 'NOPW' }).text);
    const r = await runCli(ws.runArgs(), { ...libpq(), HOME: home, PGPASSFILE: join(home, 'missing') }, { cwd: ws.root });
    expect(r.status).toBe(2);
    expect(oneLine(r.stderr)).toMatch(/no password for user "[^"]+" on [^ ]+: add a line to .*missing \(mode 0600\), or set PGPASSWORD/);
    expect(await ws.files('intake')).toEqual(['settle_20261203_a01.csv']);
  });
});

describe('configuration errors are one line, exit 2, and say what to do', () => {
  let db: FinanceDatabase;
  let ws: Workspace;
  beforeAll(async () => {
    db = await financeDatabase();
    ws = await Workspace.create(db.url);
  });
  afterAll(async () => db.close());

  const cases: [string, string[], Record<string, string>, RegExp][] = [
    [
      'an unparsable URL',
      [],
      { DATABASE_URL: 'not a url' },
      /finance database "not a url" is not a postgres:\/\/ URL: write postgres:\/\//,
    ],
    [
      'a bad pattern',
      ['--pattern', 'settle_[z-a].csv'],
      {},
      /--pattern "settle_\[z-a\]\.csv" is not a usable file name pattern .*ranges in order/,
    ],
    [
      'an unknown intake scheme',
      ['--intake', 'ftp://partner.example/out'],
      {},
      /--intake: "ftp:\/\/partner\.example\/out" must be a local folder or sftp:\/\//,
    ],
    ['a log file that is a folder', ['--log-file', tmpdir()], {}, /log file .* cannot be opened: it is a folder/],
    ['a missing staging folder', ['--staging', '/nonexistent/staging'], {}, /staging folder \/nonexistent\/staging does not exist/],
  ];
  for (const [what, args, env, message] of cases) {
    it(`${what}`, async () => {
      await ws.put('settle_20261204_a01.csv', sampleSettlement({ date: '2026-12-04', rows: 2, idPrefix: 'CONF' }).text);
      const r = await ws.run(args, env);
      expect(r.status).toBe(2);
      expect(oneLine(r.stderr)).toMatch(message);
      expect(await ws.files('intake')).toEqual(['settle_20261204_a01.csv']);
    });
  }

  it('a URL whose password holds a space never prints the password, whole or in part', async () => {
    await ws.put('settle_20261204_a01.csv', sampleSettlement({ date: '2026-12-04', rows: 2, idPrefix: 'CONF' }).text);
    const r = await ws.run([], { DATABASE_URL: 'postgres://ingest:S3cr3t xyz@127.0.0.1:1/finance' });
    expect(r.status).toBe(1); // nothing listens there: unreachable, try again next run
    expect(oneLine(r.stderr)).toBe(
      'settle-ingest: finance database postgres://ingest:***@127.0.0.1:1/finance is unreachable: connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(await ws.files('intake')).toEqual(['settle_20261204_a01.csv']);
  });

  it('out-of-range report numbers, a mistyped flag and a mistyped config key', async () => {
    const weeks = await ws.cli(['report', 'skips', '--weeks', '99999999999999', '--ledger', ws.ledger]);
    expect(weeks.status).toBe(2);
    expect(oneLine(weeks.stderr)).toBe('settle-ingest: --weeks must be a whole number from 1 to 1000, got 99999999999999');
    const last = await ws.cli(['report', 'runs', '--last', '99999999999999999999', '--ledger', ws.ledger]);
    expect(last.status).toBe(2);
    expect(oneLine(last.stderr)).toMatch(/--last must be a whole number from 1 to 100000/);
    const flag = await ws.cli(['run', '--intke', ws.intake]);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(/Did you mean --intake\?/);
    const config = join(ws.root, 'typo.json');
    await writeFile(config, JSON.stringify({ intake: ws.intake, stabelFor: 0 }));
    const key = await ws.cli(['run', '--config', config]);
    expect(key.status).toBe(2);
    expect(oneLine(key.stderr)).toMatch(/unknown setting "stabelFor" \(did you mean "stableFor"\?\)/);
  });

  it('--verbose adds the cause chain under the one line', async () => {
    const r = await ws.run(['--verbose', '--log-file', tmpdir()]);
    expect(r.status).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/cannot be opened: it is a folder/);
    expect(lines.slice(1).join('\n')).toMatch(/caused by: .*EISDIR.*\[EISDIR\]/);
  });
});

describe('settle-ingest config', () => {
  it('prints every effective setting with its source, secrets hidden; --json keys are in docs/JSON.md', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-config-'));
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ intake: '/srv/settle/intake', stableFor: 10 }));
    const env = { DATABASE_URL: 'postgres://ingest:s3cret@db.internal/finance', SETTLE_PATTERN: 'p_*.csv', PGPASSWORD: 'pgsecret' };
    const r = await runCli(['config', '--config', file, '--schema', 'fin', '--json'], env);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/s3cret|pgsecret/);
    const doc = JSON.parse(r.stdout) as {
      version: number;
      settings: { setting: string; value: string | null; source: string; from: string | null }[];
    };
    const by = Object.fromEntries(doc.settings.map((s) => [s.setting, s]));
    expect(by.schema).toMatchObject({ value: 'fin', source: 'flag', from: '--schema' });
    expect(by.pattern).toMatchObject({ value: 'p_*.csv', source: 'environment', from: 'SETTLE_PATTERN' });
    expect(by.stableFor).toMatchObject({ value: '10', source: 'file' });
    expect(by.intake).toMatchObject({ value: '/srv/settle/intake', source: 'file' });
    expect(by.ledger).toMatchObject({ value: './settle-ledger.sqlite', source: 'default', from: null });
    expect(by.databaseUrl).toMatchObject({ value: 'postgres://ingest:***@db.internal/finance', source: 'environment' });
    expect(by.PGPASSWORD).toMatchObject({ value: '***', source: 'environment' });

    const readme = await import('node:fs/promises').then((fs) => fs.readFile(new URL('../../docs/JSON.md', import.meta.url), 'utf8'));
    const section = readme.slice(readme.indexOf('## JSON output'), readme.indexOf('\n## ', readme.indexOf('## JSON output') + 1));
    for (const key of ['version', 'settings', 'setting', 'value', 'source', 'from']) expect(section).toContain(`\`${key}\``);

    const text = await runCli(['config', '--config', file], env);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^schema\s+settle\s+default$/m);
    expect(text.stdout).toMatch(/^stableFor\s+10\s+file .*config\.json: "stableFor"$/m);
  });
});
