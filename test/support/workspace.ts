import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { runCli, startCli, type CliResult } from './cli.js';
import { createDatabase } from './harnessPostgres.js';
import { removeAfterPassing } from './leftovers.js';
import { querySync } from './syncQuery.js';

/**
 * The CLI as this project runs it: the built test CLI as a subprocess (`runCli`: the integration
 * project), or in the db project, which builds nothing and whose coverage sees the code it runs,
 * its own `main(argv)` in this process (test/support/inProcessCli.ts). Workspaces run every
 * command through it, so a scenario that needs no process of its own moves between the two
 * projects as it is.
 */
export async function runCommand(args: string[], env: Record<string, string> = {}, opts: { cwd?: string } = {}): Promise<CliResult> {
  if (inject('inProcessCli') === true) return (await import('./inProcessCli.js')).runInProcess(args, env, opts);
  return runCli(args, env, opts);
}

/** A fresh finance database for one test file, cloned from the migrated template (the db project's: an empty one). */
export async function financeDatabase(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; client: pg.Client; close(): Promise<void> }> {
  const name = `settle_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const { url, drop } = await createDatabase(
    inject('pgAdminUrl'),
    name,
    (opts.migrated ?? true) ? { template: inject('templateDatabase') } : {},
  );
  removeAfterPassing(`database ${name} (lost with the embedded server unless TEST_DATABASE_URL is set)`, drop);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return { url, client, close: () => client.end() };
}

/**
 * The default layout with its table named: two partners of a test that both load into
 * `settlement_rows` say so (a config lets partners share a table only when each one's layout names it).
 */
export const SHARED_DEFAULT_LAYOUT = { extends: 'default', table: 'settlement_rows' } as const;

export type FinanceDatabase = Awaited<ReturnType<typeof financeDatabase>>;

/** One finance database for all tests of a file: created before them, closed after them. */
export function sharedFinanceDatabase(): FinanceDatabase {
  let current: FinanceDatabase | undefined;
  beforeAll(async () => {
    current = await financeDatabase();
  });
  afterAll(async () => current?.close());
  return {
    get url() {
      return current!.url;
    },
    get client() {
      return current!.client;
    },
    close: () => current!.close(),
  };
}

export interface FileRowView {
  name: string;
  sha256: string;
  state: string;
  run_id: string;
  row_count: number | null;
  reason: string | null;
  location: string | null;
}

export type LedgerStore = 'sqlite' | 'postgres';

/** One query on a PostgreSQL ledger (schema settle_ledger), synchronously, so that both stores share the accessors below; `?` placeholders. */
function pgLedgerQuery<T>(url: string, sql: string, params: unknown[]): T[] {
  let n = 0;
  return querySync<T>(
    url,
    sql.replace(/\?/g, () => `$${++n}`),
    params,
    'settle_ledger',
  );
}

/** An intake with its sibling folders and a migrated ledger, in a temporary folder. */
export class Workspace {
  readonly intake: string;
  readonly archive: string;
  readonly duplicates: string;
  readonly rejected: string;
  readonly ledger: string;

  private constructor(
    readonly root: string,
    readonly databaseUrl: string,
    readonly store: LedgerStore,
  ) {
    this.intake = join(root, 'intake');
    this.archive = join(root, 'archive');
    this.duplicates = join(root, 'duplicates');
    this.rejected = join(root, 'rejected');
    // a PostgreSQL ledger lives in the test's finance database (schema settle_ledger)
    this.ledger = store === 'postgres' ? databaseUrl : join(root, 'ledger.sqlite');
  }

  static async create(databaseUrl: string, opts: { migrate?: boolean; ledger?: LedgerStore } = {}): Promise<Workspace> {
    const ws = new Workspace(await mkdtemp(join(tmpdir(), 'settle-ws-')), databaseUrl, opts.ledger ?? 'sqlite');
    await mkdir(ws.intake);
    if (opts.migrate ?? true) {
      const r = await ws.cli(['migrate', '--ledger', ws.ledger]);
      if (r.status !== 0) throw new Error(`migrate failed: ${r.stderr}`);
    }
    return ws;
  }

  /**
   * A workspace for one partner whose config file (`partner.json`) is this layout (a preset's
   * name or an object) and file pattern, its ledger and layout table migrated with that config.
   */
  static async forLayout(databaseUrl: string, layout: unknown, pattern: string): Promise<{ ws: Workspace; config: string }> {
    const ws = await Workspace.create(databaseUrl, { migrate: false });
    const config = join(ws.root, 'partner.json');
    await writeFile(config, JSON.stringify({ layout, pattern }));
    const migrated = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
    expect(migrated.stderr).toBe('');
    expect(migrated.status).toBe(0);
    return { ws, config };
  }

  /**
   * A config file of several partners in the workspace (`config.json`): its ledger, the
   * completeness wait off and the shared default layout at the top, then `top`, and each partner's
   * own settings under its name.
   */
  async partnersConfig(partners: Record<string, Record<string, unknown>>, top: Record<string, unknown> = {}): Promise<string> {
    const path = join(this.root, 'config.json');
    await writeFile(path, JSON.stringify({ ledger: this.ledger, stableFor: 0, layout: SHARED_DEFAULT_LAYOUT, ...top, partners }, null, 2));
    return path;
  }

  cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
    return runCommand(args, { DATABASE_URL: this.databaseUrl, ...env }, { cwd: this.root });
  }

  runArgs(extra: string[] = []): string[] {
    return ['run', '--intake', this.intake, '--ledger', this.ledger, '--stable-for', '0', ...extra];
  }

  /** One ingest run with the completeness wait off, unless `extra` sets it. */
  run(extra: string[] = [], env: Record<string, string> = {}): Promise<CliResult> {
    return this.cli(this.runArgs(extra), env);
  }

  /**
   * `run --reprocess` of one archived file by a partner's config, for a reason, as an operator
   * types it after a fix; `extra` after (`--json`, `--dry-run`).
   */
  reprocess(config: string, file: string, reason: string, extra: string[] = []): Promise<CliResult> {
    return this.cli([
      'run',
      '--reprocess',
      '--config',
      config,
      '--intake',
      this.intake,
      '--ledger',
      this.ledger,
      '--reason',
      reason,
      '--files',
      file,
      ...extra,
    ]);
  }

  startRun(extra: string[] = [], env: Record<string, string> = {}) {
    return this.startRunWith(this.runArgs(extra), env);
  }

  startRunWith(args: string[], env: Record<string, string> = {}) {
    return startCli(args, { DATABASE_URL: this.databaseUrl, ...env }, { cwd: this.root });
  }

  /** Writes a file into the intake, its mtime an hour old unless told otherwise (an upload long finished). */
  async put(name: string, content: string | Buffer, opts: { fresh?: boolean } = {}): Promise<string> {
    const path = join(this.intake, name);
    await writeFile(path, content);
    if (!opts.fresh) {
      const old = new Date(Date.now() - 3600_000);
      await utimes(path, old, old);
    }
    return path;
  }

  async files(folder: 'intake' | 'archive' | 'duplicates' | 'rejected'): Promise<string[]> {
    return (await readdir(join(this.root, folder)).catch(() => [])).sort();
  }

  read(folder: 'intake' | 'archive' | 'duplicates' | 'rejected', name: string): Promise<Buffer> {
    return readFile(join(this.root, folder, name));
  }

  /** A read of the ledger, whichever store it is in; `?` placeholders. */
  query<T>(sql: string, ...params: unknown[]): T[] {
    if (this.store === 'postgres') return pgLedgerQuery<T>(this.ledger, sql, params);
    const db = new Database(this.ledger, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all(...params) as T[];
    } finally {
      db.close();
    }
  }

  ledgerFiles(): FileRowView[] {
    return this.query<FileRowView>('SELECT name, sha256, state, run_id, row_count, reason, location FROM processed_files ORDER BY id');
  }

  ledgerFile(name: string): FileRowView | undefined {
    return this.ledgerFiles().find((f) => f.name === name);
  }

  events(): { run_id: string | null; partner: string; event: string; name: string; details: Record<string, unknown> }[] {
    return this.query<{ run_id: string | null; partner: string; event: string; name: string; details: string }>(
      'SELECT run_id, partner, event, name, details FROM ledger_events ORDER BY id',
    ).map((e) => ({ ...e, details: JSON.parse(e.details) as Record<string, unknown> }));
  }

  runs(): (Record<string, unknown> & {
    run_id: string;
    status: string | null;
    reason: string | null;
    loaded: number;
    skipped: number;
    held: number;
    rejected: number;
    failed: number;
    exit_status: number;
  })[] {
    return this.query(`SELECT * FROM runs ORDER BY started_at, ${this.store === 'postgres' ? 'run_id' : 'rowid'}`);
  }

  /** A claim of a run whose process is gone (run `r-dead`), as a SIGKILL during a load leaves it. */
  stageDeadClaim(name: string, sha256 = 'c'.repeat(64)): void {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    this.withLedger((l) => {
      const at = new Date().toISOString();
      l.prepare(`INSERT INTO runs (run_id, mode, host, pid, started_at) VALUES ('r-dead', 'scheduled', ?, ?, ?)`).run(hostname(), dead, at);
      l.prepare(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, owner_host, owner_pid, owner_started_at, lease_until, first_seen_at, updated_at)
         VALUES (?, ?, 'claimed', 'r-dead', 1, ?, ?, '1', ?, ?, ?)`,
      ).run(name, sha256, hostname(), dead, new Date(Date.now() + 3600_000).toISOString(), at, at);
    });
  }

  /** Raw write access, for staging another run's state (a live claim, a stale one). */
  withLedger<T>(fn: (db: Database.Database) => T): T {
    if (this.store !== 'sqlite') throw new Error('withLedger is for the SQLite ledger');
    const db = new Database(this.ledger);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  }
}

/** A workspace whose ledger is PostgreSQL, in a finance database of its own (closed after `test`). */
export async function withPgLedger(test: (ws: Workspace, db: FinanceDatabase) => Promise<void>): Promise<void> {
  const db = await financeDatabase();
  try {
    await test(await Workspace.create(db.url, { ledger: 'postgres' }), db);
  } finally {
    await db.close();
  }
}

/** Parses the `run … done: loaded=1 skipped=0 …` line into numbers. */
export function parseSummary(stdout: string): Record<string, number> & { run: string } {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const m = /^run (\S+) (?:done|stopped): (.*)$/.exec(line);
  if (!m) throw new Error(`no summary line in: ${stdout}`);
  const counts: Record<string, number> = {};
  for (const kv of m[2]!.split(' ')) {
    const [k, v] = kv.split('=');
    if (k && v !== undefined && /^\d+$/.test(v)) counts[k] = Number(v);
  }
  return Object.assign(counts, { run: m[1]! });
}

/**
 * Makes runs started together overlap for sure: at its first claim each run waits (a minute at
 * most, then its hook fails) until `runs` runs have claimed something. Nothing is timed: the
 * barrier is a condition, met once every run holds a claim in the ledger.
 */
export async function claimBarrier(ws: Workspace, runs: number): Promise<Record<string, string>> {
  const dir = join(ws.root, 'claim-barrier');
  await mkdir(dir, { recursive: true });
  const wait = `touch "${dir}/$PPID"; i=0; while [ "$(ls "${dir}" | wc -l)" -lt ${runs} ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`;
  return { SETTLE_TEST_FAULT: 'hook:after-claim', SETTLE_TEST_HOOK: wait };
}

/** Proof from the ledger that the runs held it at once: each began before the others ended, each claimed a file. */
export function expectOverlapped(ws: Workspace, runIds: string[]): void {
  const runs = ws.runs().filter((r) => runIds.includes(r.run_id));
  expect(runs).toHaveLength(runIds.length);
  for (const a of runs) {
    for (const b of runs) {
      if (a !== b) expect(String(a.started_at) < String(b.ended_at), `${a.run_id} began after ${b.run_id} ended`).toBe(true);
    }
  }
  const claimed = ws.events().filter((e) => e.event === 'claimed');
  for (const id of runIds) expect(claimed.filter((e) => e.run_id === id).length, `claims of ${id}`).toBeGreaterThan(0);
}

/**
 * After runs that overlapped: no file counted as loaded or skipped by more than one run,
 * archive/ holds distinct contents, and duplicates/ only contents that archive/ has.
 */
export async function expectCleanSplit(ws: Workspace, summaries: { files: { name: string; outcome: string }[] }[]): Promise<void> {
  const { createHash } = await import('node:crypto');
  const counted = summaries.flatMap((s) => s.files.filter((f) => f.outcome === 'loaded' || f.outcome === 'skipped').map((f) => f.name));
  expect(new Set(counted).size, `counted twice: ${counted.join(', ')}`).toBe(counted.length);
  const sha = async (folder: 'archive' | 'duplicates', name: string) =>
    createHash('sha256')
      .update(await ws.read(folder, name))
      .digest('hex');
  const archived = await Promise.all((await ws.files('archive')).map((n) => sha('archive', n)));
  expect(new Set(archived).size).toBe(archived.length);
  for (const name of await ws.files('duplicates')) expect(archived).toContain(await sha('duplicates', name));
}

/** How many settlement rows carry transaction ids with this prefix (the sample files' `PREFIX-n`). */
export async function rowsWithPrefix(db: { client: pg.Client }, prefix: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE $1`, [
    `${prefix}-%`,
  ]);
  return Number(r.rows[0]!.n);
}

/**
 * The default table's rows with their provenance spelled out (each row carries its load; the
 * load names the content and run, the file marker the file name): for tests that ask which
 * file or run a row came from.
 */
export const ROWS_WITH_SOURCE = `(SELECT r.*, l.sha256 AS source_sha256, f.file_name AS source_name, l.run_id
    FROM settle.settlement_rows r JOIN settle.loads l ON l.load_id = r.load_id JOIN settle.file_loads f ON f.sha256 = l.sha256) AS sourced`;

/** A settlement file in `folder` (made if need be), an hour old: an upload long finished. */
export async function putIn(folder: string, name: string, text: string): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, name), text);
  const old = new Date(Date.now() - 3600_000);
  await utimes(join(folder, name), old, old);
}
