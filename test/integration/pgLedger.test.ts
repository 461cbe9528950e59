import pg from 'pg';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { openPgLedger } from '../../src/ledger/pgLedger.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { claim, claimSemantics, SHA_A, withTwoRuns } from '../support/claimScenarios.js';
import { finished } from '../support/cli.js';
import { expectCleanSplit, financeDatabase, parseSummary, Workspace, type FinanceDatabase } from '../support/workspace.js';

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((o) => o.close()));
});

/** A database of its own (finance schema migrated) and a PostgreSQL ledger in it. */
async function freshDatabase(): Promise<FinanceDatabase> {
  const db = await financeDatabase();
  opened.push(db);
  return db;
}

async function freshLedger(): Promise<Ledger> {
  const ledger = await openPgLedger((await freshDatabase()).url, { create: true });
  opened.push(ledger);
  await withTwoRuns(ledger);
  return ledger;
}

claimSemantics('PostgreSQL', freshLedger);

describe('the PostgreSQL ledger', () => {
  it('keeps ledger_events append-only', async () => {
    const db = await freshDatabase();
    const l = await openPgLedger(db.url, { create: true });
    opened.push(l);
    await withTwoRuns(l);
    await claim(l, 'settle_a01.csv', SHA_A);
    await expect(db.client.query(`UPDATE settle_ledger.ledger_events SET event = 'loaded'`)).rejects.toThrow('append-only');
    await expect(db.client.query('DELETE FROM settle_ledger.ledger_events')).rejects.toThrow('append-only');
  });

  it('gives the claim to exactly one of eight processes claiming the same content under different names at once', async () => {
    const db = await freshDatabase();
    await (await openPgLedger(db.url, { create: true })).close();
    const moduleUrl = pathToFileURL(join(process.cwd(), 'dist/ledger/pgLedger.js')).href;
    const script = `
      const { openPgLedger } = await import(${JSON.stringify(moduleUrl)});
      const l = await openPgLedger(process.argv[1], { create: false });
      const i = process.argv[2];
      await l.startRun({ mode: 'manual', host: 'h', pid: process.pid }, () => 'p' + i);
      const won = await l.claim({ name: 'settle_a0' + i + '.csv', sha256: '${SHA_A}', size: 1, arrival: '1:1', runId: 'p' + i,
        owner: { host: 'h', pid: process.pid, startedAt: 'x' }, leaseSeconds: 60 });
      await l.close();
      process.stdout.write(won === true ? 'won' : won === false ? 'lost' : 'neither');`;
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => finished(spawn(process.execPath, ['--input-type=module', '-e', script, db.url, String(i)]))),
    );
    expect(outcomes.map((o) => o.stderr)).toEqual(Array(8).fill(''));
    expect(outcomes.filter((o) => o.stdout === 'won')).toHaveLength(1);
    expect(outcomes.filter((o) => o.stdout === 'lost')).toHaveLength(7);
  });
});

describe('runs sharing a PostgreSQL ledger', () => {
  async function sharedLedgerWorkspace() {
    const db = await freshDatabase();
    const ws = await Workspace.create(db.url, { migrate: false, ledger: 'postgres' });
    const migrated = await ws.cli(['migrate', '--ledger', db.url]);
    expect(migrated.status).toBe(0);
    expect(migrated.stdout).not.toContain('settle-ingest-local'); // the password stays out of the output
    const args = (extra: string[] = []) => ['run', '--intake', ws.intake, '--ledger', db.url, '--stable-for', '0', ...extra];
    return { db, ws, args };
  }

  it('gives up on a ledger locked by another session after --ledger-timeout: exit 1, one line, the file left in the intake', async () => {
    const { db, ws, args } = await sharedLedgerWorkspace();
    await ws.put('settle_20261021_a01.csv', sampleSettlement({ date: '2026-10-21', rows: 3, idPrefix: 'PGLOCK' }).text);
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE settle_ledger.processed_files IN ACCESS EXCLUSIVE MODE');
      const r = await ws.cli(args(['--ledger-timeout', '1']));
      expect(r.status).toBe(1);
      // the run's own log lines go to stderr (no --log-file); its error is one line, the last
      expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^settle-ingest: ledger .*lock timeout$/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(await ws.files('intake')).toEqual(['settle_20261021_a01.csv']);
    expect(parseSummary((await ws.cli(args())).stdout)).toMatchObject({ loaded: 1, rows: 3 });
  });

  it('replays the incident night; reports and audit read the same ledger', async () => {
    const { db, ws, args } = await sharedLedgerWorkspace();
    const a01 = sampleSettlement({ date: '2026-10-20', rows: 1240, idPrefix: 'PGL' }).text;
    await ws.put('settle_20261020_a01.csv', a01);
    const first = parseSummary((await ws.cli(args())).stdout);
    expect(first).toMatchObject({ loaded: 1, rows: 1240 });
    await ws.put('settle_20261020_a02.csv', a01);
    const second = JSON.parse((await ws.cli(args(['--json']))).stdout);
    expect(second).toMatchObject({ loaded: 0, skipped: 1 });
    expect(second.files[0].duplicate_of).toMatchObject({ name: 'settle_20261020_a01.csv', run: first.run });
    expect(parseSummary((await ws.cli(args())).stdout)).toMatchObject({ loaded: 0, skipped: 0 });

    const states = await db.client.query('SELECT name, state FROM settle_ledger.processed_files ORDER BY id');
    expect(states.rows).toEqual([
      { name: 'settle_20261020_a01.csv', state: 'loaded' },
      { name: 'settle_20261020_a02.csv', state: 'duplicate' },
    ]);
    const runs = JSON.parse((await ws.cli(['report', 'runs', '--ledger', db.url, '--json'])).stdout).runs;
    expect(runs).toHaveLength(3);
    const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', db.url]);
    expect(audit.stdout).toMatch(/audit clean/);
    expect(audit.status).toBe(0);
  });

  it('holds a twin of another host’s live claim, and takes over that host’s claim only once its lease has passed', async () => {
    const { db, ws, args } = await sharedLedgerWorkspace();
    const text = sampleSettlement({ date: '2026-10-21', rows: 25, idPrefix: 'HOST' }).text;
    const { createHash } = await import('node:crypto');
    const sha = createHash('sha256').update(text).digest('hex');
    const stage = async (leaseUntil: Date) => {
      const at = new Date().toISOString();
      await db.client.query(
        `INSERT INTO settle_ledger.runs (run_id, mode, host, pid, started_at) VALUES ('r-b', 'scheduled', 'host-b', 4242, $1) ON CONFLICT DO NOTHING`,
        [at],
      );
      await db.client.query(
        `INSERT INTO settle_ledger.processed_files (name, sha256, state, run_id, size, owner_host, owner_pid, owner_started_at, lease_until, first_seen_at, updated_at)
         VALUES ('settle_20261021_a01.csv', $1, 'claimed', 'r-b', 1, 'host-b', 4242, '1', $2, $3, $3)
         ON CONFLICT (name, sha256) DO UPDATE SET lease_until = excluded.lease_until, state = 'claimed'`,
        [sha, leaseUntil.toISOString(), at],
      );
    };
    await stage(new Date(Date.now() + 3600_000)); // host-b is loading a01 and its lease is good
    await ws.put('settle_20261021_a02.csv', text);
    const held = await ws.cli(args());
    expect(held.status).toBe(0);
    expect(parseSummary(held.stdout)).toMatchObject({ loaded: 0, held: 1 });
    expect(await ws.files('intake')).toEqual(['settle_20261021_a02.csv']);

    await stage(new Date(Date.now() - 1000)); // host-b went quiet: its lease ran out
    const taken = await ws.cli(args());
    expect(taken.status).toBe(1); // a stale claim is worth a look
    expect(parseSummary(taken.stdout)).toMatchObject({ loaded: 1, held: 0, rows: 25 });
    const expired = await db.client.query(`SELECT details->>'claimRun' AS run FROM settle_ledger.ledger_events WHERE event = 'expired'`);
    expect(expired.rows).toEqual([{ run: 'r-b' }]);
  });

  it('two runs started together on one partner: one works it under its lease, each file once', async () => {
    // with partner leases a second run on a shared ledger skips a partner another run works (or,
    // started after the first ended, finds nothing left); the race between two runs' claims is
    // placed in test/integration/crashes.test.ts and proved by ledgerClaim and partnerLeases tests
    const { db, ws, args } = await sharedLedgerWorkspace();
    const texts: string[] = [];
    for (let i = 0; i < 10; i++) {
      texts.push(sampleSettlement({ date: '2026-10-22', rows: 500, idPrefix: `PGPAR${i}` }).text);
      await ws.put(`settle_20261022_f${i}.csv`, texts[i]!);
    }
    await ws.put('settle_20261022_f3_retry.csv', texts[3]!);
    await ws.put('settle_20261022_f7_retry.csv', texts[7]!);
    const env = { DATABASE_URL: db.url };
    const [a, b] = await Promise.all([finished(ws.startRunWith(args(['--json']), env)), finished(ws.startRunWith(args(['--json']), env))]);
    expect([a.status, b.status], a.stderr + b.stderr).toEqual([0, 0]);
    type Summary = { loaded?: number; skipped?: number; files?: { name: string; outcome: string }[] };
    const [ja, jb] = [JSON.parse(a.stdout) as Summary, JSON.parse(b.stdout) as Summary].map((j) => ({ ...j, files: j.files ?? [] }));
    expect((ja!.loaded ?? 0) + (jb!.loaded ?? 0)).toBe(10);
    expect((ja!.skipped ?? 0) + (jb!.skipped ?? 0), JSON.stringify([ja, jb], null, 1)).toBe(2);
    const rows = await db.client.query<{ n: string }>(`SELECT count(DISTINCT transaction_id) AS n FROM settle.settlement_rows`);
    expect(rows.rows[0]!.n).toBe('5000');
    await expectCleanSplit(ws, [ja!, jb!]);
    await ws.cli(args());
    await expectCleanSplit(ws, [ja!, jb!]);
    expect(await ws.files('intake')).toEqual([]);
    expect(await ws.files('archive')).toHaveLength(10);
    expect(await ws.files('duplicates')).toHaveLength(2);
  });
});
