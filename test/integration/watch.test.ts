import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, type CliResult } from '../support/cli.js';
import { DatabaseRelay } from '../support/databaseRelay.js';
import { until } from '../support/until.js';
import { startRestartablePostgres } from '../support/postgres14.js';
import { promtool, sample } from '../support/promtool.js';
import { remoteIntake } from '../support/remoteIntake.js';
import { TestSshd } from '../support/sshd.js';
import { sharedFinanceDatabase, ROWS_WITH_SOURCE, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** Short cycles: the loop lists, waits and retries in fractions of a second. */
const QUICK = ['--poll', '0.2', '--rescan', '0.5'];

async function rowsFrom(name: string, client: pg.Client = db.client): Promise<number> {
  const result = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(result.rows[0]!.n);
}

/** Every watch process a test started: one a failed test left running is ended after it. */
const started = new Set<ChildProcess>();
afterEach(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
});

/** A watch process and its output so far. */
function watching(child: ChildProcess): { child: ChildProcess; done: Promise<CliResult>; alive(): boolean } {
  started.add(child);
  const done = finished(child);
  return { child, done, alive: () => child.exitCode === null && child.signalCode === null };
}

async function metric(path: string, series: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.includes(`${series} `) ? sample(text, series) : undefined;
}

const file = (date: string, prefix: string, rows = 5) => sampleSettlement({ date, rows, idPrefix: prefix }).text;

describe('watch on a local intake', () => {
  it('takes a dropped file once stable, skips its renamed resend, records no run for idle cycles, and exits 0 on SIGTERM', async () => {
    const ws = await Workspace.create(db.url);
    const metrics = join(ws.root, 'settle.prom');
    const w = watching(
      ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '1', '--metrics-file', metrics, ...QUICK]),
    );
    // idle: cycles counted, none recorded
    await until('three idle cycles', async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= 3);
    expect(ws.runs()).toEqual([]);
    expect(promtool(['check', 'metrics'], await readFile(metrics, 'utf8'))).toMatchObject({ status: 0 });

    // a file dropped while watch runs, fresh: taken once it has stood still for --stable-for
    const text = file('2026-08-01', 'WDROP');
    await ws.put('settle_20260801_a01.csv', text, { fresh: true });
    await until('the run finished', () => ws.runs().some((run) => run.status === 'finished'));
    expect(await ws.files('archive')).toEqual(['settle_20260801_a01.csv']);
    expect(await rowsFrom('settle_20260801_a01.csv')).toBe(5);
    expect(ws.runs()).toEqual([expect.objectContaining({ loaded: 1, exit_status: 0 })]);
    // the metrics file is rewritten after the cycle that worked: its run, its rows, its count
    await until('the worked cycle in the metrics', async () => (await metric(metrics, 'settle_ingest_watch_worked_cycles_total')) === 1);
    expect(await metric(metrics, 'settle_ingest_last_run_rows{partner="default"}')).toBe(5);
    expect(await metric(metrics, 'settle_ingest_last_run_files{partner="default",outcome="loaded"}')).toBe(1);

    // the same bytes under a new name: a resend, skipped and moved to duplicates, not loaded twice
    await ws.put('settle_20260801_a02.csv', text);
    await until('the second run finished', () => ws.runs().filter((run) => run.status === 'finished').length === 2);
    expect(await ws.files('duplicates')).toEqual(['settle_20260801_a02.csv']);
    expect(await rowsFrom('settle_20260801_a02.csv')).toBe(0);
    expect(ws.runs().map((run) => [run.loaded, run.skipped])).toEqual([
      [1, 0],
      [0, 1],
    ]);
    expect(ws.ledgerFile('settle_20260801_a02.csv')).toMatchObject({ state: 'duplicate' });

    // idle again: more cycles, no more runs
    const idle = (await metric(metrics, 'settle_ingest_watch_idle_cycles_total'))!;
    await until('more idle cycles', async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= idle + 3);
    expect(ws.runs()).toHaveLength(2);

    w.child.kill('SIGTERM');
    const ended = await w.done;
    expect(ended.status).toBe(0);
    expect(ended.stdout).toMatch(/run \S+ done: loaded=1 /);
  });

  it.each(['TERM', 'INT'])('on SIG%s during a load finishes that file, leaves the next in the intake, and exits 0', async (signal) => {
    const ws = await Workspace.create(db.url);
    // names and contents of each case's own: the finance database is shared by the file's tests
    const [first, second] = [1, 2].map((n) => `settle_20260802_${signal.toLowerCase()}${n}.csv`) as [string, string];
    await ws.put(first, file('2026-08-02', `W${signal}1`));
    await ws.put(second, file('2026-08-02', `W${signal}2`));
    const once = join(ws.root, 'signalled');
    const w = watching(
      ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', ...QUICK], {
        // the first file claimed: its load is in hand when the signal comes ($PPID is the CLI that runs the hook)
        SETTLE_TEST_FAULT: 'hook:after-claim',
        SETTLE_TEST_HOOK: `[ -e '${once}' ] && exit 0; touch '${once}'; kill -${signal} $PPID`,
      }),
    );
    const ended = await w.done;
    expect(ended.status).toBe(0);
    expect(await ws.files('archive')).toEqual([first]);
    expect(await ws.files('intake')).toEqual([second]);
    expect(await rowsFrom(first)).toBe(5);
    // the run it cut short did nothing wrong: a service's stop is normal
    expect(ws.runs()).toEqual([expect.objectContaining({ loaded: 1, exit_status: 0 })]);
  });

  it('rereads its config on SIGHUP: a pattern widened there takes a file the old one ignored; a broken config is refused and the old kept', async () => {
    const ws = await Workspace.create(db.url);
    const config = join(ws.root, 'settle.json');
    await writeFile(config, JSON.stringify({ intake: ws.intake, ledger: ws.ledger, pattern: 'settle_*.csv', stableFor: 0 }));
    const metrics = join(ws.root, 'settle.prom');
    await ws.put('partner_20260803.csv', file('2026-08-03', 'WHUP'));
    const w = watching(ws.startRunWith(['watch', '--config', config, '--metrics-file', metrics, ...QUICK]));
    await until('idle cycles', async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= 3);
    expect(ws.runs()).toEqual([]);

    // a config that cannot be read: logged, the old one stays, watch goes on
    await writeFile(config, '{ not json');
    w.child.kill('SIGHUP');
    const idle = (await metric(metrics, 'settle_ingest_watch_idle_cycles_total'))!;
    await until(
      'idle cycles after the refused reload',
      async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= idle + 3,
    );
    expect(w.alive()).toBe(true);
    expect(ws.runs()).toEqual([]);

    await writeFile(config, JSON.stringify({ intake: ws.intake, ledger: ws.ledger, pattern: '*.csv', stableFor: 0 }));
    w.child.kill('SIGHUP');
    await until('the file archived', async () => (await ws.files('archive')).includes('partner_20260803.csv'));
    expect(await rowsFrom('partner_20260803.csv')).toBe(5);

    w.child.kill('SIGTERM');
    const ended = await w.done;
    expect(ended.status).toBe(0);
    expect(ended.stderr).toMatch(/config not reread, the old one stays: config file .* is not valid JSON/);
  });

  it('refuses a bad config at start with exit 2, as run does', async () => {
    const ws = await Workspace.create(db.url);
    const r = await ws.cli(['watch', '--intake', join(ws.root, 'missing'), '--ledger', ws.ledger]);
    expect(r.status).toBe(2);
    const poll = await ws.cli(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--poll', 'soon']);
    expect(poll.status).toBe(2);
    expect(poll.stderr).toMatch(/--poll: expected a duration/);
  });
});

describe('watch through outages', () => {
  it('survives the finance database going away: it backs off, keeps running, and loads the next file once the database is back', async () => {
    const ws = await Workspace.create(db.url);
    const relay = await DatabaseRelay.start(new URL(db.url));
    const metrics = join(ws.root, 'settle.prom');
    const w = watching(
      ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--metrics-file', metrics, ...QUICK], {
        DATABASE_URL: relay.url(db.url),
      }),
    );
    await ws.put('settle_20260804_a01.csv', file('2026-08-04', 'WPG1'));
    await until('the first file archived', async () => (await ws.files('archive')).includes('settle_20260804_a01.csv'));

    await relay.cut();
    await ws.put('settle_20260804_a02.csv', file('2026-08-04', 'WPG2'));
    // cycles fail while it is away (each a run that could not start), and the process lives on
    await until('two failed cycles', async () => ((await metric(metrics, 'settle_ingest_watch_failed_cycles_total')) ?? 0) >= 2);
    expect(w.alive()).toBe(true);
    expect(await ws.files('intake')).toEqual(['settle_20260804_a02.csv']);
    expect(ws.runs().some((run) => run.status === 'not_started')).toBe(true);

    await relay.restore();
    await until('the second file archived', async () => (await ws.files('archive')).includes('settle_20260804_a02.csv'), 60_000);
    expect(await rowsFrom('settle_20260804_a02.csv')).toBe(5);
    expect(w.alive()).toBe(true);

    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
    await relay.cut();
  });
});

describe('watch through a restart of the database server', () => {
  it.each(['sqlite', 'postgres'] as const)(
    'the server stopped for real and started again (ledger: %s): watch backs off, loses and half-loads nothing, and loads the waiting file once it is back',
    async (ledger) => {
      // a server of this test's own, started by pg_ctl, so that it can be stopped and started again
      const dir = await mkdtemp(join(tmpdir(), 'settle-watch-restart-'));
      const server = await startRestartablePostgres(dir);
      let reader: pg.Client | undefined;
      try {
        await server.createDatabase('finance');
        const url = server.url('finance');
        const ws = await Workspace.create(url, { ledger });
        const metrics = join(ws.root, 'settle.prom');
        // the server goes at the worst instant of the first cycle: its file archived, its partner
        // lease (on the PostgreSQL ledger) not yet released, so it cannot be
        const at = join(ws.root, 'at-release');
        const go = join(ws.root, 'go');
        const once = `[ -e "${at}" ] && exit 0; touch "${at}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`;
        const w = watching(
          ws.startRunWith(
            ['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--metrics-file', metrics, ...QUICK],
            { SETTLE_TEST_FAULT: 'hook:before-lease-release', SETTLE_TEST_HOOK: once },
          ),
        );
        await ws.put('settle_20260806_a01.csv', file('2026-08-06', 'WRS1'));
        await until('the first cycle at its lease release', () => existsSync(at));
        expect(await ws.files('archive')).toEqual(['settle_20260806_a01.csv']);
        await server.halt();
        await writeFile(go, '');
        await ws.put('settle_20260806_a02.csv', file('2026-08-06', 'WRS2'));
        // with the finance database (and, for the PostgreSQL ledger, the ledger) gone, cycles fail and the process lives on
        await until('two failed cycles', async () => ((await metric(metrics, 'settle_ingest_watch_failed_cycles_total')) ?? 0) >= 2);
        expect(w.alive()).toBe(true);
        expect(await ws.files('intake')).toEqual(['settle_20260806_a02.csv']);

        await server.resume();
        // its own lease, left behind, is the next cycle's: the partner is not skipped for --claim-lease (2 h)
        await until('the second file archived', async () => (await ws.files('archive')).includes('settle_20260806_a02.csv'), 60_000);
        expect(w.alive()).toBe(true);
        w.child.kill('SIGTERM');
        expect((await w.done).status).toBe(0);

        reader = new pg.Client({ connectionString: url });
        await reader.connect();
        expect(await rowsFrom('settle_20260806_a01.csv', reader)).toBe(5);
        expect(await rowsFrom('settle_20260806_a02.csv', reader)).toBe(5);
        expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.row_count])).toEqual([
          ['settle_20260806_a01.csv', 'loaded', 5],
          ['settle_20260806_a02.csv', 'loaded', 5],
        ]);
        expect(await ws.files('intake')).toEqual([]);
        // each cycle that loaded a file is a run of its own, finished
        expect(ws.runs().filter((run) => run.status === 'finished' && run.loaded === 1)).toHaveLength(2);
      } finally {
        await reader?.end();
        await server.stop().catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('watch on an sftp:// intake (OpenSSH)', () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await TestSshd.start();
  });
  afterAll(async () => sshd?.destroy());

  it('polls the server, survives the server going away, and resumes when it is back', async () => {
    const r = await remoteIntake(sshd, db.url);
    const metrics = join(r.ws.root, 'settle.prom');
    const args = r.args(['--metrics-file', metrics, ...QUICK]);
    args[0] = 'watch';
    const w = watching(r.ws.startRunWith(args));
    await r.put('settle_20260805_a01.csv', file('2026-08-05', 'WSFTP1'));
    await until('the first file archived', async () => (await r.files('archive')).includes('settle_20260805_a01.csv'));
    expect(await rowsFrom('settle_20260805_a01.csv')).toBe(5);

    await sshd.stop();
    await r.put('settle_20260805_a02.csv', file('2026-08-05', 'WSFTP2'));
    await until('two failed cycles', async () => ((await metric(metrics, 'settle_ingest_watch_failed_cycles_total')) ?? 0) >= 2);
    expect(w.alive()).toBe(true);

    await sshd.resume();
    await until('the second file archived', async () => (await r.files('archive')).includes('settle_20260805_a02.csv'), 60_000);
    expect(await rowsFrom('settle_20260805_a02.csv')).toBe(5);
    await until(
      'two runs that loaded a file',
      () => r.ws.runs().filter((run) => run.status === 'finished' && run.loaded === 1).length === 2,
    );

    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });
});
