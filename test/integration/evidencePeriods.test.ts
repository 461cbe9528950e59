import { execFileSync } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { financeDatabase, Workspace, type FinanceDatabase, type LedgerStore } from '../support/workspace.js';

// each test its own finance database: the audit inside a pack checks every load in it
let opened: FinanceDatabase[] = [];
async function ownWorkspace(opts: { ledger?: LedgerStore } = {}): Promise<Workspace> {
  const db = await financeDatabase();
  opened.push(db);
  return Workspace.create(db.url, opts);
}
afterEach(async () => {
  for (const db of opened) await db.close();
  opened = [];
});

interface PackSummary {
  loads: number;
  reprocessings: number;
  events: number;
  files: string[];
  manifest_sha256: string;
}

/** The files the manifest covers: everything but the audit, which is of the moment the pack was made. */
const PERIOD_FILES = ['loads.csv', 'events.csv', 'SHA256SUMS.default', 'README.txt', 'MANIFEST'];

/** A CSV of ours (the tool writes it), read back: quoted cells, doubled quotes, line breaks inside quotes. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') ((cell += '"'), i++);
      else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') (row.push(cell), (cell = ''));
    else if (char === '\n') (row.push(cell), rows.push(row), (row = []), (cell = ''));
    else cell += char;
  }
  return rows;
}

function evidenceOf(ws: Workspace) {
  return (now: string, from: string, to: string, out: string) =>
    ws.cli(['report', 'evidence', '--from', from, '--to', to, '--out', out, '--intake', ws.intake, '--ledger', ws.ledger, '--json'], {
      SETTLE_TEST_NOW: now,
    });
}

describe.each(['sqlite', 'postgres'] as LedgerStore[])('evidence periods on a %s ledger', (store) => {
  it('the whole range 0001-01-01 to 9999-12-31 holds every load; a day holds its reprocessing and every event; a later night changes no earlier pack', async () => {
    const ws = await ownWorkspace({ ledger: store });
    const at = (now: string, args: string[]) => ws.cli(args, { SETTLE_TEST_NOW: now });
    const reprocess = (now: string, name: string) =>
      at(now, ['run', '--reprocess', '--intake', ws.intake, '--ledger', ws.ledger, '--reason', 'fee fix FIN-7', '--files', name]);
    const evidence = evidenceOf(ws);
    const pack = (name: string) => join(ws.root, name);
    const file = (day: string, prefix: string) => sampleSettlement({ date: day, rows: 4, idPrefix: prefix }).text;

    // Mon 2 Nov: two files load; one is reprocessed that afternoon. Tue 3 Nov: nothing. Wed 4 Nov: two more.
    await ws.put('settle_20261102_a01.csv', file('2026-11-02', 'EA1'));
    await ws.put('settle_20261102_a02.csv', file('2026-11-02', 'EA2'));
    expect((await at('2026-11-02T03:00:00Z', ws.runArgs())).status).toBe(0);
    expect((await reprocess('2026-11-02T14:00:00Z', 'settle_20261102_a01.csv')).status).toBe(0);
    await ws.put('settle_20261104_a01.csv', file('2026-11-04', 'EB1'));
    await ws.put('settle_20261104_a02.csv', file('2026-11-04', 'EB2'));
    expect((await at('2026-11-04T03:00:00Z', ws.runArgs())).status).toBe(0);

    const first = await evidence('2026-11-05T08:00:00Z', '2026-11-02', '2026-11-02', pack('nov2-first'));
    expect(first.status, first.stderr).toBe(0);
    const quietFirst = await evidence('2026-11-05T08:00:00Z', '2026-11-03', '2026-11-03', pack('nov3-first'));
    expect(quietFirst.status, quietFirst.stderr).toBe(0);
    expect(JSON.parse(quietFirst.stdout)).toMatchObject({ loads: 0, reprocessings: 0, events: 0 });

    // the day's pack: its two loads and its reprocessing, and every event the ledger recorded that day
    const day = JSON.parse(first.stdout) as PackSummary;
    const events = ws.query<{ id: number; at: string }>('SELECT id, at FROM ledger_events ORDER BY id');
    const ofTheDay = events.filter((e) => new Date(e.at).toISOString().startsWith('2026-11-02')).map((e) => String(e.id));
    expect(day).toMatchObject({ loads: 2, reprocessings: 1, events: ofTheDay.length });
    const loads = csvRows(await readFile(join(pack('nov2-first'), 'loads.csv'), 'utf8'));
    expect(loads.slice(1).map((l) => [l[1], l[3], l[6]])).toEqual([
      ['loaded', 'settle_20261102_a01.csv', '4'],
      ['loaded', 'settle_20261102_a02.csv', '4'],
      ['reprocessed', 'settle_20261102_a01.csv', '4'],
    ]);
    expect(loads[3]![9]).toBe('fee fix FIN-7');
    expect(
      csvRows(await readFile(join(pack('nov2-first'), 'events.csv'), 'utf8'))
        .slice(1)
        .map((e) => e[0]),
    ).toEqual(ofTheDay);
    const checked = execFileSync('sha256sum', ['-c', join(pack('nov2-first'), 'SHA256SUMS.default')], {
      cwd: ws.archive,
      encoding: 'utf8',
    });
    expect(checked.trim().split('\n').sort()).toEqual(['settle_20261102_a01.csv: OK', 'settle_20261102_a02.csv: OK']);

    // Fri 6 Nov: a resend of Monday's file is skipped (an event of Monday's content), and it is reprocessed again
    await ws.put('settle_20261102_a01-again.csv', file('2026-11-02', 'EA1'));
    expect((await at('2026-11-06T03:00:00Z', ws.runArgs())).status).toBe(0);
    expect((await reprocess('2026-11-06T10:00:00Z', 'settle_20261102_a01.csv')).status).toBe(0);
    const again = await evidence('2026-11-06T12:00:00Z', '2026-11-02', '2026-11-02', pack('nov2-again'));
    const quietAgain = await evidence('2026-11-06T12:00:00Z', '2026-11-03', '2026-11-03', pack('nov3-again'));
    for (const [one, two] of [
      [first, again],
      [quietFirst, quietAgain],
    ] as const) {
      expect((JSON.parse(two.stdout) as PackSummary).manifest_sha256).toBe((JSON.parse(one.stdout) as PackSummary).manifest_sha256);
    }
    for (const [one, two] of [
      ['nov2-first', 'nov2-again'],
      ['nov3-first', 'nov3-again'],
    ] as const) {
      for (const name of PERIOD_FILES)
        expect(await readFile(join(pack(two), name)), `${two}/${name}`).toEqual(await readFile(join(pack(one), name)));
      expect(execFileSync('sha256sum', ['-c', 'MANIFEST'], { cwd: pack(two), encoding: 'utf8' }).match(/: OK$/gm)).toHaveLength(4);
    }
    // the audit inside says when it was taken, and stands outside the manifest
    expect(JSON.parse(await readFile(join(pack('nov2-first'), 'audit.json'), 'utf8'))).toMatchObject({
      taken_at: expect.stringMatching(/^2026-11-05T08:00/),
    });
    expect(JSON.parse(await readFile(join(pack('nov2-again'), 'audit.json'), 'utf8'))).toMatchObject({
      taken_at: expect.stringMatching(/^2026-11-06T12:00/),
    });
    expect(await readFile(join(pack('nov2-first'), 'MANIFEST'), 'utf8')).not.toContain('audit');

    // the whole range a day can be written in: every load, both reprocessings, every event
    const whole = await evidence('2026-11-06T12:00:00Z', '0001-01-01', '9999-12-31', pack('all'));
    expect(whole.status, whole.stderr).toBe(0);
    expect(JSON.parse(whole.stdout)).toMatchObject({ loads: 4, reprocessings: 2, events: ws.query('SELECT id FROM ledger_events').length });
  });
});

describe('report evidence dates', () => {
  it.each([
    ['--from', '2026-13-01'],
    ['--to', '2026-02-30'],
    ['--from', '0000-01-01'],
    ['--to', '2026-1-01'],
  ])('%s %s is exit 2 with one line naming the flag and the value, and writes nothing', async (flag, value) => {
    const ws = await ownWorkspace();
    const out = join(ws.root, 'pack');
    const period = { '--from': '2026-12-01', '--to': '2026-12-31', [flag]: value };
    const r = await ws.cli([
      'report',
      'evidence',
      '--from',
      period['--from']!,
      '--to',
      period['--to']!,
      '--out',
      out,
      '--intake',
      ws.intake,
      '--ledger',
      ws.ledger,
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`${flag} ${value} is not a day`);
    expect(await stat(out).catch(() => null)).toBeNull();
    expect(await readdir(ws.root)).not.toContain('pack');
  });
});

describe('the pack in a spreadsheet and under sha256sum', () => {
  it('writes a cell a spreadsheet would run with a quote before it, keeps the name exactly in file_json, and SHA256SUMS of a name with a line break verifies', async () => {
    const ws = await ownWorkspace();
    const names = ["=cmd|' -C calc'!A0.csv", '+SUM(1).csv', '-2+3.csv', '@SUM(A1).csv', '\tTAB.csv', 'line\nbreak.csv'];
    for (const [i, name] of names.entries())
      await ws.put(name, sampleSettlement({ date: '2026-11-10', rows: 2, idPrefix: `SPR${i}` }).text);
    const now = { SETTLE_TEST_NOW: '2026-11-10T03:00:00Z' };
    const run = await ws.cli(ws.runArgs(['--pattern', '*.csv']), now);
    expect(run.status, run.stderr).toBe(0);
    const out = join(ws.root, 'pack');
    const pack = await evidenceOf(ws)('2026-11-10T09:00:00Z', '2026-11-10', '2026-11-10', out);
    expect(pack.status, pack.stderr).toBe(0);

    const loads = csvRows(await readFile(join(out, 'loads.csv'), 'utf8'));
    const header = loads[0]!;
    const [file, exact] = [header.indexOf('file'), header.indexOf('file_json')];
    const shown = new Map(loads.slice(1).map((l) => [JSON.parse(l[exact]!) as string, l[file]]));
    expect([...shown.keys()].sort()).toEqual([...names].sort());
    for (const name of names) expect(shown.get(name), name).toBe(/^[=+\-@\t]/.test(name) ? `'${name}` : name);
    for (const csv of ['loads.csv', 'events.csv']) {
      const cells = csvRows(await readFile(join(out, csv), 'utf8')).flat();
      expect(
        cells.filter((cell) => /^[=+\-@\t\r]/.test(cell)),
        csv,
      ).toEqual([]);
    }
    const sums = execFileSync('sha256sum', ['-c', join(out, 'SHA256SUMS.default')], { cwd: ws.archive, encoding: 'utf8' });
    expect(sums.match(/: OK$/gm)).toHaveLength(names.length);
  });
});
