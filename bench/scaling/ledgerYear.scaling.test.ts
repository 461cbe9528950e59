import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { startEmbeddedPostgres } from '../../src/demo/embeddedPostgres.js';
import { createDatabase } from '../../test/support/harnessPostgres.js';
import { putIn, SHARED_DEFAULT_LAYOUT, Workspace } from '../../test/support/workspace.js';

/**
 * The PostgreSQL ledger after a year: `processed_files` filled in SQL to 0, 1,000,000 and
 * 10,000,000 rows (a run per 1,000 files, a `loaded` event per file, as a year of ~27,000 files a
 * day leaves them), and at each size a run of the built CLI over fresh one-row files: the
 * ledger's statements timed by the server (pg_stat_statements: the server's own time per call,
 * which a shared machine's load on the client does not distort), the run's wall time per file,
 * and every ledger statement the run sent EXPLAINed at 10,000,000 rows (a generic plan: no
 * sequential scan of processed_files or ledger_events may be in one). Its own embedded
 * PostgreSQL 18 (`fsync=off`). Not part of `npm test`:
 * `npm run bench:scaling -- bench/scaling/ledgerYear.scaling.test.ts`
 * (BENCH_LEDGER_ROWS=0,1000000 for fewer sizes; BENCH_LEDGER_FILES files a size, default 200;
 * BENCH_LEDGER_CLAIMED_INDEX=1 adds the partial index on the claims that a run's start needs).
 */

const SIZES = (process.env.BENCH_LEDGER_ROWS ?? '0,1000000,10000000').split(',').map(Number);
const FILES = Number(process.env.BENCH_LEDGER_FILES ?? 200);
/** BENCH_LEDGER_CLAIMED_INDEX=1: the partial index on the claims, which a run's start reads (filesInState('claimed')) */
const CLAIMED_INDEX = process.env.BENCH_LEDGER_CLAIMED_INDEX === '1';
const CLAIMED_INDEX_SQL = "processed_files_claimed ON processed_files (id) WHERE state = 'claimed'";

/** Rows `from` to `to` (exclusive) of the simulated year, in blocks of 1,000,000 (one transaction each). */
async function fillYear(client: pg.Client, from: number, to: number): Promise<void> {
  if (to <= from) return;
  // a bulk load: the indexes no constraint needs dropped and made again after it, the foreign keys'
  // triggers off (every row's run is inserted first), so ten million rows take minutes, not an hour
  const { rows: indexes } = await client.query<{ name: string; definition: string }>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes i
      WHERE schemaname = 'settle_ledger' AND tablename IN ('processed_files', 'ledger_events')
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
  );
  for (const index of indexes) await client.query(`DROP INDEX settle_ledger.${index.name}`);
  await client.query('SET session_replication_role = replica');
  for (let start = from; start < to; start += 1_000_000) {
    const end = Math.min(to, start + 1_000_000);
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO settle_ledger.runs (run_id, mode, host, pid, started_at, ended_at, status, partner, loaded, exit_status)
       SELECT 'year-' || r, 'scheduled', 'host-' || (r % 4), 1000 + r % 50000,
              timestamptz '2025-01-01' + r * interval '32 seconds', timestamptz '2025-01-01' + r * interval '32 seconds' + interval '20 seconds',
              'finished', 'partner-' || (r % 1000), 1000, 0
         FROM generate_series($1::bigint / 1000, ($2::bigint - 1) / 1000) r
       ON CONFLICT DO NOTHING`,
      [start, end],
    );
    await client.query(
      `INSERT INTO settle_ledger.processed_files (name, sha256, content_sha256, state, run_id, size, row_count, location, arrival,
                                                 first_seen_at, updated_at, partner)
       SELECT 'settle_' || i || '.csv', h, h, 'loaded', 'year-' || (i / 1000), 1000 + i % 997, 1 + i % 500,
              '/srv/archive/partner-' || (i % 1000) || '/settle_' || i || '.csv', (1000 + i % 997) || ':' || i,
              timestamptz '2025-01-01' + i * interval '32 milliseconds', timestamptz '2025-01-01' + i * interval '32 milliseconds',
              'partner-' || ((i / 1000) % 1000)
         FROM generate_series($1::bigint, $2::bigint - 1) i, LATERAL (SELECT encode(sha256(int8send(i)), 'hex') AS h) hash`,
      [start, end],
    );
    await client.query(
      `INSERT INTO settle_ledger.ledger_events (run_id, at, event, name, sha256, details, partner)
       SELECT 'year-' || (i / 1000), timestamptz '2025-01-01' + i * interval '32 milliseconds', 'loaded', 'settle_' || i || '.csv',
              encode(sha256(int8send(i)), 'hex'), '{}', 'partner-' || ((i / 1000) % 1000)
         FROM generate_series($1::bigint, $2::bigint - 1) i`,
      [start, end],
    );
    await client.query('COMMIT');
  }
  await client.query('SET session_replication_role = DEFAULT');
  for (const index of indexes) await client.query(index.definition);
  await client.query('ANALYZE settle_ledger.runs, settle_ledger.processed_files, settle_ledger.ledger_events');
}

interface Statement {
  query: string;
  calls: number;
  meanMs: number;
}

/** The ledger's statements since the last reset, by the server's time per call (the finance database's left out). */
async function ledgerStatements(client: pg.Client): Promise<Statement[]> {
  const { rows } = await client.query<{ query: string; calls: string; mean: number }>(
    `SELECT query, calls, mean_exec_time AS mean FROM public.pg_stat_statements
      WHERE query ~ '(processed_files|ledger_events|runs|moves|move_intents|partner_leases|ignored_names)'
        AND query !~* '(pg_stat_statements|^\\s*(BEGIN|COMMIT|ROLLBACK|SET|SHOW|EXPLAIN|ANALYZE)|settle_ledger\\.)'
      ORDER BY calls * mean_exec_time DESC`,
  );
  return rows.map((r) => ({ query: r.query.replace(/\s+/g, ' ').trim(), calls: Number(r.calls), meanMs: r.mean }));
}

/** The distinct statements on the ledger's tables in a server log of `log_statement = all` (the finance database's left out). */
function loggedStatements(log: string): string[] {
  const statements = new Set<string>();
  // an entry starts with the default log_line_prefix's time; a statement's lines follow its first
  for (const entry of log.split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/)) {
    const found = /LOG: {2}(?:execute [^:]*|statement): ([\s\S]*)$/.exec(entry);
    if (!found) continue;
    const statement = found[1]!.trim();
    if (!/\b(processed_files|ledger_events|runs|moves|move_intents|partner_leases|ignored_names)\b/.test(statement)) continue;
    if (!/^(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(statement) || /\bsettle\./.test(statement)) continue;
    statements.add(statement);
  }
  return [...statements];
}

describe('the PostgreSQL ledger after a simulated year', () => {
  it('keeps the per-file claim flat from 0 to 10,000,000 processed_files rows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-bench-ledger-year-'));
    // the server's log, kept while a run's statements are logged (log_statement = 'all' for that run alone)
    const log: string[] = [];
    let keepLog = false;
    await chmod(dir, 0o755); // as root the server runs as the postgres user, which must enter it
    const server = await startEmbeddedPostgres(join(dir, 'pg'), (text) => keepLog && log.push(text), {
      flags: ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'max_wal_size=4GB'],
    });
    try {
      const db = await createDatabase(server.url('postgres'), 'bench_year');
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      client.on('error', () => undefined); // the server's stop ends it
      await client.query('CREATE EXTENSION pg_stat_statements');
      const ws = await Workspace.create(db.url, { ledger: 'postgres' });
      const config = join(ws.root, 'config.json');
      await writeFile(config, JSON.stringify({ ledger: ws.ledger, stableFor: 0, layout: SHARED_DEFAULT_LAYOUT, intake: ws.intake }));
      await client.query('SET search_path = settle_ledger');
      let filled = 0;
      const lines: string[] = [];
      // each size, then the largest again with the partial index on the claims (unless every round has it)
      const rounds = SIZES.map((size) => ({ size, index: CLAIMED_INDEX }));
      if (!CLAIMED_INDEX) rounds.push({ size: SIZES.at(-1)!, index: true });
      for (const [round, { size, index }] of rounds.entries()) {
        const fillStart = performance.now();
        await fillYear(client, filled, size);
        const fillSeconds = (performance.now() - fillStart) / 1000;
        // the index a run's start needs at a year (docs/SCALING.md), where the ledger's migrations do not have it yet
        if (index) await client.query(`CREATE INDEX IF NOT EXISTS ${CLAIMED_INDEX_SQL}`);
        filled = size;
        for (let i = 0; i < FILES; i++) {
          const idPrefix = `Y${round}F${i}`;
          await putIn(ws.intake, `settle_r${round}_${i}.csv`, sampleSettlement({ date: '2026-01-02', rows: 1, idPrefix }).text);
        }
        // the run at the largest size without the index: every statement's plan
        const last = round === SIZES.length - 1;
        if (last) await client.query("ALTER DATABASE bench_year SET log_statement = 'all'");
        await client.query('SELECT public.pg_stat_statements_reset()');
        keepLog = last;
        const started = performance.now();
        const result = await ws.cli(['run', '--config', config, '--json']);
        const wallMs = performance.now() - started;
        keepLog = false;
        if (last) await client.query('ALTER DATABASE bench_year RESET log_statement');
        expect(result.status, result.stderr).toBe(0);
        const statements = await ledgerStatements(client);
        const loaded = await client.query<{ n: string }>(
          "SELECT count(*) AS n FROM processed_files WHERE state = 'loaded' AND name LIKE $1",
          [`settle\\_r${round}\\_%`],
        );
        expect(Number(loaded.rows[0]!.n)).toBe(FILES);
        const perFile = statements.reduce((sum, s) => sum + s.calls * s.meanMs, 0) / FILES;
        const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM processed_files');
        lines.push(
          `processed_files ${Number(rows[0]!.n).toLocaleString('en')} rows${index ? ', with processed_files_claimed' : ''} (filled in ${fillSeconds.toFixed(0)} s): the run's ${FILES} files ${(wallMs / FILES).toFixed(1)} ms each (wall, exec to exit / files); the ledger's statements ${perFile.toFixed(3)} ms of server time a file`,
        );
        for (const s of statements.slice(0, 12)) lines.push(`    ${s.calls}× ${s.meanMs.toFixed(3)} ms  ${s.query.slice(0, 150)}`);
        if (last) {
          lines.push('  plans at this size (EXPLAIN (GENERIC_PLAN) of each ledger statement the run sent, as it sent it):');
          for (const statement of loggedStatements(log.join(''))) {
            const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (GENERIC_PLAN) ${statement}`);
            const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n      ');
            lines.push(`    ${statement.replace(/\s+/g, ' ').slice(0, 200)}\n      ${text}`);
            expect(text, statement).not.toMatch(/Seq Scan on (processed_files|ledger_events)/);
            // an index read whole (no Index Cond, only a Filter) is a scan of the table by another name
            const estimated = Math.max(...[...text.matchAll(/rows=(\d+)/g)].map((m) => Number(m[1])));
            if (estimated > 10_000) lines.push(`      ^ READS THE TABLE: an estimated ${estimated.toLocaleString('en')} rows`);
          }
        }
      }
      console.log(lines.join('\n'));
      await client.end();
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
