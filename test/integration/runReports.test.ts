import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, putIn, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

interface Decision {
  outcome: string;
  name: string;
  rows: number;
  reason: string | null;
  duplicate_of: { name: string; run: string } | null;
}

/** Night one loads a01; night two meets its renamed resend, a bad file, a stranger and an upload in progress. */
async function twoNights(idPrefix: string) {
  const ws = await Workspace.create(db.url);
  const a01 = sampleSettlement({ date: '2026-11-10', rows: 10, idPrefix }).text;
  await ws.put('settle_20261110_a01.csv', a01);
  const first = parseSummary((await ws.run()).stdout);
  const bad = sampleSettlement({ date: '2026-11-11', rows: 4, idPrefix: `${idPrefix}B` }).text.split('\n');
  bad[2] = bad[2]!.replace(/,(-?\d+\.\d\d),/, ',12.5O,');
  await ws.put('settle_20261110_a02.csv', a01);
  await ws.put('settle_20261111_b01.csv', bad.join('\n'));
  await ws.put('README.txt', 'hello');
  await ws.put('settle_20261111_c01.csv.part', 'half');
  const second = await ws.run();
  expect(second.status).toBe(1);
  return { ws, first: first.run, second: parseSummary(second.stdout).run };
}

describe('report run', () => {
  it('lists every file decision of the last run, or of a run named by id, with outcome, rows and why', async () => {
    const { ws, first, second } = await twoNights('RRUN');
    const last = await ws.cli(['report', 'run', '--ledger', ws.ledger, '--json']);
    expect(last.status).toBe(0);
    const j = JSON.parse(last.stdout);
    expect(j.run).toMatchObject({ run: second, status: 'finished', exit_status: 1, loaded: 0, skipped: 1, rejected: 1 });
    const by = Object.fromEntries((j.decisions as Decision[]).map((d) => [d.name, d]));
    expect(Object.keys(by).sort()).toEqual(
      ['README.txt', 'settle_20261110_a02.csv', 'settle_20261111_b01.csv', 'settle_20261111_c01.csv.part'].sort(),
    );
    expect(by['settle_20261110_a02.csv']).toMatchObject({
      outcome: 'skipped',
      rows: 0,
      duplicate_of: { name: 'settle_20261110_a01.csv', run: first },
    });
    expect(by['settle_20261111_b01.csv']).toMatchObject({
      outcome: 'rejected',
      reason: expect.stringMatching(/^line 3, field \w+: "12.5O"/),
    });
    expect(by['README.txt']).toMatchObject({ outcome: 'ignored', reason: 'the pattern does not take this name' });
    expect(by['settle_20261111_c01.csv.part']).toMatchObject({ outcome: 'not_ready', reason: expect.stringContaining('temporary name') });

    const earlier = JSON.parse((await ws.cli(['report', 'run', first, '--ledger', ws.ledger, '--json'])).stdout);
    expect(earlier.decisions).toEqual([expect.objectContaining({ outcome: 'loaded', name: 'settle_20261110_a01.csv', rows: 10 })]);

    const text = (await ws.cli(['report', 'run', '--ledger', ws.ledger])).stdout;
    expect(text).toMatch(new RegExp(`^run ${second}: \\w+ on .*finished, exit 1\\n`));
    expect(text).toMatch(/skipped +settle_20261110_a02.csv +0 .*same bytes as settle_20261110_a01.csv/);

    const none = await ws.cli(['report', 'run', 'r-20990101-0000-beef', '--ledger', ws.ledger, '--json']);
    expect(none.status).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({ version: 1, run: null, decisions: [] });
  });
});

describe('report run of a run of several partners', () => {
  it("shows every partner's run of the last command (each named by the command's id), or of a command named by its id; never an earlier command's", async () => {
    const ws = await Workspace.create(db.url);
    const intakeOf = (partner: string) => join(ws.root, partner, 'intake');
    const config = await ws.partnersConfig({ alpha: { intake: intakeOf('alpha') }, beta: { intake: intakeOf('beta') } });
    await putIn(intakeOf('alpha'), 'settle_20261110_a01.csv', sampleSettlement({ date: '2026-11-10', rows: 3, idPrefix: 'CMDA1' }).text);
    await mkdir(intakeOf('beta'), { recursive: true });
    const night1 = await ws.cli(['run', '--config', config]);
    expect(night1.status, night1.stderr).toBe(0);
    const command1 = /^alpha: run (r-\d{8}-\d{4}-[0-9a-f]{4})-alpha done: /m.exec(night1.stdout)![1]!;
    expect(night1.stdout).toMatch(new RegExp(`^beta: run ${command1}-beta done: loaded=0 `, 'm'));

    await putIn(intakeOf('alpha'), 'settle_20261111_a01.csv', sampleSettlement({ date: '2026-11-11', rows: 4, idPrefix: 'CMDA2' }).text);
    const bad = sampleSettlement({ date: '2026-11-11', rows: 2, idPrefix: 'CMDB2' }).text.split('\n');
    bad[2] = bad[2]!.replace(/,(-?\d+\.\d\d),/, ',12.5O,');
    await putIn(intakeOf('beta'), 'settle_20261111_b01.csv', bad.join('\n'));
    const night2 = await ws.cli(['run', '--config', config]);
    expect(night2.status, night2.stderr).toBe(1);
    const command2 = /^alpha: run (r-\d{8}-\d{4}-[0-9a-f]{4})-alpha done: /m.exec(night2.stdout)![1]!;
    expect(command2).not.toBe(command1);

    // the last command: alpha's run and beta's, in the order they ran; `run` is the latest, as ever
    const last = JSON.parse((await ws.cli(['report', 'run', '--config', config, '--json'])).stdout);
    const shown = (runs: { run: { run: string }; decisions: Decision[] }[]) =>
      runs.map((r) => [r.run.run, r.decisions.map((d) => `${d.outcome} ${d.name}`)]);
    expect(shown(last.runs)).toEqual([
      [`${command2}-alpha`, ['loaded settle_20261111_a01.csv']],
      [`${command2}-beta`, ['rejected settle_20261111_b01.csv']],
    ]);
    expect(last.run).toMatchObject({ run: `${command2}-beta`, partner: 'beta', rejected: 1 });
    const text = await ws.cli(['report', 'run', '--config', config]);
    expect(text.stdout.match(/^run \S+: partner \w+,/gm)).toEqual([
      `run ${command2}-alpha: partner alpha,`,
      `run ${command2}-beta: partner beta,`,
    ]);
    expect(text.stdout).toMatch(/^loaded +settle_20261111_a01.csv +4 /m);
    expect(text.stdout).toMatch(/^rejected +settle_20261111_b01.csv +0 .*line 3, field \w+: "12.5O"/m);

    // an earlier command by its id: both its runs; one partner's run by its own id, or the command's runs of one partner
    const earlier = JSON.parse((await ws.cli(['report', 'run', command1, '--config', config, '--json'])).stdout);
    expect(shown(earlier.runs)).toEqual([
      [`${command1}-alpha`, ['loaded settle_20261110_a01.csv']],
      [`${command1}-beta`, []],
    ]);
    const one = JSON.parse((await ws.cli(['report', 'run', `${command2}-alpha`, '--config', config, '--json'])).stdout);
    expect(shown(one.runs)).toEqual([[`${command2}-alpha`, ['loaded settle_20261111_a01.csv']]]);
    const betaOnly = JSON.parse((await ws.cli(['report', 'run', '--config', config, '--partner', 'beta', '--json'])).stdout);
    expect(shown(betaOnly.runs)).toEqual([[`${command2}-beta`, ['rejected settle_20261111_b01.csv']]]);
  });
});

describe('history', () => {
  it('finds a content by the first 8 hex digits of its SHA-256, and exits 1 when nothing matches', async () => {
    const { ws } = await twoNights('RHIS');
    const sha = ws.ledgerFile('settle_20261110_a01.csv')!.sha256;
    const r = await ws.cli(['history', sha.slice(0, 8).toUpperCase(), '--ledger', ws.ledger, '--json']);
    expect(r.status).toBe(0);
    const events = JSON.parse(r.stdout).events.map((e: { event: string; name: string }) => `${e.event} ${e.name}`);
    expect(events).toEqual(expect.arrayContaining(['loaded settle_20261110_a01.csv', 'skipped settle_20261110_a02.csv']));

    expect((await ws.cli(['history', sha.slice(0, 7), '--ledger', ws.ledger])).status).toBe(1); // too short: a name, unknown
    const nothing = await ws.cli(['history', 'settle_20990101_a01.csv', '--ledger', ws.ledger, '--json']);
    expect(nothing.status).toBe(1);
    expect(JSON.parse(nothing.stdout)).toMatchObject({ version: 1, events: [] });

    const run = ws.runs()[0]!.run_id;
    const asRun = await ws.cli(['history', run, '--ledger', ws.ledger]);
    expect(asRun.status).toBe(1);
    expect(asRun.stdout).toContain(`settle-ingest report run ${run}`);

    ws.withLedger((l) => {
      const add = l.prepare(`INSERT INTO ledger_events (run_id, at, event, name, sha256) VALUES (?, ?, 'skipped', ?, ?)`);
      add.run(run, new Date().toISOString(), 'x1.csv', `abcdef12${'0'.repeat(56)}`);
      add.run(run, new Date().toISOString(), 'x2.csv', `abcdef12${'1'.repeat(56)}`);
    });
    const ambiguous = await ws.cli(['history', 'abcdef12', '--ledger', ws.ledger]);
    expect(ambiguous.status).toBe(2);
    expect(ambiguous.stderr).toMatch(/abcdef12 is the start of several contents .*give more of the SHA-256/);
  });
});

describe('report skips and ops/weekly-skips.sql', () => {
  it('count the same ISO weeks across the new year, and list rejected, failed, not-ready and ignored files apart', async () => {
    const ws = await Workspace.create(db.url);
    const at = (iso: string) => new Date(iso).toISOString();
    ws.withLedger((l) => {
      for (const run of ['r-a', 'r-b', 'r-c']) {
        l.prepare(`INSERT INTO runs (run_id, mode, host, pid, started_at) VALUES (?, 'scheduled', 'h', 1, ?)`).run(run, at('2026-12-31'));
      }
      const add = l.prepare(`INSERT INTO ledger_events (run_id, at, event, name, sha256, details) VALUES (?, ?, ?, ?, ?, ?)`);
      const dup = JSON.stringify({ duplicateOf: { name: 'settle_20261231_a01.csv', run: 'r-0', source: 'ledger' } });
      add.run('r-a', at('2026-12-31T02:00:00Z'), 'skipped', 'settle_20261231_a02.csv', 'a'.repeat(64), dup); // Thursday: 2026-W53
      add.run('r-a', at('2026-12-31T02:00:00Z'), 'held', 'settle_20261231_b02.csv', 'b'.repeat(64), '{}');
      add.run(
        'r-b',
        at('2027-01-01T02:00:00Z'),
        'rejected',
        'settle_20270101_a01.csv',
        'c'.repeat(64),
        '{"reason":"line 3, field fee_amount: bad"}',
      );
      add.run('r-b', at('2027-01-01T02:00:00Z'), 'not_ready', 'settle_20270101_b01.csv', null, '{"reason":"still changing"}');
      add.run('r-b', at('2027-01-01T23:59:59.999Z'), 'failed', 'settle_20270101_c01.csv', null, '{"reason":"staging failed: EIO"}');
      add.run('r-b', at('2027-01-03T23:59:59Z'), 'ignored', 'README.txt', null, '{"reason":"the pattern does not take this name"}');
      add.run('r-c', at('2027-01-04T00:00:00Z'), 'ignored', 'README.txt', null, '{"reason":"the pattern does not take this name"}'); // Monday: 2027-W01
      add.run('r-c', at('2027-01-04T02:00:00Z'), 'not_ready', 'settle_20270101_b01.csv', null, '{"reason":"still changing again"}');
      add.run('r-c', at('2027-01-04T02:00:00Z'), 'loaded', 'settle_20270104_a01.csv', 'd'.repeat(64), '{"rows":3}');
    });
    // wide enough to include the new year whenever this runs
    const weeks = Math.max(1, Math.ceil((Date.now() - Date.UTC(2026, 11, 20)) / (7 * 86_400_000)));
    const r = await ws.cli(['report', 'skips', '--weeks', String(weeks), '--ledger', ws.ledger, '--json']);
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    const counts = ['skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored'];
    const fromTool = report.weeks.map((w: Record<string, number>) => [w.week, ...counts.map((c) => w[c])]);
    expect(fromTool).toEqual([
      ['2027-W01', 0, 0, 0, 0, 1, 1],
      ['2026-W53', 1, 1, 1, 1, 1, 1],
    ]);

    const sql = await readFile(new URL('../../ops/weekly-skips.sql', import.meta.url), 'utf8');
    const ledger = new Database(ws.ledger, { readonly: true });
    const fromSql = (ledger.prepare(sql).all({ weeks }) as Record<string, string | number>[]).map((w) => [
      w.week,
      ...counts.map((c) => w[c]),
    ]);
    ledger.close();
    expect(fromSql).toEqual(fromTool);

    expect(report.weeks[1].files).toEqual([
      {
        partner: 'default',
        name: 'settle_20261231_a02.csv',
        outcome: 'skipped',
        run: 'r-a',
        sha256: 'a'.repeat(64),
        content_sha256: 'a'.repeat(64),
        same_as: 'settle_20261231_a01.csv',
        original_run: 'r-0',
        why: 'same bytes as',
      },
      {
        partner: 'default',
        name: 'settle_20261231_b02.csv',
        outcome: 'held',
        run: 'r-a',
        sha256: 'b'.repeat(64),
        content_sha256: 'b'.repeat(64),
      },
    ]);
    expect(report.rejected).toEqual([
      expect.objectContaining({ name: 'settle_20270101_a01.csv', times: 1, reason: 'line 3, field fee_amount: bad' }),
    ]);
    expect(report.failed).toEqual([expect.objectContaining({ name: 'settle_20270101_c01.csv', reason: 'staging failed: EIO' })]);
    expect(report.not_ready).toEqual([
      expect.objectContaining({ name: 'settle_20270101_b01.csv', times: 2, last_run: 'r-c', reason: 'still changing again' }),
    ]);
    expect(report.ignored).toEqual([expect.objectContaining({ name: 'README.txt', times: 2 })]);

    const text = (await ws.cli(['report', 'skips', '--weeks', String(weeks), '--ledger', ws.ledger])).stdout;
    expect(text).toMatch(/^rejected:\nfile .*\nsettle_20270101_a01.csv +1 /m);
    expect(text).toMatch(/^not ready:\nfile .*\nsettle_20270101_b01.csv +2 /m);
  });
});

describe('the reports from a PostgreSQL ledger', () => {
  it('answer the same: report run, history by prefix, status', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    expect((await ws.cli(['migrate', '--ledger', db.url])).status).toBe(0);
    const text = sampleSettlement({ date: '2026-11-12', rows: 7, idPrefix: 'PGREP' }).text;
    await ws.put('settle_20261112_a01.csv', text);
    const run = parseSummary((await ws.run(['--ledger', db.url])).stdout).run;
    const decisions = JSON.parse((await ws.cli(['report', 'run', '--ledger', db.url, '--json'])).stdout);
    expect(decisions).toMatchObject({ run: { run, status: 'finished', exit_status: 0 }, decisions: [{ outcome: 'loaded', rows: 7 }] });
    const { createHash } = await import('node:crypto');
    const sha = createHash('sha256').update(text).digest('hex');
    const history = await ws.cli(['history', sha.slice(0, 10), '--ledger', db.url, '--json']);
    expect(JSON.parse(history.stdout).events.map((e: { event: string }) => e.event)).toEqual(['claimed', 'loaded', 'moved']);
    const status = await ws.cli(['status', '--ledger', db.url]);
    expect(status.stdout).toMatch(new RegExp(`^SETTLE-INGEST OK - last success \\d+s ago \\(run ${run}\\)`));
    expect(status.status).toBe(0);
  });
});
