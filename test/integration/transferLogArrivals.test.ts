import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
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
