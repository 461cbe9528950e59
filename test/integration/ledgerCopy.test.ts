import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd, partnerSftp } from '../support/loggingSshd.js';
import { financeDatabase, parseSummary, Workspace, type FinanceDatabase } from '../support/workspace.js';

const opened: FinanceDatabase[] = [];
afterAll(async () => {
  await Promise.all(opened.map((db) => db.close()));
});

async function freshDatabase(): Promise<FinanceDatabase> {
  const db = await financeDatabase();
  opened.push(db);
  return db;
}

/** The ledger's tables, each as both stores must hold it: every column, times as instants, JSON parsed. */
const TABLES = {
  runs: 'SELECT * FROM runs ORDER BY run_id',
  processed_files: 'SELECT * FROM processed_files ORDER BY id',
  ledger_events: 'SELECT * FROM ledger_events ORDER BY id',
  moves: 'SELECT * FROM moves ORDER BY location, sha256, arrival',
  move_intents: 'SELECT * FROM move_intents ORDER BY name, sha256, arrival',
  ignored_names: 'SELECT * FROM ignored_names ORDER BY partner, name',
  partner_leases: 'SELECT * FROM partner_leases ORDER BY partner',
} as const;

type History = Record<keyof typeof TABLES, Record<string, unknown>[]>;

const TIME_COLUMNS = /(_at|_until|_since)$|^at$/;

/** A row as both stores say it: a time as its ISO instant, `details` as its object. */
function comparable(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).map(([column, value]) => {
      if (value === null) return [column, null];
      if (column === 'details') return [column, JSON.parse(String(value)) as unknown];
      if (TIME_COLUMNS.test(column) && column !== 'owner_started_at') return [column, new Date(String(value)).toISOString()];
      return [column, value];
    }),
  );
}

const history = (ws: Workspace): History =>
  Object.fromEntries(
    Object.entries(TABLES).map(([table, sql]) => [table, ws.query<Record<string, unknown>>(sql).map(comparable)]),
  ) as History;

interface AuditDoc {
  discrepancies: number;
  checks: { name: string; ok: boolean; discrepancies: { kind: string; file: string | null; message: string }[] }[];
  transfer_log: { arrivals: { name: string; outcome: string | null; no_record: string | null; unmatched: boolean }[]; unmatched: number };
}

/** What an audit found, without where the ledger is. */
const findings = (doc: AuditDoc) => ({
  discrepancies: doc.discrepancies,
  checks: doc.checks.map((c) => ({ name: c.name, ok: c.ok, discrepancies: c.discrepancies.map((d) => [d.kind, d.file]) })),
  arrivals: doc.transfer_log.arrivals.map((a) => [a.name, a.outcome ?? a.no_record, a.unmatched]),
  unmatched: doc.transfer_log.unmatched,
});

describe('ledger copy: a SQLite ledger grown to PostgreSQL', () => {
  let server: TestLoggingSshd;
  beforeAll(async () => {
    server = await TestLoggingSshd.start();
    await mkdir(join(server.jail, 'in'), { mode: 0o755 });
  });
  afterAll(async () => server?.destroy());

  it('moves the whole history, verified; the transfer-log audit finds what it found before, and the next run goes on from it', async () => {
    const db = await freshDatabase();
    const ws = await Workspace.create(db.url);
    const files = await mkdtemp(join(tmpdir(), 'settle-copy-'));
    const a01 = sampleSettlement({ date: '2026-12-01', rows: 4, idPrefix: 'COPYA' }).text;
    const bad = sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: 'COPYB' }).text.replace(/,(-?\d+\.\d\d),/, ',x,');
    const c01 = sampleSettlement({ date: '2026-12-02', rows: 3, idPrefix: 'COPYC' }).text;
    for (const [name, text] of Object.entries({ a01, bad, c01, notes: 'see you tomorrow\n' })) await writeFile(join(files, name), text);
    await partnerSftp(server, [
      `put ${join(files, 'a01')} /in/settle_20261201_a01.csv`,
      `put ${join(files, 'a01')} /in/settle_20261201_a02.csv`, // the uploader's retry under a new name
      `put ${join(files, 'bad')} /in/settle_20261201_b01.csv`,
      `put ${join(files, 'notes')} /in/notes.txt`,
    ]);
    const config = join(ws.root, 'config.json');
    const write = (ledger: string) =>
      writeFile(
        config,
        JSON.stringify({
          intake: server.url('/in'),
          ledger,
          stableFor: 0,
          sftpKey: server.clientKey,
          knownHosts: server.knownHosts,
          transferLog: [server.logFile],
          expect: { every: 'day', by: '04:00', timeZone: 'UTC' },
        }),
      );
    await write(ws.ledger);
    const night = await ws.cli(['run', '--config', config, '--json']);
    expect(JSON.parse(night.stdout)).toMatchObject({ loaded: 1, skipped: 1, rejected: 1, ignored: 1 });
    await partnerSftp(server, [`put ${join(files, 'c01')} /in/settle_20261202_c01.csv`]);
    expect((await ws.cli(['run', '--config', config])).status).toBe(0);
    // a day the partner owes (from its first run on: a day before it was never due, and is refused)
    // tomorrow: owed (every day), not delivered yet (today is: a delivered day is not waived)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const waived = await ws.cli(['waive', '--config', config, '--day', tomorrow, '--reason', 'no settlement that day']);
    expect(waived.status, waived.stderr).toBe(0);
    ws.stageDeadClaim('settle_20261201_z01.csv'); // a run killed during its load: its claim travels too
    await server.flushLog();
    const before = await ws.cli(['audit', '--config', config, '--json']);
    const sqlite = history(ws);
    expect(sqlite.ignored_names).toHaveLength(1);
    expect(sqlite.processed_files.map((f) => f.state)).toEqual(['loaded', 'duplicate', 'rejected', 'loaded', 'claimed']);

    const copy = await ws.cli(['ledger', 'copy', '--from', ws.ledger, '--to', db.url, '--json']);
    expect(copy.status, copy.stderr).toBe(0);
    const doc = JSON.parse(copy.stdout) as { tables: { table: string; rows: number; digest: string }[] };
    expect(Object.fromEntries(doc.tables.map((t) => [t.table, t.rows]))).toEqual(
      Object.fromEntries(Object.entries(sqlite).map(([table, rows]) => [table, rows.length])),
    );
    expect(doc.tables[0]!.table).toBe('runs'); // before every table that refers to a run
    expect(doc.tables.find((t) => t.table === 'ledger_events')!.digest).toMatch(/^[0-9a-f]{64}$/);

    // every row of every table, as the SQLite ledger held it
    const pg = await Workspace.create(db.url, { ledger: 'postgres', migrate: false });
    expect(history(pg)).toEqual(sqlite);
    // the SQLite ledger is as it was
    expect(history(ws)).toEqual(sqlite);

    // the same audit of the same uploads, on the new ledger: nobody is blamed for an earlier upload
    await write(db.url);
    const after = await ws.cli(['audit', '--config', config, '--json']);
    expect(after.status).toBe(before.status);
    const found = findings(JSON.parse(before.stdout) as AuditDoc);
    expect(found.arrivals).toEqual(
      expect.arrayContaining([
        ['settle_20261201_a01.csv', 'loaded', false],
        ['settle_20261201_a02.csv', 'skipped', false],
        ['settle_20261201_b01.csv', 'rejected', false],
        ['notes.txt', 'ignored', false],
      ]),
    );
    expect(findings(JSON.parse(after.stdout) as AuditDoc)).toEqual(found);
    expect((await ws.cli(['history', 'settle_20261201_a02.csv', '--config', config])).stdout).toBe(
      (await ws.cli(['history', 'settle_20261201_a02.csv', '--ledger', ws.ledger])).stdout,
    );

    // the next night on PostgreSQL: its old load makes a resend a duplicate of the old run, the dead
    // run's claim is settled as on SQLite (a stale claim: exit 1), and new events follow the copied ones
    await partnerSftp(server, [`put ${join(files, 'a01')} /in/settle_20261201_a03.csv`]);
    const next = await ws.cli(['run', '--config', config, '--json']);
    expect(next.status, next.stderr).toBe(1);
    const j = JSON.parse(next.stdout) as { skipped: number; stale: number; files: { name: string; duplicate_of?: { run: string } }[] };
    expect(j).toMatchObject({ skipped: 1, stale: 1, loaded: 0 });
    expect(pg.ledgerFile('settle_20261201_z01.csv')?.state).not.toBe('claimed');
    expect(pg.runs().find((r) => r.run_id === 'r-dead')?.status).toBe('died');
    expect(j.files.find((f) => f.name === 'settle_20261201_a03.csv')!.duplicate_of!.run).toBe(sqlite.processed_files[0]!.run_id);
    const events = pg.query<{ id: number }>('SELECT id FROM ledger_events ORDER BY id');
    expect(events.length).toBeGreaterThan(sqlite.ledger_events.length);
    expect(events[sqlite.ledger_events.length]!.id).toBe(Number(sqlite.ledger_events.at(-1)!.id) + 1);
  });

  it('refuses a target that holds any row, naming it, and changes nothing', async () => {
    const db = await freshDatabase();
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261203_a01.csv', sampleSettlement({ date: '2026-12-03', rows: 2, idPrefix: 'COPYS' }).text);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 1 });
    const pg = await Workspace.create(db.url, { ledger: 'postgres' });
    await pg.put('settle_20261203_b01.csv', sampleSettlement({ date: '2026-12-03', rows: 1, idPrefix: 'COPYT' }).text);
    expect(parseSummary((await pg.run()).stdout)).toMatchObject({ loaded: 1 });
    const kept = history(pg);

    const r = await ws.cli(['ledger', 'copy', '--from', ws.ledger, '--to', db.url]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toMatch(
      /^settle-ingest: ledger copy: the target postgres:\/\/\S+ is not empty \(runs 1 row\(s\), ledger_events \d+ row\(s\), .*processed_files 1 row\(s\)\): .*nothing was copied$/,
    );
    expect(history(pg)).toEqual(kept);
  });

  it('refuses a SQLite ledger an older release left: migrate it first', async () => {
    const db = await freshDatabase();
    const ws = await Workspace.create(db.url);
    ws.withLedger((l) => l.prepare('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)').run());
    const r = await ws.cli(['ledger', 'copy', '--from', ws.ledger, '--to', db.url]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/this release needs \d+: run `settle-ingest migrate` first/);
    const schema = await db.client.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'settle_ledger'`);
    expect(schema.rowCount).toBe(0);
  });
});
