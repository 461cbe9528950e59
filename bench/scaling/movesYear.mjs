// The start of each partner's run over a year of moves: the statement of `movesSince` (the files
// moved in the last 48 hours, looked at again for a change where they landed:
// src/pipeline/moveDecided.ts filesChangedAfterMove) on a PostgreSQL ledger whose `moves` holds N
// rows (default 3,650,000: 1,000 partners × 10 files a night for a year), timed over 20 partners
// as the run sends it, without the index on moves (partner, at) that ledger schema 20 creates, then
// with it (the index dropped before the fill, built again after the first measure). Then the
// look at the runs without an end (`openRuns`, src/pipeline/startOfRun.ts: every partner's run
// asks it) over a year's runs (1,000 partners a night: N / 10 rows), without and with the
// partial index `runs_open` of ledger schema 21. Its own embedded PostgreSQL in a temporary
// folder. Prints the times and the plans.
// Usage: node bench/scaling/movesYear.mjs [N]   (after `npm run build`)
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../dist/demo/embeddedPostgres.js';
import { openPgLedger } from '../../dist/ledger/pgLedger.js';
import { OPEN_RUNS_SQL } from '../../dist/ledger/sqlLedger.js';

const N = Number(process.argv[2] ?? 3_650_000);
const PER_NIGHT = 10_000;
const dir = await mkdtemp(join(tmpdir(), 'settle-bench-moves-'));
await chmod(dir, 0o755); // as root the server runs as the postgres user, which must enter it
const server = await startEmbeddedPostgres(join(dir, 'pg'));
try {
  const url = server.url('postgres');
  await (await openPgLedger(url, { create: true })).close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  client.on('error', () => undefined); // the server's stop ends it
  await client.query('SET search_path = settle_ledger');
  await client.query('DROP INDEX IF EXISTS moves_by_partner'); // measured first as a ledger before schema 20
  await client.query('DROP INDEX IF EXISTS runs_open'); // and before schema 21
  const nights = Math.ceil(N / PER_NIGHT);
  await client.query(
    `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, partner)
     SELECT 'r' || d, 'manual', 'h', 1, now() - make_interval(days => d), now() - make_interval(days => d) + interval '1 minute', 'finished', 'p'
       FROM generate_series(0, $1) d`,
    [nights],
  );
  // a night's files at one time a night, counting back from now; partner i % 1,000
  const filled = performance.now();
  await client.query(
    `INSERT INTO moves (location, name, sha256, arrival, run_id, at, landed, partner)
     SELECT 'archive/' || i, 'f' || i, md5(i::text), '1:1', 'r' || (i / $2), now() - make_interval(days => i / $2), '1:1',
            'p' || lpad((i % 1000)::text, 4, '0')
       FROM generate_series(0, $1 - 1) i`,
    [N, PER_NIGHT],
  );
  await client.query('ANALYZE moves');
  console.log(`${N} moves filled in ${((performance.now() - filled) / 1000).toFixed(1)} s`);
  // the statement as the run sends it (src/ledger/sqlLedger.ts movesSince, ledger_after(?) as pgClockSql makes it)
  const sql = `SELECT location, name, sha256, run_id, at, landed FROM moves
    WHERE at >= (date_trunc('milliseconds', now()) + make_interval(secs => $1)) AND landed IS NOT NULL AND partner = $2`;
  const measure = async (label) => {
    const ms = [];
    let rows = 0;
    for (let p = 0; p < 20; p++) {
      const started = performance.now();
      rows += (await client.query(sql, [-48 * 3600, `p${String(p * 37).padStart(4, '0')}`])).rowCount ?? 0;
      ms.push(performance.now() - started);
    }
    ms.sort((a, b) => a - b);
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql.replace('$1', '-172800').replace('$2', "'p0037'")}`);
    console.log(`${label}: median ${ms[10].toFixed(1)} ms a partner (least ${ms[0].toFixed(1)}), ${rows / 20} moves a partner found`);
    console.log(plan.rows.map((r) => `  ${r['QUERY PLAN']}`).join('\n'));
  };
  await measure('moves without an index on partner');
  const indexed = performance.now();
  await client.query('CREATE INDEX moves_by_partner ON moves (partner, at)'); // as sql/ledger*/000020 makes it
  console.log(`index (partner, at) built in ${((performance.now() - indexed) / 1000).toFixed(1)} s`);
  await measure('with moves (partner, at), ledger schema 20');

  // a year's runs: 1,000 partners a night, finished, and three without an end (one running, two dead)
  await client.query(
    `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, partner)
     SELECT 'y' || i, 'scheduled', 'host-a', 1000 + i % 30000, now() - make_interval(secs => i * 86.4),
            now() - make_interval(secs => i * 86.4 - 30), 'finished', 'p' || lpad((i % 1000)::text, 4, '0')
       FROM generate_series(1, $1) i`,
    [Math.round(N / 10)],
  );
  await client.query(
    `INSERT INTO runs (run_id, mode, host, pid, started_at, status, partner)
     VALUES ('open-1', 'scheduled', 'host-a', 1, now(), 'running', 'p0001'), ('open-2', 'scheduled', 'host-b', 2, now() - interval '2 days', 'running', 'p0002'),
            ('open-3', 'scheduled', 'host-a', 3, now() - interval '9 days', 'running', 'p0003')`,
  );
  await client.query('ANALYZE runs');
  const measureOpen = async (label) => {
    const ms = [];
    for (let turn = 0; turn < 20; turn++) {
      const started = performance.now();
      await client.query(OPEN_RUNS_SQL);
      ms.push(performance.now() - started);
    }
    ms.sort((a, b) => a - b);
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${OPEN_RUNS_SQL}`);
    console.log(`${label}: median ${ms[10].toFixed(2)} ms a partner's run (least ${ms[0].toFixed(2)})`);
    console.log(plan.rows.map((r) => `  ${r['QUERY PLAN']}`).join('\n'));
  };
  const { rows: runCount } = await client.query('SELECT count(*)::int AS n FROM runs');
  await measureOpen(`the runs without an end, of ${runCount[0].n.toLocaleString('en')} runs, no partial index`);
  await client.query('CREATE INDEX runs_open ON runs (started_at) WHERE ended_at IS NULL'); // as sql/ledger*/000021 makes it
  await client.query('ANALYZE runs');
  await measureOpen('with runs_open, ledger schema 21');
  await client.end();
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
