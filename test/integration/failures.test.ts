import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/postgresServer.js';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { sharedFinanceDatabase, parseSummary, Workspace, ROWS_WITH_SOURCE } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function counts(prefix: string): Promise<{ rows: number; distinct: number; loads: number }> {
  const r = await db.client.query<{ rows: string; distinct: string; loads: string }>(
    `SELECT count(*) AS rows, count(DISTINCT transaction_id) AS distinct,
            (SELECT count(*) FROM settle.file_loads f WHERE f.sha256 IN
               (SELECT source_sha256 FROM ${ROWS_WITH_SOURCE} WHERE transaction_id LIKE $1)) AS loads
       FROM ${ROWS_WITH_SOURCE} WHERE transaction_id LIKE $1`,
    [`${prefix}-%`],
  );
  const x = r.rows[0]!;
  return { rows: Number(x.rows), distinct: Number(x.distinct), loads: Number(x.loads) };
}

const big = sampleSettlement({ date: '2026-07-01', rows: 300_000, idPrefix: 'BIG' });

describe('transient failures', () => {
  it('fails fast with one line when the database is down for the whole run, touching nothing, then loads when it is back', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260702_a01.csv', sampleSettlement({ date: '2026-07-02', rows: 10, idPrefix: 'DOWN' }).text);
    const down = await ws.run([], { DATABASE_URL: `postgres://postgres:x@127.0.0.1:${await freePort()}/finance` });
    expect(down.status).toBe(1);
    expect(down.stderr.trim().split('\n')).toEqual([expect.stringMatching(/finance database .* is unreachable: connect ECONNREFUSED/)]);
    expect(await ws.files('intake')).toEqual(['settle_20260702_a01.csv']);
    expect(ws.ledgerFiles()).toEqual([]); // nothing hashed, nothing claimed

    const back = await ws.run();
    expect(parseSummary(back.stdout)).toMatchObject({ loaded: 1, rows: 10 });
  });

  it('commits nothing when the database connection dies in the middle of a COPY, and the next run loads the file', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260701_a01.csv', big.text);
    const run = finished(ws.startRun());
    let killed = false;
    for (let i = 0; i < 3000 && !killed; i++) {
      const r = await db.client.query(
        `SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity
          WHERE application_name = 'settle-ingest' AND datname = current_database() AND state = 'active' AND query LIKE 'COPY%'`,
      );
      killed = r.rows.some((x) => x.t === true);
      if (!killed) await sleep(10);
    }
    expect(killed).toBe(true);
    const r = await run;
    expect(r.status).toBe(1);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 0, failed: 1, rows: 0 });
    expect(r.stdout).toMatch(/stopped: .*\(stopped early: finance database connection lost/);
    expect(await counts('BIG')).toEqual({ rows: 0, distinct: 0, loads: 0 });
    expect(await ws.files('intake')).toEqual(['settle_20260701_a01.csv']);
    expect(ws.ledgerFile('settle_20260701_a01.csv')?.state).toBe('failed');
    expect(ws.events().map((e) => e.event)).toEqual(expect.arrayContaining(['claimed', 'failed', 'released']));

    const next = await ws.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 300_000 });
    expect(await counts('BIG')).toEqual({ rows: 300_000, distinct: 300_000, loads: 1 });
  });
});

describe('SIGKILL at moments chosen at random during a 300,000-row load', () => {
  it('ends, after one clean run, with every row exactly once', async () => {
    await db.client.query(`DELETE FROM settle.settlement_rows WHERE transaction_id LIKE 'BIG-%'`);
    await db.client.query(
      `DELETE FROM settle.loads WHERE sha256 IN (SELECT sha256 FROM settle.file_loads WHERE file_name = 'settle_20260701_a01.csv')`,
    );
    await db.client.query(`DELETE FROM settle.file_loads WHERE file_name = 'settle_20260701_a01.csv'`);
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260701_a01.csv', big.text);
    let seed = 20260701;
    const random = () => ((seed = (Math.imul(seed, 48271) + 11) >>> 0) % 1000) / 1000;
    // the file goes out in about 130 batches of 256 KiB: each attempt dies as one of its first 80 is
    // sent (SETTLE_TEST_FAULT=copy-batch@N, src/faults.ts), wherever the machine's load puts that in time
    const batches: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      batches.push(1 + Math.floor(random() * 80));
      const killed = await ws.run([], { SETTLE_TEST_FAULT: `copy-batch@${batches.at(-1)}` });
      expect({ attempt, batch: batches.at(-1), signal: killed.signal }).toEqual({ attempt, batch: batches.at(-1), signal: 'SIGKILL' });
      expect(await counts('BIG')).toEqual({ rows: 0, distinct: 0, loads: 0 });
    }
    expect(new Set(batches).size).toBeGreaterThan(1); // moments apart, not one moment four times
    // every attempt claimed before it was killed, and each later run settled the claim it found
    expect(ws.events().filter((e) => e.event === 'claimed').length).toBe(4);
    const clean = await ws.run();
    expect(clean.stderr).not.toMatch(/"event":"failed"/);
    expect(await counts('BIG')).toEqual({ rows: 300_000, distinct: 300_000, loads: 1 });
    expect(await ws.files('archive')).toEqual(['settle_20260701_a01.csv']);
    expect(await ws.files('intake')).toEqual([]);
    expect(ws.ledgerFiles().map((f) => f.state)).toEqual(['loaded']);
    expect(ws.events().filter((e) => e.event === 'skipped')).toEqual([]);
  });
});

/** Root may mount; elsewhere these cases cannot be staged and are reported as skipped. */
const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0;

describe('a full staging disk', () => {
  it.runIf(canMount)('fails the file without claiming it, leaves it in intake, and the next run loads it', async () => {
    const ws = await Workspace.create(db.url);
    const tiny = await mkdtemp(join(tmpdir(), 'settle-tiny-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', tiny]);
    try {
      await ws.put('settle_20260706_a01.csv', sampleSettlement({ date: '2026-07-06', rows: 3000, idPrefix: 'FULL' }).text);
      const r = await ws.run(['--staging', tiny, '--json']);
      expect(r.status).toBe(1);
      const j = JSON.parse(r.stdout);
      expect(j).toMatchObject({ loaded: 0, failed: 1 });
      expect(j.files[0].error).toMatch(/staging failed: .*ENOSPC/);
      expect(ws.ledgerFiles()).toEqual([]); // never claimed
      expect(await ws.files('intake')).toEqual(['settle_20260706_a01.csv']);
    } finally {
      execFileSync('umount', [tiny]);
    }
    const next = await ws.run();
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 3000 });
  });
});

describe('the hash worker of a large local file', () => {
  it('fails the file when its thread dies mid-file, keeps no staged copy, and the next run loads it', async () => {
    const ws = await Workspace.create(db.url);
    // over 64 MiB (HASH_WORKER_FROM_BYTES): hashed on the worker thread
    const large = sampleSettlement({ date: '2026-07-07', rows: 1_000_000, idPrefix: 'HASHW' });
    expect(Buffer.byteLength(large.text)).toBeGreaterThan(64 * 1024 * 1024);
    await ws.put('settle_20260707_a01.csv', large.text);
    const staging = await mkdtemp(join(tmpdir(), 'settle-staging-'));
    const r = await ws.run(['--staging', staging, '--json'], { SETTLE_TEST_FAULT: 'fail:mid-hash' });
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 0, failed: 1 });
    expect(j.files[0].error).toMatch(
      /staging failed: the SHA-256 worker thread .*before the file was hashed|staging failed: the SHA-256 worker thread was stopped/,
    );
    expect(ws.ledgerFiles()).toEqual([]); // never claimed
    expect(await ws.files('intake')).toEqual(['settle_20260707_a01.csv']);
    expect(await readdir(staging)).toEqual([]);
    const next = await ws.run(['--staging', staging]);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 1_000_000 });
  });
});

describe('the SQLite ledger', () => {
  it.runIf(canMount)('says in one line that the ledger cannot be written (exit 2), touching nothing', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260707_a01.csv', sampleSettlement({ date: '2026-07-07', rows: 5, idPrefix: 'RO' }).text);
    const ledgerDir = await mkdtemp(join(tmpdir(), 'settle-ro-'));
    const ledger = join(ledgerDir, 'ledger.sqlite');
    const migrated = await ws.cli(['migrate', '--ledger', ledger]);
    expect(migrated.status).toBe(0);
    execFileSync('mount', ['--bind', ledgerDir, ledgerDir]);
    execFileSync('mount', ['-o', 'remount,ro,bind', ledgerDir]);
    try {
      const r = await ws.run(['--ledger', ledger]);
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/ledger .* cannot be opened for writing/)]);
      expect(await ws.files('intake')).toEqual(['settle_20260707_a01.csv']);
    } finally {
      execFileSync('umount', [ledgerDir]);
    }
    expect(await counts('RO')).toEqual({ rows: 0, distinct: 0, loads: 0 });
  });

  it('says in one line that a file is not a ledger (exit 2), touching nothing', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    await writeFile(ws.ledger, 'this is a spreadsheet, not a ledger\n'.repeat(200));
    await ws.put('settle_20260703_a01.csv', 'x');
    const r = await ws.run();
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/ledger .* is not a SQLite ledger/)]);
    expect(await ws.files('intake')).toEqual(['settle_20260703_a01.csv']);
  });

  it('says in one line that the ledger is locked past the timeout (exit 1), file left in intake', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260704_a01.csv', sampleSettlement({ date: '2026-07-04', rows: 5, idPrefix: 'LOCK' }).text);
    const holder = new Database(ws.ledger);
    holder.prepare('BEGIN EXCLUSIVE').run();
    try {
      const r = await ws.run(['--ledger-timeout', '1']);
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/ledger .* is locked by another process \(waited 1s\)/)]);
      expect(await ws.files('intake')).toEqual(['settle_20260704_a01.csv']);
    } finally {
      holder.prepare('ROLLBACK').run();
      holder.close();
    }
    expect(await counts('LOCK')).toEqual({ rows: 0, distinct: 0, loads: 0 });
  });
});

describe('moving across filesystems', () => {
  it('archives onto another filesystem, and a kill half-way through the move leaves one copy, not two', async () => {
    const ws = await Workspace.create(db.url);
    const elsewhere = await mkdtemp('/dev/shm/settle-archive-'); // tmpfs: another filesystem than the intake
    const f = sampleSettlement({ date: '2026-07-05', rows: 40, idPrefix: 'XDEV' }).text;
    await ws.put('settle_20260705_a01.csv', f);
    const killed = await ws.run(['--archive', elsewhere], { SETTLE_TEST_FAULT: 'mid-move' });
    expect(killed.signal).toBe('SIGKILL');
    const again = await ws.run(['--archive', elsewhere]);
    expect(again.status).toBe(0);
    expect(await readdir(elsewhere)).toEqual(['settle_20260705_a01.csv']); // no second copy, no hidden temporary
    expect(await ws.files('intake')).toEqual([]);
    const { readFile } = await import('node:fs/promises');
    expect((await readFile(join(elsewhere, 'settle_20260705_a01.csv'))).toString()).toBe(f);
    expect(await counts('XDEV')).toEqual({ rows: 40, distinct: 40, loads: 1 });
  });
});
