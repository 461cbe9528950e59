import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { finished } from '../support/cli.js';
import {
  claimBarrier,
  expectCleanSplit,
  expectOverlapped,
  financeDatabase,
  parseSummary,
  sharedFinanceDatabase,
  Workspace,
  type LedgerStore,
  ROWS_WITH_SOURCE,
} from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function loadedRows(client: pg.Client, prefix: string): Promise<{ rows: number; distinct: number; files: number }> {
  const r = await client.query<{ rows: string; distinct: string; files: string }>(
    `SELECT count(*) AS rows, count(DISTINCT transaction_id) AS distinct, count(DISTINCT source_sha256) AS files
       FROM ${ROWS_WITH_SOURCE} WHERE transaction_id LIKE $1`,
    [`${prefix}-%`],
  );
  const x = r.rows[0]!;
  return { rows: Number(x.rows), distinct: Number(x.distinct), files: Number(x.files) };
}

/**
 * Every fault point from the staged file's claim on, and what the run after the kill must find:
 * nothing claimed yet (only the dead run's staging folder to remove), a claim with no file marker
 * expired, a claim whose load committed recovered, or (once the ledger says loaded, with the move it
 * asks for in the same commit) only a move to finish.
 */
const CRASH_STEPS = [
  { step: 'before-claim', settled: undefined, status: 0 },
  { step: 'after-claim', settled: 'expired', status: 1 },
  { step: 'mid-copy', settled: 'expired', status: 1 },
  { step: 'after-commit', settled: 'recovered', status: 1 },
  { step: 'before-finalize', settled: 'recovered', status: 1 },
  { step: 'after-finalize', settled: undefined, status: 0 },
  { step: 'mid-move', settled: undefined, status: 0 },
  { step: 'after-move', settled: undefined, status: 0 },
  { step: 'after-move-record', settled: undefined, status: 0 },
] as const;

const STORES = ['sqlite', 'postgres'] as const satisfies readonly LedgerStore[];
const MATRIX = STORES.flatMap((store) => CRASH_STEPS.map((c) => ({ store, ...c })));

describe('a run killed at any step and run again ends as if never interrupted', () => {
  it.each(MATRIX)('SIGKILL $step ($store ledger)', async ({ store, step, settled, status }) => {
    // a PostgreSQL ledger gets a database of its own, so that each case starts from an empty ledger
    const own = store === 'postgres' ? await financeDatabase() : undefined;
    try {
      const ws = await Workspace.create(own?.url ?? db.url, { ledger: store });
      const prefix = `K${store[0]}${step.replaceAll('-', '')}`;
      const f = sampleSettlement({ date: '2026-06-01', rows: 10_000, idPrefix: prefix }); // > one 256 KiB COPY batch: mid-copy is mid-stream
      await ws.put('settle_20260601_a01.csv', f.text);

      const killed = await ws.run([], { SETTLE_TEST_FAULT: step });
      expect(killed.signal).toBe('SIGKILL');
      const killedRun = ws.runs()[0]!.run_id;

      const again = await ws.run(['--json']);
      expect(again.status, again.stderr).toBe(status);
      const summary = JSON.parse(again.stdout);
      expect(summary.stale).toBe(settled ? 1 : 0);
      const settleEvents = ws.events().filter((e) => e.event === 'expired' || e.event === 'recovered');
      expect(settleEvents.map((e) => [e.event, e.run_id, e.details.claimRun])).toEqual(settled ? [[settled, summary.run, killedRun]] : []);

      expect(await loadedRows(own?.client ?? db.client, prefix)).toEqual({ rows: 10_000, distinct: 10_000, files: 1 });
      expect(await ws.files('intake')).toEqual([]);
      expect(await ws.files('archive')).toEqual(['settle_20260601_a01.csv']);
      expect(await ws.files('duplicates')).toEqual([]);
      expect((await ws.read('archive', 'settle_20260601_a01.csv')).toString()).toBe(f.text);
      expect(ws.ledgerFiles().map((x) => [x.name, x.state, x.location])).toEqual([
        ['settle_20260601_a01.csv', 'loaded', `${ws.archive}/settle_20260601_a01.csv`],
      ]);
      // no false duplicate: nothing was ever counted as skipped
      expect(ws.events().filter((e) => e.event === 'skipped')).toEqual([]);
      // a third run has nothing left to do
      const third = await ws.run();
      expect(third.status).toBe(0);
      expect(parseSummary(third.stdout)).toMatchObject({ loaded: 0, skipped: 0, held: 0, failed: 0, stale: 0 });
    } finally {
      await own?.close();
    }
  });
});

describe('a run killed in the middle of a COPY in binary (a file of 1 MiB or more)', () => {
  it('leaves nothing of the file, and the next run loads it whole, once', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-06-06', rows: 25_000, idPrefix: 'KBIN' }); // 1.6 MiB: binary, several batches
    await ws.put('settle_20260606_a01.csv', f.text);
    const killed = await ws.run([], { SETTLE_TEST_FAULT: 'mid-copy' });
    expect(killed.signal).toBe('SIGKILL');
    expect(await loadedRows(db.client, 'KBIN')).toEqual({ rows: 0, distinct: 0, files: 0 });

    const again = await ws.run();
    expect(again.status).toBe(1); // the killed run's claim is reported as stale
    // the scenario is the binary path's: the run's log line for the load says so
    expect(again.stderr).toMatch(/"event":"loaded"[^\n]*"copy_format":"binary"/);
    expect(parseSummary(again.stdout)).toMatchObject({ loaded: 1, rows: 25_000, stale: 1 });
    expect(await loadedRows(db.client, 'KBIN')).toEqual({ rows: 25_000, distinct: 25_000, files: 1 });
    expect(await ws.files('archive')).toEqual(['settle_20260606_a01.csv']);
  });
});

describe('a claim expired while its COMMIT was still landing', () => {
  it('is recognised by the next run as its own ledger’s load: archived, not called a duplicate', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-06-03', rows: 50, idPrefix: 'LATE' });
    await ws.put('settle_20260603_a01.csv', f.text);
    const first = parseSummary((await ws.run()).stdout);
    // what the race leaves behind: the rows committed by run `first`, its claim expired in the ledger
    ws.withLedger((l) => l.prepare(`UPDATE processed_files SET state = 'failed', location = NULL`).run());
    const { rename } = await import('node:fs/promises');
    const { join } = await import('node:path');
    await rename(join(ws.archive, 'settle_20260603_a01.csv'), join(ws.intake, 'settle_20260603_a01.csv'));

    const r = await ws.run();
    expect(r.status).toBe(1); // a died run is worth a look
    expect(await loadedRows(db.client, 'LATE')).toEqual({ rows: 50, distinct: 50, files: 1 });
    expect(await ws.files('archive')).toEqual(['settle_20260603_a01.csv']);
    expect(await ws.files('duplicates')).toEqual([]);
    expect(ws.ledgerFile('settle_20260603_a01.csv')).toMatchObject({ state: 'loaded', row_count: 50 });
    expect(ws.events().filter((e) => e.event === 'skipped')).toEqual([]);
    expect(ws.events().find((e) => e.event === 'recovered')?.details).toMatchObject({ claimRun: first.run });
  });
});

describe('a crash after a move but before the ledger recorded it', () => {
  it('treats a later upload of the same name and bytes as a resend to skip, not as the unfinished move', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-06-05', rows: 20, idPrefix: 'GAP' });
    await ws.put('settle_20260605_a01.csv', f.text);
    await ws.run();
    // the archive move happened, its record did not
    ws.withLedger((l) => l.prepare(`UPDATE processed_files SET location = NULL`).run());
    await ws.put('settle_20260605_a01.csv', f.text, { fresh: true }); // the partner sends it again, later
    const r = await ws.run(['--json']);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 0, skipped: 1 });
    expect(await ws.files('archive')).toEqual(['settle_20260605_a01.csv']);
    expect(await ws.files('duplicates')).toEqual(['settle_20260605_a01.csv']);
    expect(await loadedRows(db.client, 'GAP')).toEqual({ rows: 20, distinct: 20, files: 1 });
  });
});

describe('SIGTERM (cron or systemd stopping the job)', () => {
  it('lets the run finish the file in hand, leave the rest for the next run, and say it stopped', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260604_a01.csv', sampleSettlement({ date: '2026-06-04', rows: 300_000, idPrefix: 'TERMA' }).text);
    await ws.put('settle_20260604_b01.csv', sampleSettlement({ date: '2026-06-04', rows: 100, idPrefix: 'TERMB' }).text);
    const child = ws.startRun();
    const done = finished(child);
    while (child.exitCode === null && !ws.ledgerFiles().some((f) => f.state === 'claimed')) await sleep(5);
    child.kill('SIGTERM');
    const r = await done;
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^run \S+ stopped: loaded=1 .*rows=300000 .*\(stopped early: asked to stop \(SIGTERM\)/);
    expect(await loadedRows(db.client, 'TERMA')).toEqual({ rows: 300_000, distinct: 300_000, files: 1 });
    expect(await loadedRows(db.client, 'TERMB')).toEqual({ rows: 0, distinct: 0, files: 0 });
    expect(await ws.files('archive')).toEqual(['settle_20260604_a01.csv']);
    expect(await ws.files('intake')).toEqual(['settle_20260604_b01.csv']);
    expect(ws.ledgerFiles().filter((f) => f.state === 'claimed')).toEqual([]);

    const next = await ws.run();
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 100 });
  });
});

describe('two runs started at the same moment', () => {
  it('load 10 files and skip 2 renamed resends exactly once between them, every file in one folder', async () => {
    const ws = await Workspace.create(db.url);
    const texts: string[] = [];
    for (let i = 0; i < 10; i++) {
      const f = sampleSettlement({ date: '2026-06-02', rows: 2000, idPrefix: `PAR${i}` });
      texts.push(f.text);
      await ws.put(`settle_20260602_f${String(i).padStart(2, '0')}.csv`, f.text);
    }
    await ws.put('settle_20260602_f03_retry.csv', texts[3]!);
    await ws.put('settle_20260602_f07_retry.csv', texts[7]!);

    const together = await claimBarrier(ws, 2);
    const [a, b] = await Promise.all([finished(ws.startRun(['--json'], together)), finished(ws.startRun(['--json'], together))]);
    expect([a.status, b.status], a.stderr + b.stderr).toEqual([0, 0]);
    const ja = JSON.parse(a.stdout);
    const jb = JSON.parse(b.stdout);
    expectOverlapped(ws, [ja.run, jb.run]);
    expect(ja.loaded + jb.loaded).toBe(10);
    expect(ja.skipped + jb.skipped).toBe(2);
    expect(ja.rows + jb.rows).toBe(20_000);
    const outcomesByName = [...ja.files, ...jb.files].filter((f: { outcome: string }) => f.outcome !== 'held');
    expect(new Set(outcomesByName.map((f: { name: string }) => f.name)).size).toBe(outcomesByName.length);

    const total = await db.client.query<{ n: string; d: string }>(
      `SELECT count(*) AS n, count(DISTINCT transaction_id) AS d FROM settle.settlement_rows WHERE transaction_id LIKE 'PAR%'`,
    );
    expect(total.rows[0]).toEqual({ n: '20000', d: '20000' });

    await expectCleanSplit(ws, [ja, jb]);
    // a held twin (its original still mid-load in the other run) is finished by the next run
    await ws.run();
    await expectCleanSplit(ws, [ja, jb]);
    const archive = await ws.files('archive');
    const duplicates = await ws.files('duplicates');
    expect(archive).toHaveLength(10);
    expect(duplicates).toHaveLength(2);
    expect(await ws.files('intake')).toEqual([]);
    expect(new Set([...archive, ...duplicates]).size).toBe(12);
    expect(ws.ledgerFiles().filter((f) => f.state === 'loaded')).toHaveLength(10);
  });
});

describe('a run that finds its upload moved by another run', () => {
  it.each(STORES)(
    'holding a staged copy of a file another run loads and archives meanwhile: skips nothing, keeps no second copy (%s ledger)',
    async (store) => {
      const own = store === 'postgres' ? await financeDatabase() : undefined;
      try {
        const ws = await Workspace.create(own?.url ?? db.url, { ledger: store });
        const name = 'settle_20260603_a01.csv';
        const text = sampleSettlement({ date: '2026-06-03', rows: 5, idPrefix: `MOVEDBY${store[0]}` }).text;
        await ws.put(name, text);
        const staged = join(ws.root, 'b-staged');
        const go = join(ws.root, 'go');
        // run B has staged the upload (still in the intake then) and waits before deciding it; run A loads and archives it meanwhile
        const waitAfterStaging = `touch "${staged}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`;
        const runB = finished(ws.startRun(['--json'], { SETTLE_TEST_FAULT: 'hook:before-claim', SETTLE_TEST_HOOK: waitAfterStaging }));
        for (let i = 0; !existsSync(staged); i++) {
          expect(i, 'run B never reached its staged copy').toBeLessThan(6000);
          await sleep(10);
        }
        if (own) {
          // on a shared ledger B holds the partner's lease while it works: A would skip the partner.
          // The race is left only to a run whose lease ran out while it waited: B's is made so
          await own.client.query(`UPDATE settle_ledger.partner_leases SET lease_until = now() - interval '1 second'`);
        }
        const a = await ws.run(['--json']);
        expect(a.status, a.stderr).toBe(0);
        expect(JSON.parse(a.stdout)).toMatchObject({ loaded: 1, skipped: 0 });
        await writeFile(go, '');
        const b = await runB;
        expect(b.status, b.stderr).toBe(0);
        // the upload B read is the one A moved: B finds A's move, not its own intent, and says nothing was lost
        expect(JSON.parse(b.stdout)).toMatchObject({ loaded: 0, skipped: 0, failed: 0, move_failed: 0 });
        expect(await ws.files('intake')).toEqual([]);
        expect(await ws.files('archive')).toEqual([name]);
        expect(await ws.files('duplicates')).toEqual([]);
        expect(ws.ledgerFile(name)).toMatchObject({ state: 'loaded', location: expect.stringContaining('archive') });
        expect(await loadedRows(own?.client ?? db.client, `MOVEDBY${store[0]}`)).toEqual({ rows: 5, distinct: 5, files: 1 });
      } finally {
        await own?.close();
      }
    },
  );
});
