import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { TestSshd } from '../support/sshd.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
let sshd: TestSshd;
beforeAll(async () => {
  sshd = await TestSshd.start();
});
afterAll(async () => sshd?.destroy());

interface Check {
  partner: string | null;
  check: string;
  ok: boolean;
  message: string;
}

/**
 * Two partners: `bank` on a local folder with the default layout, `adyen` on the test sshd with a
 * table of its own; the ledger and both tables migrated. `change` edits the config first.
 */
async function twoPartners(change: (config: { ledger: string; partners: Record<string, Record<string, unknown>> }) => void = () => {}) {
  const ws = await Workspace.create(db.url, { migrate: false });
  const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
  await mkdir(join(remote, 'intake'));
  const config = {
    ledger: ws.ledger,
    partners: {
      bank: { intake: ws.intake },
      adyen: {
        intake: sshd.url(join(remote, 'intake')),
        sftpKey: sshd.clientKey,
        knownHosts: sshd.knownHosts,
        layout: { extends: 'default', table: 'adyen_rows' },
      },
    },
  };
  const path = join(ws.root, 'config.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  const migrated = await ws.cli(['migrate', '--config', path]);
  expect(migrated.status, migrated.stderr).toBe(0);
  change(config);
  await writeFile(path, JSON.stringify(config, null, 2));
  const doctor = async (extra: string[] = [], env: Record<string, string> = {}) => {
    // the tests' runs run as root (as the test does): doctor started as root checks as the user named
    const r = await ws.cli(['doctor', '--config', path, '--json', '--service-user', 'root', ...extra], env);
    return { status: r.status, stderr: r.stderr, checks: (JSON.parse(r.stdout) as { checks: Check[] }).checks };
  };
  return { ws, remote, path, doctor };
}

const failed = (checks: Check[]) => checks.filter((c) => !c.ok).map((c) => `${c.partner ?? '(all)'} ${c.check}`);

describe('doctor: will tonight work?', () => {
  it('all good: exit 0, one ok line per check, each partner and the shared ones named', async () => {
    const { ws, path, doctor } = await twoPartners();
    const json = await doctor();
    expect(json.status, json.stderr).toBe(0);
    expect(failed(json.checks)).toEqual([]);
    const each = ['settings', 'access', 'finance', 'intake', 'archive', 'duplicates', 'rejected', 'intake-listing', 'staging'];
    expect(json.checks.map((c) => `${c.partner ?? '(all)'} ${c.check}`)).toEqual([
      '(all) service-user',
      '(all) ledger',
      '(all) finance-login',
      '(all) finance-writable',
      '(all) clock',
      ...each.map((check) => `bank ${check}`),
      ...each.map((check) => `adyen ${check}`),
    ]);
    const text = await ws.cli(['doctor', '--config', path, '--service-user', 'root']);
    expect(text.status).toBe(0);
    const lines = text.stdout.trim().split('\n');
    // a header, then a line per check, each saying ok
    expect(lines).toHaveLength(json.checks.length + 1);
    for (const line of lines.slice(1)) expect(line).toMatch(/ ok(:|$)/);
  });

  it('creates nothing: a ledger not there stays not there, no final folder is made, locally or on the server', async () => {
    const { ws, remote, doctor } = await twoPartners((c) => {
      c.ledger = join(c.ledger, '..', 'not-yet.sqlite');
    });
    const here = (await readdir(ws.root)).sort();
    const there = (await readdir(remote)).sort();
    const r = await doctor();
    expect(r.status).toBe(2);
    expect(failed(r.checks)).toEqual(['(all) ledger']);
    expect(r.checks.find((c) => c.check === 'ledger')!.message).toMatch(
      /not-yet\.sqlite does not exist: run `settle-ingest migrate` first/,
    );
    expect(existsSync(join(ws.root, 'not-yet.sqlite'))).toBe(false);
    expect((await readdir(ws.root)).sort()).toEqual(here);
    expect(here).not.toContain('archive');
    expect((await readdir(remote)).sort()).toEqual(there);
    expect(there).toEqual(['intake']);
  });

  it('an intake folder missing: exit 2 naming that partner and check', async () => {
    const { doctor } = await twoPartners((c) => {
      c.partners.bank!.intake = join(c.partners.bank!.intake as string, '..', 'gone');
    });
    const r = await doctor();
    expect(r.status).toBe(2);
    // the run refuses it before any partner runs, and opening it fails as the run's would
    expect(failed(r.checks)).toEqual(['bank access', 'bank intake']);
    expect(r.checks.find((c) => c.partner === 'bank' && c.check === 'access')!.message).toMatch(/gone does not exist/);
  });

  it("an SFTP server whose host key is not known: exit 2 naming the partner's intake server", async () => {
    const { ws, doctor } = await twoPartners((c) => {
      c.partners.adyen!.knownHosts = join(c.ledger, '..', 'empty_known_hosts');
    });
    await writeFile(join(ws.root, 'empty_known_hosts'), '');
    const r = await doctor();
    expect(r.status).toBe(2);
    expect(failed(r.checks)).toEqual(['adyen intake']);
    expect(r.checks.find((c) => c.partner === 'adyen' && c.check === 'intake')!.message).toMatch(
      /host \[127\.0\.0\.1\]:\d+ is not in .*empty_known_hosts: the server offered ssh-ed25519 key SHA256:/,
    );
  });

  it('a ledger one migration behind this release: exit 2 naming the ledger and migrate', async () => {
    const { ws, doctor } = await twoPartners();
    const ledger = new Database(ws.ledger);
    ledger.prepare('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)').run();
    ledger.close();
    const r = await doctor();
    expect(r.status).toBe(2);
    expect(failed(r.checks)).toEqual(['(all) ledger']);
    expect(r.checks.find((c) => c.check === 'ledger')!.message).toMatch(
      /is at version \d+, this release needs \d+: run `settle-ingest migrate` first/,
    );
  });

  it("a finance role lacking INSERT on a partner's layout table: exit 2 naming that partner, the privilege and the table", async () => {
    const role = `settle_doctor_${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
    await db.client.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    try {
      await db.client.query(`GRANT USAGE ON SCHEMA settle TO ${role}`);
      await db.client.query(`GRANT SELECT ON settle.schema_migrations TO ${role}`);
      await db.client.query(`GRANT SELECT, INSERT, UPDATE ON settle.file_loads, settle.loads TO ${role}`);
      await db.client.query(`GRANT SELECT, INSERT ON settle.adyen_rows TO ${role}`);
      await db.client.query(`GRANT SELECT ON settle.settlement_rows TO ${role}`);
      const { doctor } = await twoPartners();
      const u = new URL(db.url);
      u.username = role;
      u.password = 'pw';
      const r = await doctor([], { DATABASE_URL: u.toString() });
      expect(r.status).toBe(2);
      expect(failed(r.checks)).toEqual(['bank finance']);
      expect(r.checks.find((c) => c.partner === 'bank' && c.check === 'finance')!.message).toBe(
        `database role "${role}" lacks INSERT on table settle.settlement_rows: grant as the schema's owner (see docs/OPERATING.md, "Database roles")`,
      );
    } finally {
      await db.client.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });

  it("a clock an hour ahead of the database server's: exit 2 naming the clock and by how much", async () => {
    const { doctor } = await twoPartners();
    // this host's clock alone an hour off (the test build's seam); the world moved with SETTLE_TEST_NOW is no skew
    const r = await doctor([], { SETTLE_TEST_CLOCK_SKEW: '1h' });
    expect(r.status).toBe(2);
    expect(failed(r.checks)).toEqual(['(all) clock']);
    expect(r.checks.find((c) => c.check === 'clock')!.message).toMatch(
      /clock is 3\d{3}\.\d s \(1h\) ahead of the database server's, more than 5 s/,
    );
    const moved = await doctor([], { SETTLE_TEST_NOW: new Date(Date.now() + 3600_000).toISOString() });
    expect(failed(moved.checks)).toEqual([]);
  });

  it('the config it checks is one the config schema takes', async () => {
    const { path } = await twoPartners();
    const schema = await runCli(['config', '--json-schema'], {});
    expect(schema.status).toBe(0);
    const { Ajv2020 } = await import('ajv/dist/2020.js');
    const validate = new Ajv2020({ strict: true }).compile(JSON.parse(schema.stdout) as object);
    const config = JSON.parse(await readFile(path, 'utf8')) as unknown;
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
  });
});
