import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { startTestPostgres, type RunningPostgres } from '../../test/support/postgresServer.js';
import { finished } from '../../test/support/cli.js';
import { createDatabase } from '../../test/support/harnessPostgres.js';
import { canName, spawnHost, startHost } from '../../test/support/hosts.js';
import { putIn, Workspace } from '../../test/support/workspace.js';

/**
 * Partners leased across 1, 2 and 4 hosts over one PostgreSQL ledger: a config of
 * BENCH_HOSTS_PARTNERS partners (default 1,000) × BENCH_HOSTS_FILES one-row files (default 10),
 * each partner its own local intake; the hosts (UTS namespaces with host names of their own, as
 * test/integration/multiHost.test.ts starts them) run `run --config` at once. Measured: wall
 * time to the last host's exit, the hosts' CPU, the PostgreSQL server's CPU and its statements
 * (pg_stat_statements), the load average before and after; proved: every file loaded once (its
 * rows in the finance table once, one `processed_files` row, `loaded`, one `loaded` event and
 * one move in the ledger, in the archive once, out of the intake), each partner worked by one
 * host at a time. Then the take-over after a kill -9: a
 * host killed right after its claim (the test build's `SETTLE_TEST_FAULT=after-claim` SIGKILLs
 * itself there), and `watch` on another host: how long from the kill until the file is
 * archived, against `--claim-lease` (60 s, the least allowed). Its own embedded PostgreSQL 18
 * (`fsync=off`); needs root for the UTS namespaces. Not part of `npm test`:
 * `npm run bench:scaling -- bench/scaling/multiHost.scaling.test.ts` (BENCH_HOSTS=1,2,4).
 */

const HOSTS = (process.env.BENCH_HOSTS ?? '1,2,4').split(',').map(Number);
const PARTNERS = Number(process.env.BENCH_HOSTS_PARTNERS ?? 1000);
const FILES = Number(process.env.BENCH_HOSTS_FILES ?? 10);
/** BENCH_PROFILE=DIR: each host under `node --cpu-prof`, its profile in DIR */
const PROFILE = process.env.BENCH_PROFILE;
/** BENCH_TAKEOVER=0: the configurations only, not the kill -9 */
const TAKEOVER = process.env.BENCH_TAKEOVER !== '0';

const partnerName = (p: number) => `p${String(p).padStart(4, '0')}`;

/** A night of PARTNERS × FILES files on a fresh finance database and ledger of `server`. */
async function night(server: RunningPostgres, name: string): Promise<{ ws: Workspace; client: pg.Client; config: string }> {
  const db = await createDatabase(server.url('postgres'), name);
  const ws = await Workspace.create(db.url, { ledger: 'postgres' });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  client.on('error', () => undefined); // the server's stop ends it
  const partners: Record<string, { intake: string }> = {};
  for (let p = 0; p < PARTNERS; p++) {
    const intake = join(ws.root, partnerName(p), 'intake');
    partners[partnerName(p)] = { intake };
    for (let f = 0; f < FILES; f++) {
      const idPrefix = `${partnerName(p).toUpperCase()}F${f}`;
      await putIn(intake, `settle_2026070${f % 10}_${f}.csv`, sampleSettlement({ date: '2026-07-01', rows: 1, idPrefix }).text);
    }
  }
  return { ws, client, config: await ws.partnersConfig(partners) };
}

/** /proc/PID/stat's fields after the command's name (field 3 onwards), or undefined for a process gone. */
function statFields(pid: string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) of this process's children that have ended so far (/proc/self/stat's cutime and cstime). */
function childrenCpu(): number {
  const fields = statFields('self')!;
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * CPU seconds (user + system) the PostgreSQL server has used so far: its postmaster's own and its
 * ended backends' (cutime, cstime: a backend ends with its connection, one a partner's run), and
 * its living processes' own.
 */
function serverCpu(dataDir: string): number {
  const postmaster = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!.trim();
  const own = statFields(postmaster)!;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const fields = statFields(pid);
    if (fields?.[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

const loadAverage = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** The server's time (pg_stat_statements: both databases, all statements) and its 15 costliest statements of a configuration; BENCH_STATEMENTS=N shows N */
async function serverStatements(client: pg.Client, hosts: number): Promise<string> {
  const { rows } = await client.query<{ query: string; calls: string; total: number; mean: number }>(
    `SELECT query, calls, total_exec_time AS total, mean_exec_time AS mean FROM public.pg_stat_statements
      WHERE query !~* 'pg_stat_statements' ORDER BY total_exec_time DESC LIMIT $1`,
    [Number(process.env.BENCH_STATEMENTS ?? 15)],
  );
  const all = await client.query<{ total: number; calls: string }>(
    'SELECT sum(total_exec_time) AS total, sum(calls) AS calls FROM public.pg_stat_statements',
  );
  return [
    `${hosts} host(s), the server's statements: ${Number(all.rows[0]!.calls)} calls, ${(Number(all.rows[0]!.total) / 1000).toFixed(1)} s in all`,
    ...rows.map(
      (r) => `  ${(r.total / 1000).toFixed(2)} s ${r.calls} calls ${r.mean.toFixed(3)} ms: ${r.query.replace(/\s+/g, ' ').slice(0, 160)}`,
    ),
  ].join('\n');
}

describe.skipIf(!canName)('partners leased across hosts over one PostgreSQL ledger', () => {
  it(`${PARTNERS} partners × ${FILES} files on ${HOSTS.join(', ')} hosts, and a kill -9's take-over`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-bench-hosts-'));
    const server = await startTestPostgres(dir, {
      flags: ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all'],
    });
    const dataDir = join(dir, 'pg', 'data');
    const lines: string[] = [];
    try {
      for (const hosts of HOSTS) {
        const n = await night(server, `bench_hosts_${hosts}`);
        await n.client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');
        const cpuBefore = childrenCpu();
        const serverBefore = serverCpu(dataDir);
        const loadBefore = loadAverage();
        const started = performance.now();
        const results = await Promise.all(
          Array.from({ length: hosts }, (_, h) =>
            startHost(
              { root: n.ws.root, databaseUrl: n.ws.databaseUrl },
              `host-${h}`,
              ['run', '--config', n.config, '--json'],
              {},
              PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [],
            ),
          ),
        );
        const wallSeconds = (performance.now() - started) / 1000;
        const cpuSeconds = childrenCpu() - cpuBefore;
        const serverSeconds = serverCpu(dataDir) - serverBefore;
        const loadAfter = loadAverage();
        for (const r of results) expect(r.status, r.stderr.slice(0, 2000)).toBe(0);
        // each file once: its row in the finance table once, one loaded row in the ledger, archived once, gone from its intake
        const total = PARTNERS * FILES;
        const finance = await n.client.query<{ rows: string; ids: string }>(
          'SELECT count(*) AS rows, count(DISTINCT transaction_id) AS ids FROM settle.settlement_rows',
        );
        expect(Number(finance.rows[0]!.rows)).toBe(total);
        expect(Number(finance.rows[0]!.ids)).toBe(total);
        const ledger = await n.client.query<{ n: string; names: string }>(
          "SELECT count(*) AS n, count(DISTINCT (partner, name)) AS names FROM settle_ledger.processed_files WHERE state = 'loaded'",
        );
        expect(Number(ledger.rows[0]!.n)).toBe(total);
        expect(Number(ledger.rows[0]!.names)).toBe(total);
        const rowsAndEvents = await n.client.query<{ files: string; loaded: string; moved: string }>(
          `SELECT (SELECT count(*) FROM settle_ledger.processed_files) AS files,
                  (SELECT count(*) FROM settle_ledger.ledger_events WHERE event = 'loaded') AS loaded,
                  (SELECT count(*) FROM settle_ledger.moves) AS moved`,
        );
        expect(rowsAndEvents.rows[0]).toEqual({ files: String(total), loaded: String(total), moved: String(total) });
        let archived = 0;
        for (let p = 0; p < PARTNERS; p++) {
          const partnerDir = join(n.ws.root, partnerName(p));
          expect(await readdir(join(partnerDir, 'intake'))).toEqual([]);
          archived += (await readdir(join(partnerDir, 'archive'), { recursive: true }).catch(() => [])).filter((f) =>
            f.endsWith('.csv'),
          ).length;
        }
        expect(archived).toBe(total);
        // each partner's runs one after the other, whoever ran them
        const overlaps = await n.client.query<{ n: string }>(
          `SELECT count(*) AS n FROM settle_ledger.runs a JOIN settle_ledger.runs b
             ON a.partner = b.partner AND a.run_id < b.run_id AND a.started_at < b.ended_at AND b.started_at < a.ended_at`,
        );
        expect(Number(overlaps.rows[0]!.n)).toBe(0);
        const byHost = await n.client.query<{ host: string; partners: string; loaded: string }>(
          `SELECT host, count(DISTINCT partner) AS partners, sum(loaded) AS loaded FROM settle_ledger.runs GROUP BY host ORDER BY host`,
        );
        const split = byHost.rows.map((r) => `${r.host} ${r.partners} partners/${r.loaded} files`).join(', ');
        lines.push(
          `${hosts} host(s): ${total} files in ${wallSeconds.toFixed(1)} s wall = ${((total / wallSeconds) * 60).toFixed(0)} files a minute; the hosts' CPU ${cpuSeconds.toFixed(1)} s (${((cpuSeconds * 1000) / total).toFixed(1)} ms a file), the PostgreSQL server's ${serverSeconds.toFixed(1)} s (${((serverSeconds * 1000) / total).toFixed(1)} ms a file); load average ${loadBefore} before, ${loadAfter} after; ${split}; each file once`,
        );
        lines.push(await serverStatements(n.client, hosts));
        await n.client.end();
        await rm(n.ws.root, { recursive: true, force: true }); // its 10,000 files, archived
      }
      if (!TAKEOVER) {
        console.log(lines.join('\n'));
        return;
      }

      // the take-over after a kill -9: host-a dies holding a partner's lease and a claim; host-b's watch takes it over
      const PARTNER_FILES = 1;
      const db = await createDatabase(server.url('postgres'), 'bench_takeover');
      const ws = await Workspace.create(db.url, { ledger: 'postgres' });
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const intake = join(ws.root, 'solo', 'intake');
      const archive = join(ws.root, 'solo', 'archive');
      await putIn(intake, 'settle_20260701_solo.csv', sampleSettlement({ date: '2026-07-01', rows: PARTNER_FILES, idPrefix: 'SOLO' }).text);
      const config = await ws.partnersConfig({ solo: { intake } }, { claimLease: '60s' });
      const killed = await startHost({ root: ws.root, databaseUrl: ws.databaseUrl }, 'host-a', ['run', '--config', config], {
        SETTLE_TEST_FAULT: 'after-claim',
      });
      const killedAt = performance.now();
      const takeOverLoad = loadAverage();
      expect(killed.signal).toBe('SIGKILL');
      const lease = await client.query<{ left: number }>(
        "SELECT extract(epoch FROM lease_until - now()) AS left FROM settle_ledger.partner_leases WHERE partner = 'solo'",
      );
      const watch = await spawnHost({ root: ws.root, databaseUrl: ws.databaseUrl }, 'host-b', ['watch', '--config', config]);
      const watched = finished(watch);
      const archivedFile = async () =>
        existsSync(archive) && (await readdir(archive, { recursive: true })).some((f) => f.endsWith('settle_20260701_solo.csv'));
      // a poll of the archive (an effect), with a deadline: the figure is when it appeared, to 50 ms
      for (const deadline = performance.now() + 600_000; !(await archivedFile());) {
        if (performance.now() > deadline) throw new Error('the killed host\u2019s partner was not taken over in 10 minutes');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const takeOverSeconds = (performance.now() - killedAt) / 1000;
      watch.kill('SIGTERM');
      await watched;
      const rows = await client.query<{ n: string }>("SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'SOLO-%'");
      expect(Number(rows.rows[0]!.n)).toBe(PARTNER_FILES);
      const died = await client.query<{ status: string }>("SELECT status FROM settle_ledger.runs WHERE host = 'host-a'");
      lines.push(
        `kill -9 after the claim, --claim-lease 60s: the lease had ${Number(lease.rows[0]!.left).toFixed(1)} s left at the kill; another host's watch archived the file ${takeOverSeconds.toFixed(1)} s after the kill (${(takeOverSeconds - Number(lease.rows[0]!.left)).toFixed(1)} s past the lease's end); the killed run is ${died.rows.map((r) => r.status).join(', ')}; load average ${takeOverLoad} at the kill`,
      );
      await client.end();
      await rm(ws.root, { recursive: true, force: true });
      console.log(lines.join('\n'));
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
