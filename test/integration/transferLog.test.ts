import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { currentOwner } from '../../src/owner.js';
import { TestLoggingSshd, partnerSftp } from '../support/loggingSshd.js';
import { stageClaim } from '../support/otherRun.js';
import { TestProftpd } from '../support/proftpd.js';
import { financeDatabase, Workspace } from '../support/workspace.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface Arrival {
  name: string;
  outcome: string | null;
  no_record: string | null;
  unmatched: boolean;
  size: number;
  at: string;
  duplicate_of: { name: string } | null;
  message: string;
}

/**
 * The server's log as logrotate leaves it: its first lines rotated away and gzipped
 * (`NAME.1.gz`), the rest in `NAME`, which also holds a line torn in two (a full disk, a crash).
 */
async function rotated(log: string, name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'settle-translog-'));
  const lines = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
  const cut = Math.floor(lines.length / 2);
  await writeFile(join(dir, `${name}.1.gz`), gzipSync(`${lines.slice(0, cut).join('\n')}\n`));
  const last = lines.filter((l) => l.includes('settle_')).at(-1)!;
  const torn = last.slice(0, last.indexOf('settle_') + 10);
  await writeFile(join(dir, name), `${lines.slice(cut).join('\n')}\n${torn}\n`);
  return join(dir, `${name}*`);
}

const SERVERS = [
  {
    kind: 'OpenSSH internal-sftp -l INFO through rsyslogd',
    start: async () => {
      const server = await TestLoggingSshd.start();
      await mkdir(join(server.jail, 'in'), { mode: 0o755 });
      return { server, folder: '/in', local: join(server.jail, 'in'), log: server.logFile, flush: () => server.flushLog() };
    },
  },
  {
    kind: 'ProFTPD mod_sftp TransferLog (xferlog)',
    start: async () => {
      const server = await TestProftpd.start();
      const local = await mkdtemp(join(tmpdir(), 'settle-proftpd-in-'));
      await mkdir(join(local, 'intake'));
      return {
        server,
        folder: join(local, 'intake'),
        local: join(local, 'intake'),
        log: join(server.dir, 'xfer.log'),
        flush: async () => undefined,
      };
    },
  },
] as const;

describe.each(SERVERS)('the transfer log of $kind', ({ start }) => {
  let setup: Awaited<ReturnType<(typeof SERVERS)[number]['start']>>;
  beforeAll(async () => {
    setup = await start();
  });
  afterAll(async () => setup?.server.destroy());

  it('accounts every upload: a renamed resend, an ignored neighbour, a rejected and a held file; a removed and an overwritten upload are unmatched (exit 1); a torn line is counted; the evidence pack re-verifies', async () => {
    const { server, folder, local } = setup;
    const own = await financeDatabase(); // its own: the audit must not see the other server's loads
    const ws = await Workspace.create(own.url);
    const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
    const a01 = sampleSettlement({ date: '2026-12-01', rows: 4, idPrefix: `TLA${server.kind}` }).text;
    const held = sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: `TLH${server.kind}` }).text;
    const bad = sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: `TLB${server.kind}` }).text.replace(/,(-?\d+\.\d\d),/, ',x,');
    const gone = sampleSettlement({ date: '2026-12-01', rows: 1, idPrefix: `TLC${server.kind}` }).text;
    const first = sampleSettlement({ date: '2026-12-01', rows: 1, idPrefix: `TLD${server.kind}` }).text;
    const second = sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: `TLE${server.kind}` }).text;
    for (const [name, text] of Object.entries({ a01, held, bad, gone, first, second, notes: 'see you tomorrow\n' })) {
      await writeFile(join(files, name), text);
    }
    const into = (name: string) => `${folder}/${name}`;
    await partnerSftp(server, [
      // the partner's uploader writes under a temporary name and renames when done
      `put ${join(files, 'a01')} ${into('settle_20261201_a01.csv.part')}`,
      `rename ${into('settle_20261201_a01.csv.part')} ${into('settle_20261201_a01.csv')}`,
      `put ${join(files, 'a01')} ${into('settle_20261201_a02.csv')}`,
      `put ${join(files, 'notes')} ${into('notes.txt')}`,
      `put ${join(files, 'bad')} ${into('settle_20261201_b01.csv')}`,
      `put ${join(files, 'held')} ${into('settle_20261201_h02.csv')}`,
      `put ${join(files, 'gone')} ${into('settle_20261201_c01.csv')}`,
      `rm ${into('settle_20261201_c01.csv')}`,
      `put ${join(files, 'first')} ${into('settle_20261201_d01.csv')}`,
      `put ${join(files, 'second')} ${into('settle_20261201_d01.csv')}`,
    ]);
    stageClaim(ws, 'settle_20261201_h01.csv', held, currentOwner()); // this test process is alive: the claim is live
    const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
    const intake = server.url(folder);
    const run = await ws.cli(['run', '--intake', intake, '--ledger', ws.ledger, '--stable-for', '0', ...access, '--json']);
    expect(JSON.parse(run.stdout)).toMatchObject({ loaded: 2, skipped: 1, held: 1, rejected: 1, ignored: 1 });
    expect((await readdir(local)).sort()).toEqual(['notes.txt', 'settle_20261201_h02.csv']);
    await setup.flush();

    const logs = await rotated(setup.log, 'transfer.log');
    const auditArgs = ['audit', '--intake', intake, '--ledger', ws.ledger, ...access, '--transfer-log', logs];
    const audit = await ws.cli([...auditArgs, '--json']);
    expect(audit.status, audit.stderr).toBe(1);
    const doc = JSON.parse(audit.stdout) as {
      transfer_log: { arrivals: Arrival[]; unmatched: number; unreadable_total: number; logs: { file: string; unreadable: number }[] };
    };
    const t = doc.transfer_log;
    const by = (name: string) => t.arrivals.filter((a) => a.name === name).map((a) => a.outcome ?? a.no_record);
    // OpenSSH logs the rename; xferlog has none, and the upload is taken under its final name
    expect(by('settle_20261201_a01.csv.part')).toEqual(server.kind === 'openssh' ? ['renamed_before_run'] : []);
    expect(by('settle_20261201_a01.csv')).toEqual(['loaded']);
    expect(by('settle_20261201_a02.csv')).toEqual(['skipped']);
    expect(t.arrivals.find((a) => a.name === 'settle_20261201_a02.csv')!.duplicate_of).toMatchObject({ name: 'settle_20261201_a01.csv' });
    expect(by('notes.txt')).toEqual(['ignored']);
    expect(by('settle_20261201_b01.csv')).toEqual(['rejected']);
    expect(by('settle_20261201_h02.csv')).toEqual(['held']);
    // the upload written over before any run read it, then the one that was loaded
    expect(by('settle_20261201_d01.csv')).toEqual(['overwritten', 'loaded']);
    expect(t.arrivals.find((a) => a.no_record === 'overwritten')!.size).toBe(Buffer.byteLength(first));
    const removed = t.arrivals.filter((a) => a.name === 'settle_20261201_c01.csv');
    expect(removed).toHaveLength(1);
    expect(removed[0]!.unmatched).toBe(true);
    expect(removed[0]!.no_record).toBe('removed_before_run');
    expect(t.unmatched).toBe(2);
    expect(t.logs.map((l) => l.file.replace(/.*\//, ''))).toEqual(['transfer.log.1.gz', 'transfer.log']);
    expect(t.unreadable_total).toBe(1);

    const text = await ws.cli(auditArgs);
    expect(text.stdout).toContain(`settle_20261201_c01.csv (${Buffer.byteLength(gone)} bytes`);
    expect(text.stdout).toMatch(/settle_20261201_d01\.csv .*UNMATCHED: overwritten by another upload/);
    // each unmatched upload named once, under its check; the transfer log's list has the accounted ones
    const textLines = text.stdout.split('\n');
    const check = textLines.indexOf('audit: every upload in the transfer log has a ledger outcome: 2 discrepancies');
    const unmatched = textLines.filter((l) => l.includes('UNMATCHED'));
    expect(unmatched).toHaveLength(2);
    expect(unmatched).toEqual(textLines.slice(check + 1, check + 3));
    expect(textLines.find((l) => l.startsWith('transfer log: ') && l.includes(' uploads into the intakes: '))).toMatch(
      /; unmatched=2 \(named above\)$/,
    );
    expect(textLines.filter((l) => /settle_20261201_d01\.csv .*: loaded by run /.test(l))).toHaveLength(1);
    expect(text.stdout).toContain('1 UNREADABLE');

    // the evidence pack: re-verified without the tool, and the same bytes from the same ledger
    const today = new Date().toISOString().slice(0, 10);
    const pack = (out: string) =>
      ws.cli([
        'report',
        'evidence',
        '--from',
        today,
        '--to',
        today,
        '--out',
        out,
        '--intake',
        intake,
        '--ledger',
        ws.ledger,
        ...access,
        '--transfer-log',
        logs,
        '--json',
      ]);
    const one = join(ws.root, 'evidence-1');
    const two = join(ws.root, 'evidence-2');
    const made = await pack(one);
    expect(made.status, await readFile(join(one, 'audit.txt'), 'utf8')).toBe(1); // the audit inside it found the two unmatched uploads, and the torn line that may hide a third
    expect(JSON.parse(await readFile(join(one, 'audit.json'), 'utf8')).discrepancies, await readFile(join(one, 'audit.txt'), 'utf8')).toBe(
      3,
    );
    expect(JSON.parse(made.stdout)).toMatchObject({
      loads: 2,
      audit_discrepancies: 3,
      manifest_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    await pack(two);
    const names = (await readdir(one)).sort();
    expect(names).toEqual(['MANIFEST', 'README.txt', 'SHA256SUMS.default', 'audit.json', 'audit.txt', 'events.csv', 'loads.csv']);
    expect((await readdir(two)).sort()).toEqual(names);
    // the audit inside is of the moment each pack was made (it says when): the period's files are the same bytes
    for (const name of names.filter((n) => !n.startsWith('audit.')))
      expect(await readFile(join(two, name)), name).toEqual(await readFile(join(one, name)));
    expect(execFileSync('sha256sum', ['-c', join(one, 'MANIFEST')], { cwd: one, encoding: 'utf8' })).not.toContain('FAILED');
    const archive = server.kind === 'openssh' ? join(server.dir, 'jail', 'archive') : join(local, '..', 'archive');
    const sums = execFileSync('sha256sum', ['-c', join(one, 'SHA256SUMS.default')], { cwd: archive, encoding: 'utf8' });
    expect(sums.trim().split('\n').sort()).toEqual(['settle_20261201_a01.csv: OK', 'settle_20261201_d01.csv: OK']);
    expect(await readFile(join(one, 'loads.csv'), 'utf8')).toContain(sha256(a01));
    // a pack never goes over another folder's files
    const again = await pack(one);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('is not empty');
    expect(await readFile(join(one, 'MANIFEST'))).toEqual(await readFile(join(two, 'MANIFEST')));
    await own.close();
  });
});
