import { spawn, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { currentOwner } from '../../src/owner.js';
import { readMigrations } from '../../src/db/migrationFiles.js';

/** The finance migrations this release ships, by version. */
const FINANCE_VERSIONS = readMigrations('finance').map((m) => m.version);
import { finished, runCli, startCli } from '../support/cli.js';
import { financeDatabase, sharedFinanceDatabase, parseSummary, Workspace, ROWS_WITH_SOURCE } from '../support/workspace.js';
import { stageClaim } from '../support/otherRun.js';

const db = sharedFinanceDatabase();

async function rowsFrom(name: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(r.rows[0]!.n);
}

describe('guards', () => {
  it('holds a renamed twin while another live run has the content claimed, then loads it once that claim is released', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-05-01', rows: 20, idPrefix: 'HELD' }).text;
    stageClaim(ws, 'settle_20260501_a01.csv', f, currentOwner()); // this test process is alive: the claim is live
    await ws.put('settle_20260501_a02.csv', f);

    const held = await ws.run(['--json']);
    expect(held.status).toBe(0);
    const j = JSON.parse(held.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 0, held: 1 });
    expect(j.files[0]).toMatchObject({
      name: 'settle_20260501_a02.csv',
      outcome: 'held',
      held_for: { name: 'settle_20260501_a01.csv', run: 'r-other' },
    });
    expect(await ws.files('intake')).toEqual(['settle_20260501_a02.csv']);
    expect(await ws.files('duplicates')).toEqual([]);
    expect(ws.ledgerFile('settle_20260501_a02.csv')?.state).toBe('held');

    // the other run fails and releases its claim
    ws.withLedger((l) => l.prepare(`UPDATE processed_files SET state = 'failed' WHERE run_id = 'r-other'`).run());
    const next = await ws.run();
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, held: 0, rows: 20 });
    expect(await rowsFrom('settle_20260501_a02.csv')).toBe(20);
    expect(await ws.files('archive')).toEqual(['settle_20260501_a02.csv']);
  });

  it('counts the very file another live run is loading as held (never a silent pass), leaving its claim alone', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-05-02', rows: 5, idPrefix: 'BUSY' }).text;
    stageClaim(ws, 'settle_20260502_a01.csv', f, currentOwner());
    await ws.put('settle_20260502_a01.csv', f);

    const r = await ws.run(['--json']);
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 0, held: 1 });
    expect(j.files[0]).toMatchObject({ name: 'settle_20260502_a01.csv', outcome: 'held', held_for: { run: 'r-other' } });
    expect(ws.ledgerFile('settle_20260502_a01.csv')).toMatchObject({ state: 'claimed', run_id: 'r-other' });
    expect(await ws.files('intake')).toEqual(['settle_20260502_a01.csv']);
    expect(await rowsFrom('settle_20260502_a01.csv')).toBe(0);
  });

  it('expires the claim of a process that is gone and loads the file once, flagging the run', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-05-02', rows: 15, idPrefix: 'STALE' }).text;
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    stageClaim(ws, 'settle_20260502_a01.csv', f, { host: hostname(), pid: dead, startedAt: '1' });
    await ws.put('settle_20260502_a01.csv', f);
    const r = await ws.run();
    expect(r.status).toBe(1); // a stale claim is worth a look even when it was settled
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, rows: 15 });
    expect(await rowsFrom('settle_20260502_a01.csv')).toBe(15);
    expect(ws.events().map((e) => e.event)).toContain('expired');
    expect(ws.ledgerFile('settle_20260502_a01.csv')).toMatchObject({ state: 'loaded' });
  });

  it('never loads half of a file that is still growing: not ready now, loaded whole later', async () => {
    const ws = await Workspace.create(db.url);
    const full = sampleSettlement({ date: '2026-05-03', rows: 400, idPrefix: 'GROW' }).text;
    const path = join(ws.intake, 'settle_20260503_a01.csv');
    await writeFile(path, '');
    // an uploader appending a line every 50 ms for as long as the run may wait
    const uploader = spawn(process.execPath, [
      '-e',
      `const fs=require('fs');const lines=process.argv[2].split('\\n');let i=0;
       const t=setInterval(()=>{ if(i<lines.length){fs.appendFileSync(process.argv[1], lines[i++]+'\\n');} },50);`,
      path,
      full.trimEnd(),
    ]);
    try {
      // start the run once the upload is visibly under way
      while ((await readFile(path, 'utf8')).split('\n').length < 3) await sleep(20);
      const r = await ws.run(['--stable-for', '2', '--max-wait', '3']);
      expect(r.status).toBe(0);
      expect(parseSummary(r.stdout)).toMatchObject({ loaded: 0, not_ready: 1, rows: 0 });
      expect(await rowsFrom('settle_20260503_a01.csv')).toBe(0);
      expect(await ws.files('intake')).toEqual(['settle_20260503_a01.csv']);
    } finally {
      uploader.kill();
    }
    await writeFile(path, full);
    const later = await ws.run();
    expect(parseSummary(later.stdout)).toMatchObject({ loaded: 1, rows: 400 });
  });

  it('rejects a file whose transaction ids were loaded from another file, naming keys and that file', async () => {
    const ws = await Workspace.create(db.url);
    const first = sampleSettlement({ date: '2026-05-04', rows: 30, idPrefix: 'OVL' });
    await ws.put('settle_20260504_a01.csv', first.text);
    const r1 = parseSummary((await ws.run()).stdout);
    const overlapping = first.text.split('\n').map((l) => l.replace(/,(-?\d+)\.(\d)(\d),/, (_m, a, b) => `,${a}.${b}0,`)); // other bytes, same ids
    await ws.put('settle_20260504_b01.csv', overlapping.slice(0, 20).join('\n') + '\n');
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    const err: string = JSON.parse(r.stdout).files[0].error;
    expect(err).toMatch(
      /^field transaction_id: 19 value\(s\) already used: line 2: "OVL-0000001" already loaded from settle_20260504_a01.csv/,
    );
    expect(err).toContain(`(run ${r1.run})`);
    expect(err.match(/already loaded from/g)).toHaveLength(10);
    expect(err).toMatch(/and 9 more$/);
    expect(await rowsFrom('settle_20260504_b01.csv')).toBe(0);
    expect(await ws.files('rejected')).toEqual(['settle_20260504_b01.csv']);
  });

  it('with a lost ledger, records content the finance database already has as a duplicate of that load', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-05-05', rows: 12, idPrefix: 'LOST' }).text;
    await ws.put('settle_20260505_a01.csv', f);
    const r1 = parseSummary((await ws.run()).stdout);
    const fresh = await Workspace.create(db.url); // a new, empty ledger against the same finance database
    await fresh.put('settle_20260505_a01.csv', f);
    const r = await fresh.run(['--json']);
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 1 });
    expect(j.files[0].duplicate_of).toEqual({ name: 'settle_20260505_a01.csv', run: r1.run, source: 'finance-database', match: 'bytes' });
    expect(await rowsFrom('settle_20260505_a01.csv')).toBe(12);
    expect(await fresh.files('duplicates')).toEqual(['settle_20260505_a01.csv']);
  });

  it('refuses to run before migrate, with one line and nothing touched', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    await ws.put('settle_20260506_a01.csv', 'anything');
    const r = await ws.run();
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/ledger .* does not exist: run `settle-ingest migrate` first/)]);
    expect(await ws.files('intake')).toEqual(['settle_20260506_a01.csv']);

    const empty = await financeDatabase({ migrated: false });
    try {
      const ws2 = await Workspace.create(db.url);
      await ws2.put('settle_20260506_a01.csv', 'anything');
      const r2 = await runCli(ws2.runArgs(), { DATABASE_URL: empty.url });
      expect(r2.status).toBe(2);
      expect(r2.stderr).toContain(
        `finance schema "settle" is at version 0, this release needs ${Math.max(...FINANCE_VERSIONS)}: run \`settle-ingest migrate\` first`,
      );
      expect(await ws2.files('intake')).toEqual(['settle_20260506_a01.csv']);
      // the run is kept as one that could not start, with its reason: nothing else was touched
      expect(ws2.runs()).toEqual([
        expect.objectContaining({ status: 'not_started', exit_status: 2, reason: expect.stringMatching(/version 0/) }),
      ]);
      expect(ws2.events()).toEqual([]);
    } finally {
      await empty.close();
    }
  });

  it('migrates once when two migrations start at the same moment', async () => {
    const empty = await financeDatabase({ migrated: false });
    try {
      const ws = await Workspace.create(db.url, { migrate: false });
      const both = await Promise.all(
        [1, 2].map((i) => finished(startCli(['migrate', '--ledger', `${ws.ledger}`], { DATABASE_URL: empty.url }))),
      );
      expect(both.map((r) => r.status)).toEqual([0, 0]);
      const v = await empty.client.query('SELECT version FROM settle.schema_migrations ORDER BY version');
      expect(v.rows).toEqual(FINANCE_VERSIONS.map((version) => ({ version })));
    } finally {
      await empty.close();
    }
  });

  it.each([
    [['run', '--no-such-flag']],
    [['run']],
    [['run', '--intake', '/nonexistent/intake']],
    [['run', '--intake', '.', '--stable-for', 'soon']],
    [['frobnicate']],
    [['run', '--intake', '.', '--archive', '.']],
  ])('answers bad usage %j with exit 2 and no stack trace', async (args) => {
    const ws = await Workspace.create(db.url);
    const r = await ws.cli([...args, '--ledger', ws.ledger]);
    expect(r.status).toBe(2);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    // refused before any work: at most a run kept as one that could not start, and no file event
    expect(ws.runs().every((run) => run.status === 'not_started' && run.exit_status === 2)).toBe(true);
    expect(ws.events()).toEqual([]);
  });
});
