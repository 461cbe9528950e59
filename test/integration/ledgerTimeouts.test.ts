import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { startSilentRelay } from '../support/silentRelay.js';
import { parseSummary, withPgLedger, type FinanceDatabase, type Workspace } from '../support/workspace.js';

const FREEZE = fileURLToPath(new URL('../support/freezeBackend.mjs', import.meta.url));

/** The rows of ids `prefix-…` in the finance database, and the file markers of loads by that name. */
async function rowsLoaded(db: FinanceDatabase, prefix: string, name: string): Promise<{ rows: number; markers: number }> {
  const r = await db.client.query<{ rows: string; markers: string }>(
    `SELECT (SELECT count(*) FROM settle.settlement_rows WHERE transaction_id LIKE $1) AS rows,
            (SELECT count(*) FROM settle.file_loads WHERE file_name = $2) AS markers`,
    [`${prefix}-%`, name],
  );
  return { rows: Number(r.rows[0]!.rows), markers: Number(r.rows[0]!.markers) };
}

/** The run that gave up on the ledger left the file as it found it: in the intake, unclaimed, nothing loaded. */
async function expectUntouched(ws: Workspace, db: FinanceDatabase, name: string, prefix: string): Promise<void> {
  expect(await ws.files('intake')).toEqual([name]);
  expect(await ws.files('archive')).toEqual([]);
  expect(ws.ledgerFiles().filter((f) => f.state === 'claimed')).toEqual([]);
  expect(await rowsLoaded(db, prefix, name)).toEqual({ rows: 0, markers: 0 });
}

/** The next run, on a ledger that answers again, loads the file once and closes the run that gave up as died. */
async function expectNextRunLoads(ws: Workspace, db: FinanceDatabase, name: string, prefix: string, rows: number): Promise<void> {
  const next = await ws.run();
  expect(next.status, next.stderr).toBe(0);
  expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows });
  expect(await ws.files('archive')).toEqual([name]);
  expect(await rowsLoaded(db, prefix, name)).toEqual({ rows, markers: 1 });
  const [gaveUp] = ws.runs();
  expect(gaveUp).toMatchObject({ status: 'died' });
}

/** Runs the CLI with the ledger's backend frozen (SIGSTOP) at `step`, and resumes the backend after. */
async function runWithFrozenLedger(ws: Workspace, args: string[], hookTail = '') {
  const pidFile = join(await mkdtemp(join(tmpdir(), 'settle-frozen-ledger-')), 'pids');
  try {
    return await ws.run(args, {
      SETTLE_TEST_FAULT: 'hook:before-claim',
      SETTLE_TEST_HOOK: `"${process.execPath}" "${FREEZE}"${hookTail}`,
      FREEZE_APPLICATION: 'settle-ingest ledger',
      FROZEN_PID_FILE: pidFile,
    });
  } finally {
    const pids = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    for (const pid of pids) process.kill(Number(pid), 'SIGCONT');
  }
}

// a frozen server can only be staged on the embedded one, whose processes this test may signal
describe.skipIf(process.env.TEST_DATABASE_URL !== undefined)('a PostgreSQL ledger whose backend is frozen', () => {
  it('gives up after --ledger-timeout: exit 1 naming it, nothing claimed or loaded, the next run loads the file', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261101_frozen.csv';
      await ws.put(name, sampleSettlement({ date: '2026-11-01', rows: 30, idPrefix: 'LFROZEN' }).text);

      const r = await runWithFrozenLedger(ws, ['--ledger-timeout', '2']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/the ledger answered nothing for [\d.]+s, not even a cancel \(--ledger-timeout 2\): connection closed/);
      await expectUntouched(ws, db, name, 'LFROZEN');
      await expectNextRunLoads(ws, db, name, 'LFROZEN', 30);
    });
  });

  it('ends within seconds on SIGTERM, whatever --ledger-timeout says: exit 1, asked to stop, the next run loads the file', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261102_term.csv';
      await ws.put(name, sampleSettlement({ date: '2026-11-02', rows: 30, idPrefix: 'LTERM' }).text);

      // the hook freezes the ledger's backend, then SIGTERMs the run ($PPID): its next ledger statement
      // is never answered, and only the stop can end that wait within the test's timeout
      const r = await runWithFrozenLedger(ws, ['--ledger-timeout', '600', '--db-timeout', '600'], ' && kill -TERM $PPID');
      expect(r.status).toBe(1);
      expect(r.signal).toBeNull();
      expect(r.stderr).toMatch(/asked to stop \(SIGTERM\).*the ledger answered nothing .*--ledger-timeout 600/);
      await expectUntouched(ws, db, name, 'LTERM');
      await expectNextRunLoads(ws, db, name, 'LTERM', 30);
    });
  });
});

describe('a PostgreSQL ledger behind a network path that goes silent', () => {
  it('mid-run: the statement given up after --ledger-timeout, exit 1 naming it; the next run loads the file', async () => {
    await withPgLedger(async (ws, db) => {
      const relay = await startSilentRelay(ws.ledger);
      try {
        const name = 'settle_20261103_silent.csv';
        await ws.put(name, sampleSettlement({ date: '2026-11-03', rows: 30, idPrefix: 'LSILENT' }).text);
        const r = await ws.cli(['run', '--intake', ws.intake, '--ledger', relay.url, '--stable-for', '0', '--ledger-timeout', '2'], {
          SETTLE_TEST_FAULT: 'hook:before-claim',
          SETTLE_TEST_HOOK: relay.silenceCommand,
        });
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/the ledger answered nothing for [\d.]+s, not even a cancel \(--ledger-timeout 2\): connection closed/);
        await expectUntouched(ws, db, name, 'LSILENT');
        await expectNextRunLoads(ws, db, name, 'LSILENT', 30);
      } finally {
        await relay.close();
      }
    });
  });

  it('from the start: connecting given up after --ledger-timeout, exit 1, nothing touched', async () => {
    await withPgLedger(async (ws, db) => {
      const relay = await startSilentRelay(ws.ledger);
      relay.silence();
      try {
        const name = 'settle_20261104_noanswer.csv';
        await ws.put(name, sampleSettlement({ date: '2026-11-04', rows: 30, idPrefix: 'LNOANSWER' }).text);
        const r = await ws.cli(['run', '--intake', ws.intake, '--ledger', relay.url, '--stable-for', '0', '--ledger-timeout', '2']);
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/ledger postgres:\/\/\S+ is unreachable: no answer within 2s \(--ledger-timeout 2\)/);
        await expectUntouched(ws, db, name, 'LNOANSWER');
        expect(ws.runs()).toEqual([]);
      } finally {
        await relay.close();
      }
    });
  });

  it('ends within seconds on SIGTERM while connecting, whatever --ledger-timeout says', async () => {
    await withPgLedger(async (ws, db) => {
      const relay = await startSilentRelay(ws.ledger);
      relay.silence();
      try {
        const name = 'settle_20261105_termconnect.csv';
        await ws.put(name, sampleSettlement({ date: '2026-11-05', rows: 30, idPrefix: 'LTERMCONN' }).text);
        const connecting = relay.nextConnection();
        const child = ws.startRunWith([
          'run',
          '--intake',
          ws.intake,
          '--ledger',
          relay.url,
          '--stable-for',
          '0',
          '--ledger-timeout',
          '600',
        ]);
        const done = finished(child);
        await connecting; // the run waits for the ledger's answer, which never comes
        child.kill('SIGTERM');
        const r = await done;
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/ledger postgres:\/\/\S+ is unreachable: asked to stop \(SIGTERM\)/);
        await expectUntouched(ws, db, name, 'LTERMCONN');
      } finally {
        await relay.close();
      }
    });
  });
});

describe('a PostgreSQL ledger table locked by another session', () => {
  it('gives up the wait after --ledger-timeout (the server’s lock_timeout): exit 1 naming it, the next run loads the file', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261106_locked.csv';
      await ws.put(name, sampleSettlement({ date: '2026-11-06', rows: 30, idPrefix: 'LLOCKED' }).text);
      await db.client.query('BEGIN');
      let r;
      try {
        await db.client.query('LOCK TABLE settle_ledger.processed_files IN ACCESS EXCLUSIVE MODE');
        r = await ws.run(['--ledger-timeout', '2']);
      } finally {
        await db.client.query('ROLLBACK');
      }
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/waited over 2s for a lock in the ledger \(--ledger-timeout 2\)/);
      await expectUntouched(ws, db, name, 'LLOCKED');
      const next = await ws.run();
      expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 30 });
    });
  });
});
