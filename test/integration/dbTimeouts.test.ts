import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function loaded(prefix: string): Promise<{ rows: number; markers: number }> {
  const r = await db.client.query<{ rows: string; markers: string }>(
    `SELECT (SELECT count(*) FROM settle.settlement_rows WHERE transaction_id LIKE $1) AS rows,
            (SELECT count(*) FROM settle.file_loads WHERE file_name LIKE $2) AS markers`,
    [`${prefix}-%`, `%${prefix.toLowerCase()}%`],
  );
  return { rows: Number(r.rows[0]!.rows), markers: Number(r.rows[0]!.markers) };
}

/** Another session holds the rows table in ACCESS EXCLUSIVE mode while `fn` runs. */
async function withTableLocked<T>(fn: () => Promise<T>): Promise<T> {
  await db.client.query('BEGIN');
  await db.client.query('LOCK TABLE settle.settlement_rows IN ACCESS EXCLUSIVE MODE');
  try {
    return await fn();
  } finally {
    await db.client.query('ROLLBACK');
  }
}

/** The file failed with its claim released: nothing claimed, the file still in the intake. */
async function expectLeftForNextRun(ws: Workspace, name: string): Promise<void> {
  expect(await ws.files('intake')).toEqual([name]);
  expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([[name, 'failed']]);
  expect(ws.events().map((e) => e.event)).toEqual(expect.arrayContaining(['claimed', 'failed', 'released']));
}

describe('a finance database that makes the run wait', () => {
  it('gives up on a table locked by another session after --db-timeout: failed, claim released, loaded once the lock is gone', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261001_lock.csv';
    await ws.put(name, sampleSettlement({ date: '2026-10-01', rows: 20, idPrefix: 'LOCK' }).text);

    const r = await withTableLocked(() => ws.run(['--db-timeout', '2']));
    expect(r.status).toBe(1);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 0, failed: 1 });
    await expectLeftForNextRun(ws, name);
    const reason = ws.ledgerFile(name)!.reason!;
    expect(reason).toMatch(/lock .*--db-timeout 2/);
    expect(reason).not.toContain('\n');
    expect(await loaded('LOCK')).toEqual({ rows: 0, markers: 0 });

    const next = await ws.run(['--db-timeout', '2']);
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 20 });
    expect(await loaded('LOCK')).toEqual({ rows: 20, markers: 1 });
  });

  it('stops promptly on SIGTERM while waiting on a lock: exit 1, stopped early, claim released, file left', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261002_term.csv';
    await ws.put(name, sampleSettlement({ date: '2026-10-02', rows: 20, idPrefix: 'TERM' }).text);

    const r = await withTableLocked(async () => {
      const child = ws.startRun(['--db-timeout', '600']);
      const done = finished(child);
      while (child.exitCode === null && !ws.ledgerFiles().some((f) => f.state === 'claimed')) await sleep(20);
      child.kill('SIGTERM');
      return done; // the lock stays held: only the cancel can end this wait within the test's timeout
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/\(stopped early: asked to stop \(SIGTERM\)/);
    await expectLeftForNextRun(ws, name);
    expect(ws.ledgerFile(name)!.reason).toMatch(/asked to stop \(SIGTERM\) while waiting for a lock/);
    expect(await loaded('TERM')).toEqual({ rows: 0, markers: 0 });

    const next = await ws.run();
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 20 });
  });

  // a frozen server can only be staged on the embedded one, whose processes this test may signal
  it.skipIf(process.env.TEST_DATABASE_URL !== undefined)(
    'closes the connection to a backend frozen mid-COPY: exit 1, nothing committed, the next run loads the file',
    async () => {
      const ws = await Workspace.create(db.url);
      const name = 'settle_20261003_frozen.csv';
      await ws.put(name, sampleSettlement({ date: '2026-10-03', rows: 10_000, idPrefix: 'FROZEN' }).text); // > one COPY batch (256 KiB)
      const pidFile = join(await mkdtemp(join(tmpdir(), 'settle-frozen-')), 'pids');
      const hook = fileURLToPath(new URL('../support/freezeBackend.mjs', import.meta.url));
      let r;
      try {
        r = await ws.run(['--db-timeout', '2'], {
          SETTLE_TEST_FAULT: 'hook:mid-copy',
          SETTLE_TEST_HOOK: `"${process.execPath}" "${hook}"`,
          FROZEN_PID_FILE: pidFile,
          FREEZE_ACTIVE: 'COPY',
        });
      } finally {
        const pids = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
        for (const pid of pids) process.kill(Number(pid), 'SIGCONT');
      }
      expect(r.status).toBe(1);
      expect(r.stdout).toMatch(/\(stopped early: finance database connection lost: the finance database answered nothing .*--db-timeout 2/);
      await expectLeftForNextRun(ws, name);
      expect(await loaded('FROZEN')).toEqual({ rows: 0, markers: 0 });

      const next = await ws.run();
      expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 10_000 });
      expect(await loaded('FROZEN')).toEqual({ rows: 10_000, markers: 1 });
    },
  );
});
