import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd, partnerSftp } from '../support/loggingSshd.js';
import { TestProftpd } from '../support/proftpd.js';
import { financeDatabase, parseSummary, Workspace } from '../support/workspace.js';

/**
 * When the audit may say "clean": only when every upload the server logged reached an outcome
 * that accounts for its bytes, and every loaded file's archived copy (every skipped duplicate's and
 * rejected file's kept copy) is where the ledger put it.
 */

interface Arrival {
  name: string;
  outcome: string | null;
  no_record: string | null;
  after_waiting: string | null;
  unmatched: boolean;
  message: string;
}

interface AuditJson {
  discrepancies: number;
  archive_check: string;
  checks: { name: string; discrepancies: { kind: string; file: string | null; run: string | null; message: string }[] }[];
  transfer_log: { arrivals: Arrival[]; unmatched: number } | null;
}

const kindsOf = (doc: AuditJson) => doc.checks.flatMap((c) => c.discrepancies.map((d) => [d.kind, d.file]));

/** Another session holds the rows table in ACCESS EXCLUSIVE mode while `fn` runs: a load waits past --db-timeout and fails. */
async function withTableLocked<T>(client: pg.Client, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  await client.query('LOCK TABLE settle.settlement_rows IN ACCESS EXCLUSIVE MODE');
  try {
    return await fn();
  } finally {
    await client.query('ROLLBACK');
  }
}

/**
 * The servers' logs keep whole seconds: what the partner does after a run must be logged in a
 * later second than the run's records, or the log cannot say whether it came before or after.
 */
async function untilTheNextLoggedSecond(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 10);
}

/** Each test's intake and archive on the server: `folder` as the server's paths name the intake. */
async function intakeOn(local: string, server: string): Promise<string> {
  await mkdir(join(local, 'intake'), { recursive: true, mode: 0o755 });
  await mkdir(join(local, 'archive'), { mode: 0o755 }); // the audit reads it before any file was loaded
  return `${server}/intake`;
}

const SERVERS = [
  {
    kind: 'OpenSSH internal-sftp -l INFO through rsyslogd',
    start: async () => {
      const server = await TestLoggingSshd.start();
      const folder = (test: string) => intakeOn(join(server.jail, test), `/${test}`);
      const local = (test: string) => join(server.jail, test);
      return { server, folder, local, log: server.logFile, flush: () => server.flushLog() };
    },
  },
  {
    kind: 'ProFTPD mod_sftp TransferLog (xferlog)',
    start: async () => {
      const server = await TestProftpd.start();
      const local = await mkdtemp(join(tmpdir(), 'settle-proftpd-in-'));
      const folder = (test: string) => intakeOn(join(local, test), join(local, test));
      return {
        server,
        folder,
        local: (test: string) => join(local, test),
        log: join(server.dir, 'xfer.log'),
        flush: async () => undefined,
      };
    },
  },
] as const;

describe.each(SERVERS)('audit --transfer-log with $kind', ({ start }) => {
  let setup: Awaited<ReturnType<(typeof SERVERS)[number]['start']>>;
  beforeAll(async () => {
    setup = await start();
  });
  afterAll(async () => setup?.server.destroy());

  it('is never clean for an upload a run failed and that was then removed, or one left not ready and then overwritten at the same size; an upload still waiting in the intake is accounted', async () => {
    const { server } = setup;
    const folder = await setup.folder('lost');
    const own = await financeDatabase(); // its own: the lock and the audit must not meet the other tests' loads
    const ws = await Workspace.create(own.url);
    const config = join(ws.root, 'config.json');
    await writeFile(config, JSON.stringify({ readyMarker: '.done' }));
    const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
    const sample = (prefix: string) => sampleSettlement({ date: '2026-12-03', rows: 3, idPrefix: `${prefix}${server.kind}` }).text;
    const first = sample('AVN');
    // the same length, other bytes: a re-upload at the same size
    const second = first.replaceAll('AVN', 'AVM');
    expect(Buffer.byteLength(second)).toBe(Buffer.byteLength(first));
    for (const [name, text] of Object.entries({ f01: sample('AVF'), f02: sample('AVG'), first, second, done: '' })) {
      await writeFile(join(files, name), text);
    }
    const into = (name: string) => `${folder}/${name}`;
    await partnerSftp(server, [
      `put ${join(files, 'f01')} ${into('settle_20261203_f01.csv')}`,
      `put ${join(files, 'done')} ${into('settle_20261203_f01.csv.done')}`,
      `put ${join(files, 'f02')} ${into('settle_20261203_f02.csv')}`,
      `put ${join(files, 'done')} ${into('settle_20261203_f02.csv.done')}`,
      // its ready marker never comes: not ready
      `put ${join(files, 'first')} ${into('settle_20261203_n01.csv')}`,
    ]);
    const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
    const intake = server.url(folder);
    const run = () =>
      withTableLocked(own.client, () =>
        ws.cli(['run', '--config', config, '--intake', intake, '--ledger', ws.ledger, '--stable-for', '0', '--db-timeout', '1', ...access]),
      );
    const night = await run();
    expect(night.status).toBe(1);
    expect(parseSummary(night.stdout)).toMatchObject({ loaded: 0, failed: 2, not_ready: 1 });
    const failedBy = parseSummary(night.stdout).run;

    await untilTheNextLoggedSecond();
    await partnerSftp(server, [
      `rm ${into('settle_20261203_f01.csv')}`,
      `rm ${into('settle_20261203_f01.csv.done')}`,
      `put ${join(files, 'second')} ${into('settle_20261203_n01.csv')}`,
    ]);
    const again = await run(); // the lock again: f02 fails once more, n01's new upload is not ready either
    expect(parseSummary(again.stdout)).toMatchObject({ loaded: 0, failed: 1, not_ready: 1 });
    await setup.flush();

    // the log's whole seconds are placed above; no slack is needed, and none lets a record stray to a neighbour
    const auditArgs = ['audit', '--config', config, '--intake', intake, '--ledger', ws.ledger, ...access, '--transfer-log', setup.log];
    const audit = await ws.cli([...auditArgs, '--transfer-log-clock-slack', '0', '--json']);
    expect(audit.status, audit.stdout).toBe(1);
    const doc = JSON.parse(audit.stdout) as AuditJson;
    const arrivals = doc.transfer_log!.arrivals;
    const of = (name: string) => arrivals.filter((a) => a.name === name);
    const f01 = of('settle_20261203_f01.csv');
    expect(f01).toHaveLength(1);
    expect(f01[0]).toMatchObject({ outcome: 'failed', unmatched: true });
    // OpenSSH logs the removal; ProFTPD's TransferLog may not, and the intake as it is now shows it gone
    expect(['removed', 'not_in_intake']).toContain(f01[0]!.after_waiting);
    expect(f01[0]!.message).toContain(`failed by run ${failedBy}`);
    expect(of('settle_20261203_f02.csv')).toEqual([
      expect.objectContaining({ outcome: 'failed', after_waiting: 'still_in_intake', unmatched: false }),
    ]);
    expect(of('settle_20261203_n01.csv')).toEqual([
      expect.objectContaining({ outcome: 'not_ready', after_waiting: 'overwritten', unmatched: true }),
      expect.objectContaining({ outcome: 'not_ready', after_waiting: 'still_in_intake', unmatched: false }),
    ]);
    expect(of('settle_20261203_n01.csv')[0]!.message).toContain(`not ready by run ${failedBy}`);
    expect(doc.transfer_log!.unmatched).toBe(2);
    expect(kindsOf(doc)).toEqual([
      ['upload_gone_after_outcome', 'settle_20261203_f01.csv'],
      ['upload_gone_after_outcome', 'settle_20261203_n01.csv'],
    ]);
    expect(doc.discrepancies).toBe(2);

    const text = await ws.cli([...auditArgs, '--transfer-log-clock-slack', '0']);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/settle_20261203_n01\.csv .*: not ready by run \S+: UNMATCHED: then overwritten/);
    expect(text.stdout).toMatch(/audit found problems: 9 checks, 2 discrepancies/);
    await own.close();
  });

  it('reads duplicates/ and rejected/ on the server: none made yet is no discrepancy, a rejected file removed there is one', async () => {
    const { server } = setup;
    const folder = await setup.folder('kept');
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
    const good = sampleSettlement({ date: '2026-12-07', rows: 2, idPrefix: `AVR${server.kind}` }).text;
    await writeFile(join(files, 'good'), good);
    await writeFile(join(files, 'bad'), good.replaceAll('AVR', 'AVB').replace(/,(-?\d+)\.(\d\d),/, ',$1.$2O,'));
    const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
    const intake = server.url(folder);
    const run = () => ws.cli(['run', '--intake', intake, '--ledger', ws.ledger, '--stable-for', '0', ...access]);
    const audit = async () => {
      const r = await ws.cli(['audit', '--intake', intake, '--ledger', ws.ledger, ...access, '--json']);
      return { status: r.status, stdout: r.stdout, doc: JSON.parse(r.stdout) as AuditJson };
    };
    await partnerSftp(server, [`put ${join(files, 'good')} ${folder}/settle_20261207_a01.csv`]);
    expect(parseSummary((await run()).stdout)).toMatchObject({ loaded: 1 });
    const before = await audit(); // nothing skipped or rejected: neither folder is on the server yet
    expect(before.status, before.stdout).toBe(0);

    await partnerSftp(server, [
      `put ${join(files, 'good')} ${folder}/settle_20261207_a02.csv`,
      `put ${join(files, 'bad')} ${folder}/settle_20261207_r01.csv`,
    ]);
    expect(parseSummary((await run()).stdout)).toMatchObject({ loaded: 0, skipped: 1, rejected: 1 });
    const kept = await audit();
    expect(kept.status, kept.stdout).toBe(0);

    await rm(join(setup.local('kept'), 'rejected', 'settle_20261207_r01.csv'));
    const removed = await audit();
    expect(removed.status, removed.stdout).toBe(1);
    expect(kindsOf(removed.doc)).toEqual([['rejected_copy_missing', 'settle_20261207_r01.csv']]);
    await own.close();
  });

  // the ledger's events are read in one query, written once for both stores
  it.each(['sqlite', 'postgres'] as const)(
    'a run whose clock is 10 s behind the server: the skew is named from its own move (exit 1); with --transfer-log-clock-slack 15s, clean (%s ledger)',
    async (store) => {
      const { server } = setup;
      const folder = await setup.folder(`skew-${store}`);
      const own = await financeDatabase();
      const ws = await Workspace.create(own.url, { ledger: store });
      const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
      await writeFile(join(files, 'k01'), sampleSettlement({ date: '2026-12-04', rows: 2, idPrefix: `AVK${server.kind}` }).text);
      await partnerSftp(server, [`put ${join(files, 'k01')} ${folder}/settle_20261204_k01.csv`]);
      const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
      const intake = server.url(folder);
      // the host that runs settle-ingest keeps a clock 10 s behind the SFTP server's
      const skewed = { SETTLE_TEST_NOW: new Date(Date.now() - 10_000).toISOString() };
      const night = await ws.cli(['run', '--intake', intake, '--ledger', ws.ledger, '--stable-for', '0', ...access], skewed);
      expect(parseSummary(night.stdout)).toMatchObject({ loaded: 1 });
      await setup.flush();
      const audit = (slack: string[]) =>
        ws.cli(['audit', '--intake', intake, '--ledger', ws.ledger, ...access, '--transfer-log', setup.log, ...slack, '--json']);
      const k01 = (doc: AuditJson) => doc.transfer_log!.arrivals.find((a) => a.name === 'settle_20261204_k01.csv')!;

      const strict = await audit([]);
      expect(strict.status).toBe(1);
      const strictDoc = JSON.parse(strict.stdout) as AuditJson & {
        transfer_log: { clock_offsets: { kind: string; offset_seconds: number }[] };
      };
      if (server.kind === 'openssh') {
        // the run's own move, logged ~10 s after the ledger has it, shows the skew: the upload is matched at it, the skew is the discrepancy
        expect(k01(strictDoc)).toMatchObject({ outcome: 'loaded', unmatched: false });
        expect(strictDoc.transfer_log.clock_offsets).toEqual([expect.objectContaining({ kind: 'skew' })]);
        expect(strictDoc.transfer_log.clock_offsets[0]!.offset_seconds).toBeGreaterThanOrEqual(8); // 10 s, less the fraction of a second syslog drops
        expect(kindsOf(strictDoc)).toEqual([['transfer_log_clock_offset', setup.log]]);
        expect(strictDoc.checks.flatMap((c) => c.discrepancies)[0]!.message).toContain('--transfer-log-clock-slack to at least');
      } else {
        // xferlog logs no renames: no move of a run to learn the skew from
        expect(k01(strictDoc)).toMatchObject({ outcome: null, unmatched: true });
      }
      const slack = await audit(['--transfer-log-clock-slack', '15s']);
      const doc = JSON.parse(slack.stdout) as AuditJson;
      expect(k01(doc)).toMatchObject({ outcome: 'loaded', unmatched: false });
      expect(slack.status, slack.stdout).toBe(0);
      await own.close();
    },
  );
});

describe("audit of the loaded files' archived copies", () => {
  /** Two loaded files of the same size (other bytes), as an ordinary night leaves them. */
  async function twoLoaded() {
    const own = await financeDatabase(); // the audit reads the whole finance database
    const ws = await Workspace.create(own.url);
    const a = sampleSettlement({ date: '2026-12-05', rows: 3, idPrefix: 'ARCA' }).text;
    const b = a.replaceAll('ARCA', 'ARCB');
    await ws.put('settle_20261205_a01.csv', a);
    await ws.put('settle_20261205_b01.csv', b);
    const night = await ws.run();
    expect(parseSummary(night.stdout)).toMatchObject({ loaded: 2 });
    const audit = (extra: string[] = []) => ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger, ...extra, '--json']);
    const clean = await audit();
    expect(clean.status, clean.stdout).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ discrepancies: 0, archive_check: 'sha256' });
    return { own, ws, audit };
  }

  it('finds an archived copy deleted (exit 1), also with --quick, and in the evidence pack', async () => {
    const { own, ws, audit } = await twoLoaded();
    await rm(join(ws.archive, 'settle_20261205_a01.csv'));
    for (const extra of [[], ['--quick']]) {
      const r = await audit(extra);
      expect(r.status, r.stdout).toBe(1);
      expect(kindsOf(JSON.parse(r.stdout))).toEqual([['archive_copy_missing', 'settle_20261205_a01.csv']]);
    }
    const today = new Date().toISOString().slice(0, 10);
    const out = join(ws.root, 'evidence');
    const pack = await ws.cli([
      'report',
      'evidence',
      '--from',
      today,
      '--to',
      today,
      '--out',
      out,
      '--intake',
      ws.intake,
      '--ledger',
      ws.ledger,
      '--json',
    ]);
    expect(pack.status).toBe(1);
    expect(JSON.parse(pack.stdout)).toMatchObject({ audit_discrepancies: 1 });
    await own.close();
  });

  it('finds an archived copy replaced by a copy of another archived file, naming both; --quick checks the size only and says so', async () => {
    const { own, ws, audit } = await twoLoaded();
    await copyFile(join(ws.archive, 'settle_20261205_b01.csv'), join(ws.archive, 'settle_20261205_a01.csv'));
    const r = await audit();
    expect(r.status, r.stdout).toBe(1);
    const doc = JSON.parse(r.stdout) as AuditJson;
    expect(kindsOf(doc)).toEqual([['archive_copy_differs', 'settle_20261205_a01.csv']]);
    expect(doc.checks.flatMap((c) => c.discrepancies)[0]!.message).toContain('a copy of settle_20261205_b01.csv');

    // the same size: a check by size alone cannot see it, and says what it did not check
    const quick = await audit(['--quick']);
    expect(quick.status).toBe(0);
    expect(JSON.parse(quick.stdout)).toMatchObject({ discrepancies: 0, archive_check: 'size' });
    const text = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--quick']);
    expect(text.stdout).toMatch(/kept copy, is where the ledger put it, of its size \(--quick: SHA-256 not checked\): ok/);
    expect(text.stdout).toMatch(
      /audit clean: 6 checks, 0 discrepancies \(archived and kept copies checked by size only, not SHA-256: --quick\)/,
    );
    await own.close();
  });
});

describe("audit of the skipped duplicates' and rejected files' kept copies", () => {
  /** A loaded file, a copy of it under another name (skipped to duplicates/) and a file with a bad amount (to rejected/). */
  async function oneOfEach() {
    const own = await financeDatabase(); // the audit reads the whole finance database
    const ws = await Workspace.create(own.url);
    const good = sampleSettlement({ date: '2026-12-06', rows: 3, idPrefix: 'KEPT' }).text;
    await ws.put('settle_20261206_a01.csv', good);
    await ws.put('settle_20261206_a02.csv', good);
    await ws.put('settle_20261206_r01.csv', good.replaceAll('KEPT', 'KEPR').replace(/,(-?\d+)\.(\d\d),/, ',$1.$2O,'));
    const night = await ws.run();
    expect(parseSummary(night.stdout)).toMatchObject({ loaded: 1, skipped: 1, rejected: 1 });
    expect(await ws.files('duplicates')).toEqual(['settle_20261206_a02.csv']);
    expect(await ws.files('rejected')).toEqual(['settle_20261206_r01.csv']);
    const audit = (extra: string[] = []) => ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger, ...extra, '--json']);
    const clean = await audit();
    expect(clean.status, clean.stdout).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ discrepancies: 0 });
    return { own, ws, audit };
  }

  it('finds a rejected file deleted from rejected/ (exit 1, naming it), also with --quick', async () => {
    const { own, ws, audit } = await oneOfEach();
    await rm(join(ws.rejected, 'settle_20261206_r01.csv'));
    for (const extra of [[], ['--quick']]) {
      const r = await audit(extra);
      expect(r.status, r.stdout).toBe(1);
      const doc = JSON.parse(r.stdout) as AuditJson;
      expect(kindsOf(doc)).toEqual([['rejected_copy_missing', 'settle_20261206_r01.csv']]);
      expect(doc.checks.flatMap((c) => c.discrepancies)[0]!.message).toContain(join(ws.rejected, 'settle_20261206_r01.csv'));
    }
    await own.close();
  });

  it('finds a skipped duplicate deleted from duplicates/, and a rejected file cut short (exit 1)', async () => {
    const { own, ws, audit } = await oneOfEach();
    await rm(join(ws.duplicates, 'settle_20261206_a02.csv'));
    await writeFile(join(ws.rejected, 'settle_20261206_r01.csv'), 'cut');
    const r = await audit();
    expect(r.status, r.stdout).toBe(1);
    expect(kindsOf(JSON.parse(r.stdout))).toEqual([
      ['duplicate_copy_missing', 'settle_20261206_a02.csv'],
      ['rejected_copy_differs', 'settle_20261206_r01.csv'],
    ]);
    await own.close();
  });
});
