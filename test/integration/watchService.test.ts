import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN } from '../support/cli.js';
import { startRestartablePostgres } from '../support/postgres14.js';
import { TestSshd } from '../support/sshd.js';
import { metric, until, watchProcesses } from '../support/watchProcess.js';
import { putIn, ROWS_WITH_SOURCE, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

/**
 * `watch` as a service (issue 44.4, 45.1): each partner kept going whatever another's server does,
 * its intake folder heard again when it is replaced, polled when the kernel will not watch it, a
 * slow upload holding back only itself, its own claim finished after a ledger outage, `run` beside
 * it, and the take-over of a dead holder's partner when its lease ends.
 */
const db = sharedFinanceDatabase();
const watching = watchProcesses();

/** Short cycles: the loop lists, waits and retries in fractions of a second. */
const QUICK = ['--poll', '0.2', '--rescan', '0.5'];
/** No timer of its own worth waiting for: only a folder's events (or a lease's end) can bring a cycle that works. */
const EVENTS_ONLY = ['--poll', '1h', '--rescan', '1h'];

const file = (date: string, prefix: string, rows = 5) => sampleSettlement({ date, rows, idPrefix: prefix }).text;

async function rowsFrom(name: string, client: pg.Client = db.client): Promise<number> {
  const result = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(result.rows[0]!.n);
}

const folderFiles = (folder: string) =>
  readdir(folder).then(
    (names) => names.sort(),
    () => [] as string[],
  );

describe("one partner's failure backs off that partner alone", () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await TestSshd.start();
  });
  afterAll(async () => sshd?.destroy());

  it.each([
    ['the SFTP partner first', ['adyen', 'bank']],
    ['the local partner first', ['bank', 'adyen']],
  ])(
    'a local partner and an SFTP one (%s): with the SFTP server down the local files load at once, and the SFTP partner resumes when it is back',
    async (_order, order) => {
      const ws = await Workspace.create(db.url);
      const tag = order[0]!.toUpperCase();
      const bank = join(ws.root, 'bank', 'intake');
      const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
      await mkdir(join(remote, 'intake'));
      const partners = { bank: { intake: bank }, adyen: { intake: sshd.url(join(remote, 'intake')) } };
      const config = await ws.partnersConfig(Object.fromEntries(order.map((name) => [name, partners[name as keyof typeof partners]])), {
        sftpKey: sshd.clientKey,
        knownHosts: sshd.knownHosts,
      });
      const metrics = join(ws.root, 'settle.prom');
      const w = watching(ws.startRunWith(['watch', '--config', config, '--metrics-file', metrics, ...QUICK]));
      const remoteFile = async (name: string, text: string) => {
        await writeFile(join(remote, 'intake', name), text);
        const old = new Date(Date.now() - 3600_000);
        await utimes(join(remote, 'intake', name), old, old);
      };
      await remoteFile(`settle_20260901_r1${tag.toLowerCase()}.csv`, file('2026-09-01', `${tag}SFTP1`));
      await putIn(bank, `settle_20260901_l1${tag.toLowerCase()}.csv`, file('2026-09-01', `${tag}LOCAL1`));
      await until(
        'both first files archived',
        async () =>
          (await folderFiles(join(remote, 'archive'))).length === 1 && (await folderFiles(join(ws.root, 'bank', 'archive'))).length === 1,
      );

      await sshd.stop();
      const failing = '{partner="adyen"}';
      await until(
        'the SFTP partner failing',
        async () => ((await metric(metrics, `settle_ingest_watch_partner_failures${failing}`)) ?? 0) >= 2,
      );
      // a file for the local partner while the SFTP one is backed off: taken as ever
      await putIn(bank, `settle_20260901_l2${tag.toLowerCase()}.csv`, file('2026-09-01', `${tag}LOCAL2`));
      await until('the local file archived', async () =>
        (await folderFiles(join(ws.root, 'bank', 'archive'))).includes(`settle_20260901_l2${tag.toLowerCase()}.csv`),
      );
      expect(await rowsFrom(`settle_20260901_l2${tag.toLowerCase()}.csv`)).toBe(5);
      expect(await metric(metrics, `settle_ingest_watch_partner_failures${failing}`)).toBeGreaterThan(0);
      expect(await metric(metrics, 'settle_ingest_watch_partner_failures{partner="bank"}')).toBe(0);
      expect(w.stdout()).toMatch(/^watch: adyen: failed \(1 in a row\), backing off: next try in 1s: /m);

      await sshd.resume();
      await remoteFile(`settle_20260901_r2${tag.toLowerCase()}.csv`, file('2026-09-01', `${tag}SFTP2`));
      await until(
        'the SFTP file archived',
        async () => (await folderFiles(join(remote, 'archive'))).includes(`settle_20260901_r2${tag.toLowerCase()}.csv`),
        60_000,
      );
      expect(await rowsFrom(`settle_20260901_r2${tag.toLowerCase()}.csv`)).toBe(5);
      // said once its run is over (the file moves before that): the journal's line
      await until('the resumption said on stdout', () => /^watch: adyen: resumed after \d+ failed tr(y|ies)$/m.test(w.stdout()));
      // a listing that failed is no run: the SFTP partner's outage recorded none
      expect(
        ws
          .runs()
          .filter((run) => run.partner === 'adyen')
          .map((run) => [run.status, run.loaded]),
      ).toEqual([
        ['finished', 1],
        ['finished', 1],
      ]);

      w.child.kill('SIGTERM');
      expect((await w.done).status).toBe(0);
      await rm(remote, { recursive: true, force: true });
    },
  );
});

describe('the intake folder replaced under a running watch', () => {
  it('renamed away and made again: the new folder is watched at once, its file taken without a rescan', async () => {
    const ws = await Workspace.create(db.url);
    const metrics = join(ws.root, 'settle.prom');
    const w = watching(
      ws.startRunWith([
        'watch',
        '--intake',
        ws.intake,
        '--ledger',
        ws.ledger,
        '--stable-for',
        '0',
        '--metrics-file',
        metrics,
        ...EVENTS_ONLY,
      ]),
    );
    await until('the first cycle', async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= 1);
    await rename(ws.intake, join(ws.root, 'intake.old'));
    await mkdir(ws.intake);
    await ws.put('settle_20260902_a01.csv', file('2026-09-02', 'REMADE'));
    await until('the file archived', async () => (await ws.files('archive')).includes('settle_20260902_a01.csv'));
    expect(await rowsFrom('settle_20260902_a01.csv')).toBe(5);
    // and the new folder goes on being heard
    await ws.put('settle_20260902_a02.csv', file('2026-09-02', 'REMADE2'));
    await until('the second file archived', async () => (await ws.files('archive')).includes('settle_20260902_a02.csv'));
    expect(w.stdout()).toMatch(/^watch: default: the intake folder \S+ is (there again|a new folder): watching it, listing it now$/m);
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });

  it('a link to the intake swapped for a link to another folder: the other folder is watched at once', async () => {
    const ws = await Workspace.create(db.url);
    const link = join(ws.root, 'current');
    const other = join(ws.root, 'intake-b');
    await mkdir(other);
    await symlink(ws.intake, link);
    const metrics = join(ws.root, 'settle.prom');
    const w = watching(
      ws.startRunWith(['watch', '--intake', link, '--ledger', ws.ledger, '--stable-for', '0', '--metrics-file', metrics, ...EVENTS_ONLY]),
    );
    await until('the first cycle', async () => ((await metric(metrics, 'settle_ingest_watch_idle_cycles_total')) ?? 0) >= 1);
    // the swap as `ln -sfn` does it: a new link renamed over the old
    await symlink(other, `${link}.new`);
    await rename(`${link}.new`, link);
    await putIn(other, 'settle_20260903_a01.csv', file('2026-09-03', 'SWAPPED'));
    await until('the file archived', async () => (await ws.files('archive')).includes('settle_20260903_a01.csv'));
    expect(await rowsFrom('settle_20260903_a01.csv')).toBe(5);
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });
});

// a user namespace of its own, whose inotify instances are set to none: the kernel refuses every watch there, and only there
const canRefuseInotify =
  spawnSync('unshare', ['--user', '--map-root-user', 'sh', '-c', 'echo 0 > /proc/sys/user/max_inotify_instances'], { stdio: 'ignore' })
    .status === 0;

describe('a watch the kernel will not give inotify', () => {
  it.skipIf(!canRefuseInotify)(
    'says so on stdout, in its log and in a metric, and polls the folder at --stable-for pace instead of the rescan',
    async () => {
      const ws = await Workspace.create(db.url);
      const metrics = join(ws.root, 'settle.prom');
      const log = join(ws.root, 'run.log');
      const args = [
        'watch',
        '--intake',
        ws.intake,
        '--ledger',
        ws.ledger,
        '--stable-for',
        '1',
        '--metrics-file',
        metrics,
        '--log-file',
        log,
        ...EVENTS_ONLY,
      ];
      const env: Record<string, string> = { DATABASE_URL: ws.databaseUrl };
      for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
      const w = watching(
        spawn(
          'unshare',
          [
            '--user',
            '--map-root-user',
            'sh',
            '-c',
            'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" "$@"',
            process.execPath,
            BIN,
            ...args,
          ],
          { env, cwd: ws.root, stdio: ['ignore', 'pipe', 'pipe'] },
        ),
      );
      await until(
        'the metric says the folder is polled',
        async () => (await metric(metrics, 'settle_ingest_watch_folder_polled{partner="default"}')) === 1,
      );
      expect(w.stdout()).toMatch(/^watch: default: the kernel will not watch \S+ \(EMFILE: the inotify instances of this user are spent/m);
      expect(await readFile(log, 'utf8')).toMatch(/"event":"intake-not-watched"/);
      // a file dropped now is found by the polling, within seconds, not after the hour's rescan
      await ws.put('settle_20260904_a01.csv', file('2026-09-04', 'POLLED'), { fresh: true });
      await until('the file archived', async () => (await ws.files('archive')).includes('settle_20260904_a01.csv'));
      expect(await rowsFrom('settle_20260904_a01.csv')).toBe(5);
      w.child.kill('SIGTERM');
      expect((await w.done).status).toBe(0);
    },
  );
});

describe('a slow upload beside other files', () => {
  it('holds back only its own file: the others are taken at --stable-for, the cycle ends, and the upload is taken once it stops', async () => {
    const ws = await Workspace.create(db.url);
    const slow = join(ws.intake, 'settle_20260905_slow.csv');
    const sample = file('2026-09-05', 'SLOW', 40)
      .split('\n')
      .filter((line) => line !== '');
    await writeFile(slow, `${sample[0]}\n`);
    // the partner's uploader: a row at a time, until told to stop
    const stopFile = join(ws.root, 'stop-upload');
    const rows = join(ws.root, 'rows');
    await writeFile(rows, sample.slice(1).join('\n'));
    const uploader = spawn(
      'sh',
      ['-c', `while read -r row; do [ -e '${stopFile}' ] && break; printf '%s\\n' "$row" >> '${slow}'; sleep 0.1; done < '${rows}'`],
      { stdio: 'ignore' },
    );
    const w = watching(
      ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '1', '--max-wait', '1h', ...QUICK]),
    );
    await ws.put('settle_20260905_a01.csv', file('2026-09-05', 'QUIET'));
    await until('the quiet file archived', async () => (await ws.files('archive')).includes('settle_20260905_a01.csv'));
    await until('its run finished', () => ws.runs().some((run) => run.status === 'finished' && run.loaded === 1));
    // the upload still going: it was waited for by nobody, and nothing of it is recorded
    expect(uploader.exitCode).toBeNull();
    expect(ws.events().filter((event) => event.name === 'settle_20260905_slow.csv')).toEqual([]);
    await writeFile(stopFile, '');
    await new Promise((resolve) => uploader.on('close', resolve));
    const written = (await readFile(slow, 'utf8')).trim().split('\n').length - 1;
    await until('the upload taken once it stood still', async () => (await ws.files('archive')).includes('settle_20260905_slow.csv'));
    expect(await rowsFrom('settle_20260905_slow.csv')).toBe(written);
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });
});

describe('run beside watch', () => {
  it('a run of cron that finds a file the watch is loading holds it, run after run, and exits 0: the watch has it in hand', async () => {
    const ws = await Workspace.create(db.url);
    const at = join(ws.root, 'claimed');
    const go = join(ws.root, 'go');
    const hold = `[ -e "${at}" ] && exit 0; touch "${at}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 12000 ] || exit 1; sleep 0.01; done`;
    const w = watching(
      ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', ...QUICK], {
        SETTLE_TEST_FAULT: 'hook:after-claim',
        SETTLE_TEST_HOOK: hold,
      }),
    );
    await ws.put('settle_20260906_a01.csv', file('2026-09-06', 'BESIDE'));
    await until('the watch holds its claim', () => existsSync(at));
    // more runs than --max-waiting-runs (2) find it held
    for (let night = 0; night < 4; night++) {
      const r = await ws.run();
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/ held=1 /);
    }
    await writeFile(go, '');
    await until('the watch archived it', async () => (await ws.files('archive')).includes('settle_20260906_a01.csv'));
    expect(await rowsFrom('settle_20260906_a01.csv')).toBe(5);
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });
});

describe('after an outage of its PostgreSQL ledger', () => {
  it("the watch finishes the file it had claimed at once, not after that claim's lease (2 h)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-ledger-outage-'));
    const server = await startRestartablePostgres(dir);
    try {
      await server.createDatabase('ledger');
      const ledger = server.url('ledger');
      const ws = await Workspace.create(db.url, { migrate: false });
      expect((await ws.cli(['migrate', '--ledger', ledger])).status).toBe(0);
      const at = join(ws.root, 'at-finalize');
      const go = join(ws.root, 'go');
      const once = `[ -e "${at}" ] && exit 0; touch "${at}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`;
      const metrics = join(ws.root, 'settle.prom');
      const w = watching(
        ws.startRunWith(['watch', '--intake', ws.intake, '--ledger', ledger, '--stable-for', '0', '--metrics-file', metrics, ...QUICK], {
          // the rows committed in the finance database, the ledger not yet told: the ledger's server goes there
          SETTLE_TEST_FAULT: 'hook:after-commit',
          SETTLE_TEST_HOOK: once,
        }),
      );
      await ws.put('settle_20260907_a01.csv', file('2026-09-07', 'LEDGERGONE'));
      await until('the load committed', () => existsSync(at));
      await server.halt();
      await writeFile(go, '');
      await until(
        'a failed try',
        async () => ((await metric(metrics, 'settle_ingest_watch_partner_failures{partner="default"}')) ?? 0) >= 1,
      );
      expect(await ws.files('intake')).toEqual(['settle_20260907_a01.csv']);
      await server.resume();
      // its own claim, whose run ended in this very process, is settled at once: recovered from the file marker and moved
      await until('the file archived', async () => (await ws.files('archive')).includes('settle_20260907_a01.csv'), 60_000);
      expect(await rowsFrom('settle_20260907_a01.csv')).toBe(5);
      const reader = new pg.Client({ connectionString: ledger });
      await reader.connect();
      try {
        const rows = await reader.query<{ state: string }>(
          "SELECT state FROM settle_ledger.processed_files WHERE name = 'settle_20260907_a01.csv'",
        );
        expect(rows.rows).toEqual([{ state: 'loaded' }]);
        const events = await reader.query<{ event: string }>(
          "SELECT event FROM settle_ledger.ledger_events WHERE name = 'settle_20260907_a01.csv' ORDER BY id",
        );
        expect(events.rows.map((row) => row.event)).toContain('recovered');
      } finally {
        await reader.end();
      }
      w.child.kill('SIGTERM');
      expect((await w.done).status).toBe(0);
    } finally {
      await server.stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a partner held by a dead host', () => {
  it('is taken over when the lease ends, not at the next --rescan', async () => {
    const ws = await Workspace.create(db.url, { ledger: 'postgres' });
    const intake = join(ws.root, 'takeover', 'intake');
    const config = await ws.partnersConfig({ takeover: { intake } });
    // a host that died holding the partner: another host's process, its lease 4 s from now
    const lease = await db.client.query<{ until: Date }>(
      `INSERT INTO settle_ledger.partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
       VALUES ('takeover', 'host-gone:4242:x', 'host-gone', 4242, '1', NULL, now(), now() + interval '4 seconds') RETURNING lease_until AS until`,
    );
    await putIn(intake, 'settle_20260908_a01.csv', file('2026-09-08', 'TAKEOVER'));
    const w = watching(ws.startRunWith(['watch', '--config', config, ...EVENTS_ONLY]));
    await until(
      'the file archived',
      async () => (await folderFiles(join(ws.root, 'takeover', 'archive'))).includes('settle_20260908_a01.csv'),
      30_000,
    );
    const [run] = ws.runs().filter((r) => r.partner === 'takeover');
    // taken once the lease had ended (with --rescan and --poll an hour, only the lease's end brought that cycle)
    expect(new Date(String(run!.started_at)).getTime()).toBeGreaterThanOrEqual(Math.floor(lease.rows[0]!.until.getTime() / 1000) * 1000);
    expect(await rowsFrom('settle_20260908_a01.csv')).toBe(5);
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
  });
});
