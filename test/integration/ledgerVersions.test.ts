import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { latestMigration, type MigrationSet } from '../../src/db/migrationFiles.js';
import { financeDatabase, sharedFinanceDatabase, Workspace, type FinanceDatabase, type LedgerStore } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const LEDGER_SQL = new URL('../../sql/ledger/', import.meta.url).pathname;

/** A ledger as an older release left it: only the migrations up to `version` applied, the way migrate records them. */
function ledgerAtVersion(path: string, version: number): Database.Database {
  const l = new Database(path);
  l.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  for (const file of readdirSync(LEDGER_SQL).sort()) {
    const m = /^(\d{6})_(\w+)\.sql$/.exec(file);
    if (!m || Number(m[1]) > version) continue;
    l.exec(readFileSync(join(LEDGER_SQL, file), 'utf8'));
    l.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(Number(m[1]), m[2], '2026-01-01T00:00:00.000Z');
  }
  return l;
}

/** The schema numbers the release before this one shipped, as RELEASE_NOTES.md states them (its second release heading). */
function previousRelease(): { version: string; ledger: number; finance: number } {
  const notes = readFileSync(new URL('../../RELEASE_NOTES.md', import.meta.url), 'utf8');
  const released = notes.split(/^## /m).filter((section) => /^\d+\.\d+\.\d+ — /.test(section));
  const text = released[1]!;
  return {
    version: text.slice(0, text.indexOf(' ')),
    ledger: Number(/ledger schema (\d+)/i.exec(text)![1]),
    finance: Number(/finance schema (\d+)/i.exec(text)![1]),
  };
}

/** A PostgreSQL schema as an older release's migrate left it: its set's migrations up to `version`, recorded as migrate records them. */
async function pgSchemaAtVersion(client: pg.Client, schema: string, set: MigrationSet, version: number): Promise<void> {
  const folder = new URL(`../../sql/${set}/`, import.meta.url).pathname;
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(
    `CREATE TABLE ${schema}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const file of readdirSync(folder).sort()) {
    const m = /^(\d{6})_(\w+)\.sql$/.exec(file);
    if (!m || Number(m[1]) > version) continue;
    await client.query(`SET search_path TO ${schema}`);
    await client.query(readFileSync(join(folder, file), 'utf8'));
    await client.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [Number(m[1]), m[2]]);
  }
  await client.query('RESET search_path');
}

const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

describe('an upgrade from the previous release', () => {
  const previous = previousRelease();
  const opened: FinanceDatabase[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((x) => x.close()));
  });

  it.each<LedgerStore>(['sqlite', 'postgres'])(
    'migrates a %s ledger and a finance schema the previous release made, listing what it applied, and reads their history',
    async (store) => {
      const own = await financeDatabase({ migrated: false });
      opened.push(own);
      await pgSchemaAtVersion(own.client, 'settle', 'finance', previous.finance);
      const ws = await Workspace.create(own.url, { migrate: false, ledger: store });
      const text = sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'PREV' }).text;
      const sha = createHash('sha256').update(text).digest('hex');
      const at = new Date(Date.now() - 3 * 3600_000).toISOString();
      const archived = join(ws.archive, 'settle_20261201_a01.csv');
      // a night of the previous release: a load, its resend skipped, an ignored neighbour
      const night: [string, unknown[]][] = [
        [
          `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, loaded, skipped, held, rejected, failed, not_ready, ignored, stale, move_failed, row_count, exit_status, partner)
           VALUES ('r-prev', 'scheduled', 'h', 1, ?, ?, 'finished', 1, 1, 0, 0, 0, 0, 1, 0, 0, 3, 0, 'default')`,
          [at, at],
        ],
        [
          `INSERT INTO processed_files (name, sha256, content_sha256, state, run_id, size, row_count, location, arrival, first_seen_at, updated_at, partner)
           VALUES ('settle_20261201_a01.csv', ?, ?, 'loaded', 'r-prev', ?, 3, ?, '1:1', ?, ?, 'default'),
                  ('settle_20261201_a02.csv', ?, ?, 'duplicate', 'r-prev', ?, NULL, ?, '1:2', ?, ?, 'default')`,
          [sha, sha, text.length, archived, at, at, sha, sha, text.length, join(ws.duplicates, 'settle_20261201_a02.csv'), at, at],
        ],
        ...['claimed', 'loaded', 'skipped'].map((event): [string, unknown[]] => [
          `INSERT INTO ledger_events (run_id, at, event, name, sha256, details, partner) VALUES ('r-prev', ?, ?, ?, ?, '{}', 'default')`,
          [at, event, event === 'skipped' ? 'settle_20261201_a02.csv' : 'settle_20261201_a01.csv', sha],
        ]),
        [
          `INSERT INTO moves (location, name, sha256, arrival, run_id, at, partner) VALUES (?, 'settle_20261201_a01.csv', ?, '1:1', 'r-prev', ?, 'default')`,
          [archived, sha, at],
        ],
        [
          `INSERT INTO ignored_names (partner, name, arrival, reason, first_run, first_at, last_run, last_at) VALUES ('default', 'notes.txt', '1:1', 'the pattern does not take this name', 'r-prev', ?, 'r-prev', ?)`,
          [at, at],
        ],
      ];
      if (store === 'sqlite') {
        const l = ledgerAtVersion(ws.ledger, previous.ledger);
        for (const [sql, params] of night) l.prepare(sql).run(...params);
        l.close();
      } else {
        await pgSchemaAtVersion(own.client, 'settle_ledger', 'ledger-pg', previous.ledger);
        await own.client.query('SET search_path TO settle_ledger');
        for (const [sql, params] of night) await own.client.query(numbered(sql), params);
        await own.client.query('RESET search_path');
      }

      // the upgrade's steps: a backup (SQLite), the SQL first, then migrate saying what it applied
      if (store === 'sqlite') {
        const backup = await ws.cli(['ledger', 'backup', '--from', ws.ledger, '--to', join(ws.root, 'before.sqlite')]);
        expect(backup.status, backup.stderr).toBe(0);
        expect(backup.stdout).toMatch(new RegExp(`version ${previous.ledger}\\) to .*before\\.sqlite, \\d+ bytes, checked whole\\n$`));
      }
      const ledgerSet = store === 'sqlite' ? 'ledger' : 'ledger-pg';
      const pending = (set: MigrationSet, from: number) =>
        readdirSync(new URL(`../../sql/${set}/`, import.meta.url).pathname)
          .map((file) => Number(/^(\d{6})_/.exec(file)?.[1]))
          .filter((version) => version > from)
          .sort((a, b) => a - b);
      const sql = await ws.cli(['migrate', '--ledger', ws.ledger, '--print-sql']);
      expect(sql.status, sql.stderr).toBe(0);
      for (const version of pending(ledgerSet, previous.ledger)) expect(sql.stdout).toContain(`-- ledger migration ${version} (`);
      for (const version of pending('finance', previous.finance)) expect(sql.stdout).toContain(`-- finance migration ${version} (`);
      const migrated = await ws.cli(['migrate', '--ledger', ws.ledger]);
      expect(migrated.status, migrated.stderr).toBe(0);
      const words = (applied: number[]) => (applied.length ? `applied ${applied.join(', ')}` : 'up to date');
      expect(migrated.stdout).toContain(
        `finance schema settle at version ${latestMigration('finance')} (${words(pending('finance', previous.finance))})`,
      );
      expect(migrated.stdout).toMatch(
        new RegExp(` at version ${latestMigration(ledgerSet)} \\(${words(pending(ledgerSet, previous.ledger))}\\)\\n$`),
      );
      if (store === 'sqlite') {
        const kept = new Database(join(ws.root, 'before.sqlite'), { readonly: true });
        expect(kept.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: previous.ledger });
        kept.close();
      }

      // its history, read by this release
      const ledger = ['--ledger', ws.ledger];
      const runs = JSON.parse((await ws.cli(['report', 'runs', ...ledger, '--json'])).stdout) as {
        runs: { run: string; loaded: number }[];
      };
      expect(runs.runs.map((r) => [r.run, r.loaded])).toEqual([['r-prev', 1]]);
      const history = await ws.cli(['history', 'settle_20261201_a02.csv', ...ledger]);
      expect(history.status).toBe(0);
      expect(history.stdout).toContain('r-prev');
      expect(history.stdout).toContain('settle_20261201_a01.csv');
      expect((await ws.cli(['status', ...ledger])).stdout).toMatch(/^SETTLE-INGEST OK - last success 3h ago \(run r-prev\)/);
      // and goes on from it: the old load makes a third resend a duplicate; new content loads into the upgraded finance schema
      await ws.put('settle_20261201_a03.csv', text);
      await ws.put('settle_20261201_b01.csv', sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: 'PREVB' }).text);
      const r = await ws.run(['--json']);
      expect(r.status, r.stderr).toBe(0);
      const j = JSON.parse(r.stdout) as { loaded: number; skipped: number; files: { name: string; duplicate_of?: { run: string } }[] };
      expect(j).toMatchObject({ loaded: 1, skipped: 1 });
      expect(j.files.find((f) => f.name === 'settle_20261201_a03.csv')!.duplicate_of).toMatchObject({ run: 'r-prev' });
    },
  );
});

describe('ledger versions', () => {
  it('upgrades a ledger an older release filled, keeping its runs, files and events', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    const old = sampleSettlement({ date: '2026-08-01', rows: 4, idPrefix: 'OLDV' }).text;
    const sha = createHash('sha256').update(old).digest('hex');
    const at = '2026-01-02T03:04:05.000Z';
    const l = ledgerAtVersion(ws.ledger, 4);
    l.prepare(
      `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, loaded, skipped, held, rejected, failed, not_ready, row_count, exit_status)
       VALUES ('old-run', 'scheduled', 'h', 1, ?, ?, 1, 0, 0, 0, 0, 0, 4, 0)`,
    ).run(at, at);
    l.prepare(
      `INSERT INTO processed_files (name, sha256, state, run_id, size, row_count, location, arrival, first_seen_at, updated_at)
       VALUES ('settle_20260801_a01.csv', ?, 'loaded', 'old-run', ?, 4, ?, '1:1', ?, ?)`,
    ).run(sha, old.length, join(ws.archive, 'settle_20260801_a01.csv'), at, at);
    for (const event of ['claimed', 'loaded'])
      l.prepare(
        `INSERT INTO ledger_events (run_id, at, event, name, sha256, details) VALUES ('old-run', ?, ?, 'settle_20260801_a01.csv', ?, '{}')`,
      ).run(at, event, sha);
    l.close();

    const migrated = await ws.cli(['migrate', '--ledger', ws.ledger]);
    expect(migrated.status, migrated.stderr).toBe(0);
    expect(ws.runs().map((r) => [r.run_id, r.loaded, r.exit_status])).toEqual([['old-run', 1, 0]]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.row_count])).toEqual([['settle_20260801_a01.csv', 'loaded', 4]]);
    expect(ws.events().map((e) => [e.run_id, e.event])).toEqual([
      ['old-run', 'claimed'],
      ['old-run', 'loaded'],
    ]);

    // the upgraded ledger works: its old load makes a resend a duplicate, new content loads
    await ws.put('settle_20260801_a02.csv', old);
    await ws.put('settle_20260801_b01.csv', sampleSettlement({ date: '2026-08-01', rows: 3, idPrefix: 'NEWV' }).text);
    const r = await ws.run(['--json']);
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, skipped: 1, rows: 3 });
    expect(j.files.find((f: { name: string }) => f.name === 'settle_20260801_a02.csv').duplicate_of).toMatchObject({
      name: 'settle_20260801_a01.csv',
      run: 'old-run',
    });
    expect(await ws.files('duplicates')).toEqual(['settle_20260801_a02.csv']);
    expect(await ws.files('archive')).toEqual(['settle_20260801_b01.csv']);

    // the old rows belong to the one partner of a config without "partners", and so does the new run
    expect(ws.query<{ partner: string }>('SELECT DISTINCT partner FROM runs UNION SELECT partner FROM ledger_events')).toEqual([
      { partner: 'default' },
    ]);
    expect(
      JSON.parse((await ws.cli(['report', 'runs', '--ledger', ws.ledger, '--json'])).stdout).runs.map(
        (x: { run: string; partner: string }) => x.partner,
      ),
    ).toEqual(['default', 'default']);
  });

  it('keeps an old single-partner config and ledger working as before once upgraded: the same summary line, report and status', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    const text = sampleSettlement({ date: '2026-08-03', rows: 2, idPrefix: 'OLDC' }).text;
    const sha = createHash('sha256').update(text).digest('hex');
    const at = new Date(Date.now() - 3600_000).toISOString();
    // the last release's ledger (all its migrations, none of the partners one), with a night in it
    const l = ledgerAtVersion(ws.ledger, 8);
    l.prepare(
      `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, loaded, skipped, held, rejected, failed, not_ready, ignored, stale, move_failed, row_count, exit_status)
       VALUES ('r-old', 'scheduled', 'h', 1, ?, ?, 'finished', 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0)`,
    ).run(at, at);
    l.prepare(
      `INSERT INTO processed_files (name, sha256, content_sha256, state, run_id, size, row_count, location, arrival, first_seen_at, updated_at)
       VALUES ('settle_20260803_a01.csv', ?, ?, 'loaded', 'r-old', ?, 2, ?, '1:1', ?, ?)`,
    ).run(sha, sha, text.length, join(ws.archive, 'settle_20260803_a01.csv'), at, at);
    l.close();
    const config = join(ws.root, 'old-config.json');
    await writeFile(config, JSON.stringify({ intake: ws.intake, ledger: ws.ledger, stableFor: 0 }));
    expect((await ws.cli(['migrate', '--config', config])).status).toBe(0);

    expect((await ws.cli(['status', '--config', config])).stdout).toMatch(
      /^SETTLE-INGEST OK - last success 1h ago \(run r-old\) \| last_success_age=\d+s stale_claims=0 files_waiting_too_long=0\n$/,
    );
    await ws.put('settle_20260803_a02.csv', text);
    const r = await ws.cli(['run', '--config', config]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^run r-\S+ done: loaded=0 skipped=1 held=0 rejected=0 failed=0 not_ready=0 ignored=0 stale=0 move_failed=0 rows=0\n$/,
    );
    const runs = (await ws.cli(['report', 'runs', '--config', config])).stdout.split('\n');
    expect(runs[0]).toMatch(/^run\s+mode\s+host/); // no partner column for the one partner
  });

  it('refuses a ledger newer than this release: every command exits 2 (status: UNKNOWN) and says so', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260802_a01.csv', sampleSettlement({ date: '2026-08-02', rows: 2, idPrefix: 'NEWER' }).text);
    ws.withLedger((l) => l.prepare(`INSERT INTO schema_migrations VALUES (999, 'from_the_future', '2027-01-01T00:00:00.000Z')`).run());
    const before = { runs: ws.runs().length, files: ws.ledgerFiles().length };
    const ledger = ['--ledger', ws.ledger];
    const commands = [
      ws.runArgs(),
      ['report', 'runs', ...ledger],
      ['report', 'run', ...ledger],
      ['report', 'skips', ...ledger],
      ['history', 'settle_20260802_a01.csv', ...ledger],
      ['audit', '--intake', ws.intake, ...ledger],
    ];
    for (const args of commands) {
      const r = await ws.cli(args);
      expect({ args, status: r.status }).toEqual({ args, status: 2 });
      expect(r.stderr).toContain('newer than this release');
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
    // the monitoring check keeps its own convention: it cannot tell, so UNKNOWN
    const status = await ws.cli(['status', ...ledger]);
    expect(status.status).toBe(3);
    expect(status.stdout + status.stderr).toContain('newer than this release');
    expect(await ws.files('intake')).toEqual(['settle_20260802_a01.csv']);
    expect({ runs: ws.runs().length, files: ws.ledgerFiles().length }).toEqual(before);
  });

  // an old binary left in cron must not look fine after its migrate step
  it('refuses a ledger newer than this release in migrate too', async () => {
    const ws = await Workspace.create(db.url);
    ws.withLedger((l) => l.prepare(`INSERT INTO schema_migrations VALUES (999, 'from_the_future', '2027-01-01T00:00:00.000Z')`).run());
    const r = await ws.cli(['migrate', '--ledger', ws.ledger]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('newer than this release');
  });
});
