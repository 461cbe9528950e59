import { spawnSync } from 'node:child_process';
import { chmod, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd } from '../support/loggingSshd.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

/**
 * doctor never says ok for a night that will fail: each case below is one where doctor said
 * every check ok and the run then failed (the fifteen). doctor is started as root, as
 * the install steps say, and checks as the service user the settings name.
 */

const db = sharedFinanceDatabase();
const SERVICE = 'settle-doctor-svc';
const isRoot = process.getuid?.() === 0;

interface Check {
  partner: string | null;
  check: string;
  ok: boolean;
  message: string;
}

const failed = (checks: Check[]) => checks.filter((c) => !c.ok).map((c) => `${c.partner ?? '(all)'} ${c.check}`);
const messageOf = (checks: Check[], check: string) => checks.find((c) => c.check === check)?.message ?? '';

/**
 * One partner on a local intake, its workspace the service user's (as `migrate` as that user
 * leaves it), and doctor started as root with --service-user. `change` edits the config.
 */
async function night(change: (config: Record<string, unknown>, ws: Workspace) => Promise<void> | void = () => {}, ledger?: 'postgres') {
  const ws = await Workspace.create(db.url, ledger ? { ledger } : {});
  const config: Record<string, unknown> = { intake: ws.intake, ledger: ws.ledger, staging: join(ws.root, 'staging'), serviceUser: SERVICE };
  await mkdir(join(ws.root, 'staging'));
  await writeFile(join(ws.intake, 'settle_20261203_a01.csv'), sampleSettlement({ date: '2026-12-03', rows: 2, idPrefix: 'DOC' }).text);
  expect(spawnSync('chown', ['-R', `${SERVICE}:${SERVICE}`, ws.root]).status).toBe(0);
  await change(config, ws);
  const path = join(ws.root, 'config.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  await chmod(path, 0o644);
  const doctor = async (extra: string[] = [], env: Record<string, string> = {}) => {
    const r = await ws.cli(['doctor', '--config', path, '--json', ...extra], env);
    return { status: r.status, stderr: r.stderr, checks: (JSON.parse(r.stdout) as { checks: Check[] }).checks };
  };
  return { ws, path, doctor, config };
}

/** A folder only root may write in, in the workspace. */
async function rootsFolder(ws: Workspace, name: string): Promise<string> {
  const folder = join(ws.root, name);
  await mkdir(folder, { mode: 0o755 });
  expect(spawnSync('chown', ['root:root', folder]).status).toBe(0);
  return folder;
}

describe.skipIf(!isRoot)('doctor never says ok for a night that will fail', () => {
  beforeAll(() => {
    if (spawnSync('id', [SERVICE], { stdio: 'ignore' }).status !== 0) {
      const made = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', SERVICE], {
        encoding: 'utf8',
      });
      expect(made.status, made.stderr).toBe(0);
    }
  });

  it('all ok as the service user where a run as it works', async () => {
    const { ws, doctor } = await night();
    const r = await doctor();
    expect(failed(r.checks), JSON.stringify(r.checks)).toEqual([]);
    expect(r.status).toBe(0);
    expect(messageOf(r.checks, 'service-user')).toMatch(new RegExp(`as ${SERVICE} \\(uid \\d+\\), started as root`));
    // and changed nothing: no log, no folder made beside the intake
    expect(spawnSync('ls', ['-A', ws.root], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).sort()).toEqual([
      'config.json',
      'intake',
      'ledger.sqlite',
      'staging',
    ]);
  });

  it('(15) started as root without a service user: it says it cannot tell, exit 2; as the service user, a ledger only root may write fails', async () => {
    const { ws, doctor } = await night((config) => void delete config.serviceUser);
    const r = await doctor();
    expect(r.status).toBe(2);
    expect(failed(r.checks)).toEqual(['(all) service-user']);
    expect(messageOf(r.checks, 'service-user')).toMatch(/doctor runs as root.*--service-user/);
    // a ledger migrated as root (root's, 0600): root would pass, the service user's run cannot write it
    expect(spawnSync('chown', ['root:root', ws.ledger]).status).toBe(0);
    const asService = await doctor(['--service-user', SERVICE]);
    expect(asService.status).toBe(2);
    expect(failed(asService.checks)).toEqual(['(all) ledger']);
    expect(messageOf(asService.checks, 'ledger')).toMatch(/cannot be opened for writing|not writable|permission denied|readonly/i);
  });

  it('(1) a chrooted SFTP login that cannot make /duplicates: duplicates FAILED, naming the mkdir and chown', async () => {
    const login = 'settledocsftp';
    const base = await TestLoggingSshd.start({ partners: [login] });
    try {
      const server = base.as(login);
      for (const folder of ['in', 'archive', 'rejected']) await base.partnerFolder(login, folder);
      const { doctor } = await night((config) => {
        Object.assign(config, {
          intake: server.url('/in'),
          sftpKey: server.clientKey,
          knownHosts: server.knownHosts,
          // the client key is root's in the test: the runs here run as root
          serviceUser: 'root',
        });
      });
      const r = await doctor();
      expect(r.status).toBe(2);
      expect(failed(r.checks)).toEqual(['default duplicates']);
      expect(messageOf(r.checks, 'duplicates')).toMatch(
        /\/duplicates is not there and the login settledocsftp cannot make it in \/ .*mkdir \/duplicates; chown settledocsftp \/duplicates/,
      );
    } finally {
      await base.destroy();
    }
  });

  it('(2) a log file the service user may not write: log-file FAILED with the chown', async () => {
    const { doctor } = await night(async (config, ws) => {
      const log = join(ws.root, 'run.log');
      await writeFile(log, '');
      expect(spawnSync('chown', ['root:root', log]).status).toBe(0);
      config.logFile = log;
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['(all) log-file']);
    expect(messageOf(r.checks, 'log-file')).toMatch(new RegExp(`may not write it .*chown ${SERVICE} .*run\\.log`));
  });

  it('(3) a metrics file in a folder the service user may not write: metrics-file FAILED', async () => {
    const { doctor } = await night(async (config, ws) => {
      config.metricsFile = join(await rootsFolder(ws, 'textfile'), 'settle.prom');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['(all) metrics-file']);
    expect(messageOf(r.checks, 'metrics-file')).toMatch(new RegExp(`may not make files in .*textfile.*chown ${SERVICE}`));
  });

  it('(4) a summary file in a folder the service user may not write: summary-file FAILED', async () => {
    const { doctor } = await night(async (config, ws) => {
      config.summaryFile = join(await rootsFolder(ws, 'summaries'), 'summary.log');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['(all) summary-file']);
  });

  it('(5) a staging folder that does not exist: the run refuses it at its start, and doctor says so', async () => {
    const { doctor } = await night((config, ws) => {
      config.staging = join(ws.root, 'no-staging');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['default access', 'default staging']);
    expect(messageOf(r.checks, 'staging')).toMatch(/staging folder .*no-staging does not exist/);
  });

  it('(6) a staging folder the service user may not write: staging FAILED with the chown', async () => {
    const { doctor } = await night(async (config, ws) => {
      config.staging = await rootsFolder(ws, 'roots-staging');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['default access', 'default staging']);
    expect(messageOf(r.checks, 'staging')).toMatch(new RegExp(`not writable by the user ${SERVICE}.*chown ${SERVICE}`));
  });

  it('(7) staging on a file system with no room for the file waiting: staging FAILED naming the bytes', async () => {
    const { ws, doctor } = await night(async (config, workspace) => {
      const small = join(workspace.root, 'small');
      await mkdir(small);
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', small]).status).toBe(0);
      expect(spawnSync('chown', [`${SERVICE}:${SERVICE}`, small]).status).toBe(0);
      config.staging = small;
    });
    try {
      const r = await doctor();
      expect(failed(r.checks)).toEqual(['default staging']);
      expect(messageOf(r.checks, 'staging')).toMatch(/has \d+ bytes free, fewer than the \d+ a run needs/);
    } finally {
      spawnSync('umount', [join(ws.root, 'small')]);
    }
  });

  it('(8) a log file that is a symbolic link: log-file FAILED, never written through', async () => {
    const { doctor } = await night(async (config, ws) => {
      const link = join(ws.root, 'run.log');
      await writeFile(join(ws.root, 'elsewhere.log'), '');
      await symlink(join(ws.root, 'elsewhere.log'), link);
      config.logFile = link;
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['(all) log-file']);
    expect(messageOf(r.checks, 'log-file')).toMatch(/symbolic link, never written through/);
  });

  it('(9) a log file whose folder the service user may not write: log-file FAILED', async () => {
    const { doctor } = await night(async (config, ws) => {
      config.logFile = join(await rootsFolder(ws, 'logs'), 'run.log');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['(all) log-file']);
    expect(messageOf(r.checks, 'log-file')).toMatch(new RegExp(`may not make files in .*logs.*chown ${SERVICE}`));
  });

  describe('a PostgreSQL ledger role and a finance role', () => {
    const role = `settle_doctor_${process.pid}_${Math.random().toString(36).slice(2, 6)}`;
    const urlAs = () => {
      const u = new URL(db.url);
      u.username = role;
      u.password = 'pw';
      return u.toString();
    };
    beforeAll(async () => {
      await db.client.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    });
    afterAll(async () => {
      await db.client.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    });

    it('(10) a ledger role with SELECT only: ledger-privileges FAILED with each GRANT', async () => {
      const { doctor } = await night((config) => void (config.ledger = urlAs()), 'postgres');
      await db.client.query(`GRANT USAGE ON SCHEMA settle_ledger TO ${role}`);
      await db.client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA settle_ledger TO ${role}`);
      const r = await doctor();
      expect(failed(r.checks)).toEqual(['(all) ledger-privileges']);
      const message = messageOf(r.checks, 'ledger-privileges');
      expect(message).toContain(`GRANT INSERT, UPDATE ON "settle_ledger"."runs" TO "${role}"`);
      expect(message).toContain(`GRANT INSERT ON "settle_ledger"."ledger_events" TO "${role}"`);
      expect(message).toMatch(/GRANT USAGE ON SEQUENCE .*"processed_files_id_seq"/);
      await db.client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA settle_ledger FROM ${role}`);
    });

    it('(11) a ledger role with every table grant and no sequence grant: ledger-privileges FAILED naming the sequences', async () => {
      const { doctor } = await night((config) => void (config.ledger = urlAs()), 'postgres');
      await db.client.query(`GRANT USAGE ON SCHEMA settle_ledger TO ${role}`);
      await db.client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA settle_ledger TO ${role}`);
      const r = await doctor();
      expect(failed(r.checks)).toEqual(['(all) ledger-privileges']);
      const message = messageOf(r.checks, 'ledger-privileges');
      expect(message).toMatch(/^ledger role .*: GRANT USAGE ON SEQUENCE "settle_ledger"\."\w+_seq"/);
      expect(message).not.toContain('ON "settle_ledger"."runs"');
      await db.client.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA settle_ledger TO ${role}`);
      expect(failed((await doctor()).checks)).toEqual([]);
      await db.client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA settle_ledger FROM ${role}`);
      await db.client.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA settle_ledger FROM ${role}`);
    });

    it('(16) a finance role without TEMPORARY: finance FAILED for the partner whose statements are staged, naming the GRANT; a partner without staged loads is not asked for it', async () => {
      const statementLayout = {
        table: 'doctor_statement_lines',
        columns: [
          { name: 'booking_date', from: 'Date', type: 'date', format: 'dd.MM.yyyy' },
          { name: 'text', from: 'Text', type: 'text' },
          { name: 'amount', from: 'Amount', type: 'decimal' },
        ],
        naturalKey: ['booking_date', 'text', 'amount'],
        occurrence: true,
      };
      const { ws, path, doctor } = await night(async (config, ws) => {
        // its own folders: archive/, duplicates/ and rejected/ are siblings of its intake
        const bankIntake = join(ws.root, 'bank', 'intake');
        await mkdir(bankIntake, { recursive: true });
        await writeFile(join(bankIntake, 'statement_2026-12-03.csv'), 'Date,Text,Amount\n03.12.2026,CAFE,-3.50\n03.12.2026,CAFE,-3.50\n');
        expect(spawnSync('chown', ['-R', `${SERVICE}:${SERVICE}`, join(ws.root, 'bank')]).status).toBe(0);
        config.partners = {
          acquirer: { intake: ws.intake },
          bank: { intake: bankIntake, pattern: 'statement_*.csv', layout: statementLayout },
        };
        delete config.intake;
      });
      const migrated = await ws.cli(['migrate', '--config', path]);
      expect(migrated.status, migrated.stderr).toBe(0);
      const database = (await db.client.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
      await db.client.query(`GRANT USAGE ON SCHEMA settle TO ${role}`);
      await db.client.query(`GRANT SELECT ON settle.schema_migrations TO ${role}`);
      await db.client.query(
        `GRANT SELECT, INSERT, UPDATE ON settle.file_loads, settle.loads, settle.settlement_rows, settle.doctor_statement_lines TO ${role}`,
      );
      await db.client.query(`REVOKE TEMPORARY ON DATABASE ${database} FROM PUBLIC`);
      try {
        const r = await doctor([], { DATABASE_URL: urlAs() });
        expect(failed(r.checks)).toEqual(['bank finance']);
        expect(r.status).toBe(2);
        const financeOf = (checks: Check[], partner: string) => checks.find((c) => c.partner === partner && c.check === 'finance')!;
        expect(financeOf(r.checks, 'bank').message).toContain(`GRANT TEMPORARY ON DATABASE "${database}" TO "${role}"`);
        expect(financeOf(r.checks, 'acquirer')).toMatchObject({ ok: true, message: expect.not.stringContaining('TEMPORARY') });
        // granted to the role itself: every check ok
        await db.client.query(`GRANT TEMPORARY ON DATABASE ${database} TO ${role}`);
        const granted = await doctor([], { DATABASE_URL: urlAs() });
        expect(failed(granted.checks)).toEqual([]);
        expect(granted.status).toBe(0);
        expect(financeOf(granted.checks, 'bank').message).toContain('TEMPORARY for its staging table held');
        await db.client.query(`REVOKE TEMPORARY ON DATABASE ${database} FROM ${role}`);

        // the run refuses the same at the bank's start: alone, exit 2 and nothing touched; beside the
        // acquirer, whose run loads, the bank is not started and named (exit 1, docs/PARTNERS.md)
        const alone = await ws.cli(['run', '--config', path, '--stable-for', '0', '--partner', 'bank'], { DATABASE_URL: urlAs() });
        expect(alone.status, alone.stdout + alone.stderr).toBe(2);
        expect(alone.stdout + alone.stderr).toContain(`GRANT TEMPORARY ON DATABASE "${database}" TO "${role}"`);
        const both = await ws.cli(['run', '--config', path, '--stable-for', '0'], { DATABASE_URL: urlAs() });
        expect(both.status, both.stdout + both.stderr).toBe(1);
        expect(both.stdout).toMatch(/bank: run \S+ not started: .*\(could not start: database role .* lacks TEMPORARY/);
        expect(await readdir(join(ws.root, 'bank', 'intake'))).toEqual(['statement_2026-12-03.csv']);
        const loaded = await db.client.query<{ n: number }>('SELECT count(*)::int AS n FROM settle.doctor_statement_lines');
        expect(loaded.rows[0]!.n).toBe(0);
      } finally {
        await db.client.query(`GRANT TEMPORARY ON DATABASE ${database} TO PUBLIC`);
        await db.client.query(`REVOKE TEMPORARY ON DATABASE ${database} FROM ${role}`);
        await db.client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA settle FROM ${role}`);
      }
    });

    it('(12) a finance role whose transactions are read-only (as on a replica): finance-writable FAILED with the ALTER ROLE', async () => {
      await db.client.query(`GRANT USAGE ON SCHEMA settle TO ${role}`);
      await db.client.query(`GRANT SELECT ON settle.schema_migrations TO ${role}`);
      await db.client.query(`GRANT SELECT, INSERT, UPDATE ON settle.file_loads, settle.loads, settle.settlement_rows TO ${role}`);
      await db.client.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
      try {
        const { doctor } = await night();
        const r = await doctor([], { DATABASE_URL: urlAs() });
        expect(failed(r.checks)).toEqual(['(all) finance-writable']);
        expect(messageOf(r.checks, 'finance-writable')).toContain(`ALTER ROLE "${role}" SET default_transaction_read_only = off`);
      } finally {
        await db.client.query(`ALTER ROLE ${role} RESET default_transaction_read_only`);
      }
    });
  });

  it('(13) a pgpKey file that is missing: settings FAILED, as the run refuses it', async () => {
    const { doctor } = await night((config, ws) => {
      config.pgpKey = join(ws.root, 'keys', 'partner.asc');
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['default settings']);
    expect(messageOf(r.checks, 'settings')).toMatch(/partner\.asc/);
  });

  it('(14) a transfer log the service user may not read: transfer-log FAILED naming the group to join', async () => {
    const { doctor } = await night(async (config, ws) => {
      const log = join(await rootsFolder(ws, 'sftp-logs'), 'sftp.log');
      await writeFile(log, '', { mode: 0o600 });
      config.transferLog = log;
    });
    const r = await doctor();
    expect(failed(r.checks)).toEqual(['default transfer-log']);
    expect(messageOf(r.checks, 'transfer-log')).toMatch(/cannot be read by this user .*chmod g\+r/);
  });
});
