import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd, partnerSftp, rawSftpPut } from '../support/loggingSshd.js';
import { TestProftpd } from '../support/proftpd.js';
import { financeDatabase, SHARED_DEFAULT_LAYOUT, Workspace } from '../support/workspace.js';

interface Arrival {
  partner: string;
  name: string;
  outcome: string | null;
  no_record: string | null;
  unmatched: boolean;
  size: number;
  message: string;
}

interface AuditDoc {
  checks: { name: string; discrepancies: { kind: string; partner: string | null; file: string | null; message: string }[] }[];
  discrepancies: number;
  transfer_log: { arrivals: Arrival[] };
}

const settlement = (prefix: string, rows: number) => sampleSettlement({ date: '2026-12-01', rows, idPrefix: prefix }).text;

/** The arrivals' outcomes (or why they have no record), by partner and name, in the order they arrived. */
function outcomes(doc: AuditDoc): Record<string, (string | null)[]> {
  const by: Record<string, (string | null)[]> = {};
  for (const a of doc.transfer_log.arrivals) (by[`${a.partner}:${a.name}`] ??= []).push(a.outcome ?? a.no_record);
  return by;
}

const kinds = (doc: AuditDoc) => doc.checks.flatMap((c) => c.discrepancies.map((d) => d.kind)).sort();

describe('every arrival followed, in the log of a chrooted OpenSSH internal-sftp -l INFO through rsyslogd', () => {
  let server: TestLoggingSshd;
  beforeAll(async () => {
    // sessions start in /in (`internal-sftp -d /in`); a second partner's login is chrooted apart and logs into the same file
    server = await TestLoggingSshd.start({ startFolder: '/in', partners: ['settlebeta'] });
    for (const folder of ['in', 'old', 'out']) await mkdir(join(server.jail, folder));
    // the partner's own folders in its jail: its intake, and the final folders a run moves its files to
    for (const folder of ['in', 'archive', 'duplicates', 'rejected']) await server.partnerFolder('settlebeta', folder);
  });
  afterAll(async () => server?.destroy());

  it('links, relative paths, escaped names, renames out, over and refused, two partners in one syslog, another program, a cut message', async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    const local = await mkdtemp(join(tmpdir(), 'settle-arrivals-'));
    const texts: Record<string, string> = {
      link: settlement('TAL', 1),
      out: settlement('TAO', 1),
      quote: settlement('TAQ', 1),
      first: settlement('TAV', 1),
      over: settlement('TAW', 3),
      keep: settlement('TAK', 1),
      other: settlement('TAX', 2),
      long: settlement('TAG', 1),
      alpha: settlement('TAA', 1),
      beta: settlement('TAB', 2),
    };
    for (const [name, text] of Object.entries(texts)) await writeFile(join(local, name), text);
    const long = `settle_${'é'.repeat(119)}.csv`; // 249 bytes: OpenSSH writes it as 952 characters and cuts its message at 500
    await partnerSftp(server, [
      `put ${join(local, 'link')} /old/settle_l01.csv`,
      'ln /old/settle_l01.csv /in/settle_l01.csv',
      `put ${join(local, 'out')} /in/settle_o01.csv.part`,
      'rename /in/settle_o01.csv.part /out/settle_o01.csv',
      `put ${join(local, 'quote')} /in/settle_q01.csv.part`,
      'rename /in/settle_q01.csv.part "/in/settle_q\\"01.csv"',
      `put ${join(local, 'first')} /in/settle_v01.csv`,
      `put ${join(local, 'over')} /in/settle_w01.csv.part`,
      'rename /in/settle_w01.csv.part /in/settle_v01.csv', // a posix-rename: it replaces the first upload
      `put ${join(local, 'keep')} /in/settle_k01.csv`,
      `put ${join(local, 'other')} /in/settle_k02.csv`,
      '-rename -l /in/settle_k01.csv /in/settle_k02.csv', // the old RENAME refuses to replace: sent status Failure
      `put ${join(local, 'long')} "/in/${long}"`,
      `put ${join(local, 'alpha')} /in/settle_p01.csv`,
    ]);
    // a path relative to the start folder, and names OpenSSH escapes (a tab, a newline, é)
    await rawSftpPut(server, [
      { path: 'settle_r01.csv', text: settlement('TAR', 1) },
      { path: '/in/settle_t\t01.csv', text: settlement('TAT', 1) },
      { path: '/in/settle_n\n01.csv', text: settlement('TAN', 1) },
      { path: '/in/settle_é01.csv', text: settlement('TAE', 1) },
    ]);
    await partnerSftp(server.as('settlebeta'), [`put ${join(local, 'beta')} /in/settle_p01.csv`]);
    // another program's lines in the same file, worded like the server's
    const socket = join(server.jail, 'dev', 'log');
    for (const message of [
      'open "/in/settle_c01.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
      'close "/in/settle_c01.csv" bytes read 0 written 99',
    ]) {
      await promisify(execFile)('logger', ['-u', socket, '-t', 'cron', '--id=999', message]);
    }

    const partners = {
      alpha: { intake: server.url('/in'), transferLog: [server.logFile] },
      beta: { intake: server.as('settlebeta').url('/in'), transferLog: [server.logFile] },
    };
    const config = join(ws.root, 'config.json');
    await writeFile(
      config,
      JSON.stringify(
        {
          ledger: ws.ledger,
          stableFor: 0,
          sftpKey: server.clientKey,
          knownHosts: server.knownHosts,
          layout: SHARED_DEFAULT_LAYOUT,
          partners,
        },
        null,
        2,
      ),
    );
    const run = await ws.cli(['run', '--config', config]);
    expect(run.status, run.stderr + run.stdout).toBe(0);
    await server.flushLog();

    const audit = await ws.cli(['audit', '--config', config, '--json']);
    expect(audit.status, audit.stderr).toBe(1);
    const doc = JSON.parse(audit.stdout) as AuditDoc;
    const by = outcomes(doc);
    expect(by['alpha:settle_l01.csv']).toEqual(['loaded']); // hard-linked into the intake
    expect(by['alpha:settle_o01.csv.part']).toEqual(['renamed_away_before_run']); // renamed out of it: it left, unread
    expect(by['alpha:settle_q"01.csv']).toEqual(['loaded']);
    expect(by['alpha:settle_v01.csv']).toEqual(['overwritten', 'loaded']);
    expect(by['alpha:settle_k01.csv']).toEqual(['loaded']); // the refused rename moved nothing
    expect(by['alpha:settle_k02.csv']).toEqual(['loaded']);
    expect(by['alpha:settle_r01.csv']).toEqual(['loaded']);
    expect(by['alpha:settle_t\t01.csv']).toEqual([expect.any(String)]);
    expect(by['alpha:settle_n\n01.csv']).toEqual([expect.any(String)]);
    expect(by['alpha:settle_é01.csv']).toEqual(['loaded']);
    expect(by['alpha:settle_p01.csv']).toEqual(['loaded']);
    expect(by['beta:settle_p01.csv']).toEqual(['loaded']);
    expect(doc.transfer_log.arrivals.find((a) => a.partner === 'beta')!.size).toBe(Buffer.byteLength(texts.beta!));
    expect(Object.keys(by).some((k) => k.includes('settle_c01'))).toBe(false); // cron's lines are no upload
    for (const [key, list] of Object.entries(by)) expect(list.includes('vanished'), key).toBe(false);
    // the renamed-out temporary and the upload replaced by a posix-rename; and every line of the long name's, which OpenSSH cut
    const unmatched = doc.checks.flatMap((c) => c.discrepancies.filter((d) => d.kind === 'upload_unmatched'));
    expect(unmatched.map((d) => d.file).sort()).toEqual(['settle_o01.csv.part', 'settle_v01.csv']);
    const unread = doc.checks.flatMap((c) => c.discrepancies.filter((d) => d.kind === 'transfer_log_unread'));
    expect(unread.length).toBeGreaterThanOrEqual(2); // the partner's open and close, and the run's own reading and move of it
    for (const line of unread) expect(line.message).toMatch(/cut at OpenSSH's 500-byte limit.*settle_\\\\303\\\\251/);
    expect(kinds(doc).filter((k) => k !== 'upload_unmatched' && k !== 'transfer_log_unread')).toEqual([]);
    await own.close();
  });
});

describe("ProFTPD's xferlog, which writes white space as _", () => {
  let server: TestProftpd;
  beforeAll(async () => {
    server = await TestProftpd.start();
  });
  afterAll(async () => server?.destroy());

  it("a name with a space is matched to the ledger's name; two names the log writes alike are said ambiguous", async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    const local = await mkdtemp(join(tmpdir(), 'settle-xfer-'));
    const intake = join(local, 'intake');
    await mkdir(intake);
    for (const [name, text] of Object.entries({ a: settlement('TXA', 1), c: settlement('TXC', 1), d: settlement('TXD', 2) })) {
      await writeFile(join(local, name), text);
    }
    await partnerSftp(server, [
      `put ${join(local, 'a')} "${intake}/settle_a b.csv"`,
      `put ${join(local, 'c')} "${intake}/settle_c d.csv"`,
      `put ${join(local, 'd')} "${intake}/settle_c_d.csv"`,
    ]);
    const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
    const args = ['--intake', server.url(intake), '--ledger', ws.ledger, ...access];
    const run = await ws.cli(['run', ...args, '--stable-for', '0']);
    expect(run.status, run.stderr).toBe(0);
    const audit = await ws.cli(['audit', ...args, '--transfer-log', join(server.dir, 'xfer.log'), '--json']);
    const doc = JSON.parse(audit.stdout) as AuditDoc;
    const arrivals = doc.transfer_log.arrivals;
    const spaced = arrivals.find((a) => a.name === 'settle_a b.csv')!;
    expect(spaced.outcome).toBe('loaded');
    expect(spaced.message).toContain('logged as "settle_a_b.csv"');
    const alike = arrivals.filter((a) => a.name === 'settle_c_d.csv');
    expect(alike).toHaveLength(2);
    for (const a of alike) expect(a.message).toContain('AMBIGUOUS');
    // one of the two is matched by its name; the other cannot be told, and is never called clean
    expect(audit.status).toBe(1);
    await own.close();
  });
});

describe("whose upload it is, read from one syslog of two chrooted partners (the audit's last false clean, issue 44)", () => {
  let server: TestLoggingSshd;
  beforeAll(async () => {
    server = await TestLoggingSshd.start({ startFolder: '/in', partners: ['settlebeta'] });
    await mkdir(join(server.jail, 'in'));
    await server.partnerFolder('settlebeta', 'in');
  });
  afterAll(async () => server?.destroy());

  it('local intakes told apart by their logins (else ambiguous); a relative upload removed before any run is unmatched; a name not UTF-8 is its ignored record; the same on SFTP intakes; a copy of the log read a year on reads the same', async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    const local = await mkdtemp(join(tmpdir(), 'settle-whose-'));
    const texts = { alpha: settlement('TWA', 1), beta: settlement('TWB', 2), gone: settlement('TWR', 1), raw: settlement('TWX', 1) };
    for (const [name, text] of Object.entries(texts)) await writeFile(join(local, name), text);
    // alpha's login (the server's own, chrooted in the jail) and beta's each write /in/settle_p01.csv, in their own chroot
    await partnerSftp(server, [
      `put ${join(local, 'alpha')} /in/settle_p01.csv`,
      Buffer.concat([Buffer.from(`put ${join(local, 'raw')} /in/settle_`), Buffer.from([0xff]), Buffer.from('.csv')]),
    ]);
    // a path relative to the session's start folder, removed before any run: it never reached the ledger
    await rawSftpPut(server, [{ path: 'settle_r01.csv', text: texts.gone }]);
    await partnerSftp(server, ['rm /in/settle_r01.csv']);
    await partnerSftp(server.as('settlebeta'), [`put ${join(local, 'beta')} /in/settle_p01.csv`]);

    const localPartners = (logins: boolean) => ({
      alpha: {
        intake: join(server.jail, 'in'),
        transferLog: [server.logFile],
        transferLogRoot: server.jail,
        ...(logins ? { transferLogUser: server.user } : {}),
      },
      beta: {
        intake: join(server.jailOf('settlebeta'), 'in'),
        transferLog: [server.logFile],
        transferLogRoot: server.jailOf('settlebeta'),
        ...(logins ? { transferLogUser: 'settlebeta' } : {}),
      },
    });
    const configOf = async (name: string, partners: object) => {
      const path = join(ws.root, name);
      const settings = {
        ledger: ws.ledger,
        stableFor: 0,
        sftpKey: server.clientKey,
        knownHosts: server.knownHosts,
        layout: SHARED_DEFAULT_LAYOUT,
      };
      await writeFile(path, JSON.stringify({ ...settings, partners }, null, 2));
      return path;
    };
    const local2 = await configOf('local.json', localPartners(true));
    const run = await ws.cli(['run', '--config', local2, '--json']);
    expect(run.status, run.stderr + run.stdout).toBe(0);
    await server.flushLog();

    const audit = async (config: string, env: Record<string, string> = {}) => {
      const r = await ws.cli(['audit', '--config', config, '--json'], env);
      return {
        status: r.status,
        doc: JSON.parse(r.stdout) as AuditDoc & { transfer_log: { ambiguous: { path: string; partners: string[] }[] } },
      };
    };
    const expected = {
      'alpha:settle_p01.csv': ['loaded'],
      'beta:settle_p01.csv': ['loaded'],
      'alpha:settle_r01.csv': ['removed_before_run'],
      'alpha:settle_\uFFFD.csv': ['ignored'],
    };
    const told = await audit(local2);
    expect(told.status).toBe(1);
    expect(outcomes(told.doc)).toEqual(expected);
    expect(told.doc.transfer_log.arrivals.find((a) => a.partner === 'beta')!.size).toBe(Buffer.byteLength(texts.beta));
    // the one discrepancy: the relative upload that left before any run read it
    const found = told.doc.checks.flatMap((c) => c.discrepancies);
    expect(found.map((d) => [d.kind, d.partner, d.file])).toEqual([['upload_unmatched', 'alpha', 'settle_r01.csv']]);

    // without the logins, the log cannot tell whose /in/settle_p01.csv each is: ambiguous, neither partner credited
    const untoldConfig = await configOf('untold.json', localPartners(false));
    const untold = await audit(untoldConfig);
    expect(untold.status).toBe(1);
    expect(untold.doc.transfer_log.arrivals.filter((a) => a.name === 'settle_p01.csv')).toEqual([]);
    expect(untold.doc.transfer_log.ambiguous.filter((a) => a.path === '/in/settle_p01.csv').map((a) => a.partners)).toEqual([
      ['alpha', 'beta'],
      ['alpha', 'beta'],
    ]);
    expect(kinds(untold.doc)).toContain('upload_ambiguous');
    // as text, each ambiguous upload is named once, under its check
    const untoldText = (await ws.cli(['audit', '--config', untoldConfig])).stdout.split('\n');
    const ambiguous = untold.doc.transfer_log.ambiguous.length;
    expect(untoldText.filter((l) => l.includes(': AMBIGUOUS: '))).toHaveLength(ambiguous);
    expect(untoldText.filter((l) => l.includes('/in/settle_p01.csv'))).toHaveLength(2);
    expect(untoldText).toContain(`transfer log: ${ambiguous} uploads of no one partner (named above)`);

    // the same partners read over SFTP, each as its own login: the same accounting
    const sftp = await configOf('sftp.json', {
      alpha: { intake: server.url('/in'), transferLog: [server.logFile] },
      beta: { intake: server.as('settlebeta').url('/in'), transferLog: [server.logFile] },
    });
    const overSftp = await audit(sftp);
    expect(overSftp.status).toBe(1);
    expect(outcomes(overSftp.doc)).toEqual(expected);

    // the log copied a year on (its file's time a year later, the audit read a year later): its year is the ledger's, the same accounting
    const copy = join(await mkdtemp(join(tmpdir(), 'settle-log-copy-')), 'sftp.log');
    await copyFile(server.logFile, copy);
    const yearOn = new Date(Date.now() + 366 * 86_400_000);
    await utimes(copy, yearOn, yearOn);
    const later = { SETTLE_TEST_NOW: yearOn.toISOString() };
    const copied = (partners: Record<string, { transferLog: string[] }>) =>
      Object.fromEntries(Object.entries(partners).map(([name, p]) => [name, { ...p, transferLog: [copy] }]));
    for (const partners of [
      localPartners(true),
      { alpha: { intake: server.url('/in'), transferLog: [] }, beta: { intake: server.as('settlebeta').url('/in'), transferLog: [] } },
    ]) {
      const readLater = await audit(
        await configOf(`copy-${Object.values(partners)[0]!.intake.startsWith('sftp') ? 'sftp' : 'local'}.json`, copied(partners)),
        later,
      );
      expect(readLater.status).toBe(1);
      expect(outcomes(readLater.doc)).toEqual(expected);
    }
    await own.close();
  });
});
