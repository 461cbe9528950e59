import { describe, expect, it } from 'vitest';
import { cents, HEADER, sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { sharedFinanceDatabase, parseSummary, Workspace, ROWS_WITH_SOURCE } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function rowsFrom(name: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(r.rows[0]!.n);
}

describe('what a run does with each file', () => {
  it('skips a same-name resend after archiving, keeping the archived file and the rows as they were', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-04-01', rows: 50, idPrefix: 'SAME' });
    await ws.put('settle_20260401_a01.csv', f.text);
    const first = parseSummary((await ws.run()).stdout);
    await ws.put('settle_20260401_a01.csv', f.text);
    const again = await ws.run(['--json']);
    expect(again.status).toBe(0);
    const j = JSON.parse(again.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 1 });
    expect(j.files[0].duplicate_of).toMatchObject({ name: 'settle_20260401_a01.csv', run: first.run });
    expect(await ws.files('archive')).toEqual(['settle_20260401_a01.csv']);
    expect(await ws.files('duplicates')).toEqual(['settle_20260401_a01.csv']);
    expect(await ws.files('intake')).toEqual([]);
    expect(await rowsFrom('settle_20260401_a01.csv')).toBe(50);
    expect(ws.ledgerFile('settle_20260401_a01.csv')).toMatchObject({ state: 'loaded', location: `${ws.archive}/settle_20260401_a01.csv` });
  });

  it('rejects a file with one bad amount whole, naming line and field, while a good file in the same run loads', async () => {
    const ws = await Workspace.create(db.url);
    const good = sampleSettlement({ date: '2026-04-02', rows: 30, idPrefix: 'GOOD' });
    const lines = sampleSettlement({ date: '2026-04-02', rows: 30, idPrefix: 'BAD' }).text.split('\n');
    lines[12] = lines[12]!.replace(/,(-?\d+\.\d\d),(-?\d+\.\d\d),/, ',$1,1.234,'); // line 13: fee with three places
    await ws.put('settle_20260402_a01.csv', good.text);
    await ws.put('settle_20260402_b01.csv', lines.join('\n'));
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, rejected: 1, rows: 30 });
    const rejected = j.files.find((f: { outcome: string }) => f.outcome === 'rejected');
    expect(rejected.name).toBe('settle_20260402_b01.csv');
    expect(rejected.error).toMatch(/^line 13, field fee_amount: "1.234"/);
    expect(await rowsFrom('settle_20260402_b01.csv')).toBe(0);
    expect(await rowsFrom('settle_20260402_a01.csv')).toBe(30);
    expect(await ws.files('rejected')).toEqual(['settle_20260402_b01.csv']);
    expect(await ws.files('archive')).toEqual(['settle_20260402_a01.csv']);
    expect((await ws.read('rejected', 'settle_20260402_b01.csv')).toString()).toBe(lines.join('\n'));
    expect(ws.ledgerFile('settle_20260402_b01.csv')).toMatchObject({ state: 'rejected', reason: expect.stringContaining('line 13') });
    const fileLoads = await db.client.query('SELECT 1 FROM settle.file_loads WHERE file_name = $1', ['settle_20260402_b01.csv']);
    expect(fileLoads.rowCount).toBe(0);
  });

  it.each([
    ['a wrong header', (l: string[]) => (l[0] = l[0]!.replace('gross_amount', 'gross')), /^line 1: header/],
    ['a bad date', (l: string[]) => (l[4] = l[4]!.replace('2026-04-03', '2026-04-31')), /^line 5, field settlement_date/],
    ['a missing merchant', (l: string[]) => (l[6] = l[6]!.replace(/,M\d+,/, ',,')), /^line 7, field merchant_id: required/],
    ['a ragged row', (l: string[]) => (l[8] = l[8]! + ',extra'), /^line 9: expected 9 fields, found 10/],
    [
      'a repeated transaction id',
      (l: string[]) => (l[10] = l[10]!.replace(/RAG-\d+/, 'RAG-0000001')),
      /line 11: "RAG-0000001" repeats line 2/,
    ],
  ])('rejects %s with nothing loaded', async (_what, spoil, message) => {
    const ws = await Workspace.create(db.url);
    const lines = sampleSettlement({ date: '2026-04-03', rows: 12, idPrefix: 'RAG' }).text.split('\n');
    spoil(lines);
    await ws.put('settle_20260403_a01.csv', lines.join('\n'));
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).files[0].error).toMatch(message);
    expect(await rowsFrom('settle_20260403_a01.csv')).toBe(0);
    expect(await ws.files('rejected')).toEqual(['settle_20260403_a01.csv']);
  });

  it('rejects invalid UTF-8, naming the line and field', async () => {
    const ws = await Workspace.create(db.url);
    const text = sampleSettlement({ date: '2026-04-04', rows: 5, idPrefix: 'ENC' }).text;
    const bytes = Buffer.from(text.replace('ENC-0000003', 'ENC-000000\u0001'));
    bytes[bytes.indexOf(0x01)] = 0xe9; // a Latin-1 é
    await ws.put('settle_20260404_a01.csv', bytes);
    const r = await ws.run(['--json']);
    expect(JSON.parse(r.stdout).files[0].error).toMatch(
      /^line 4, field transaction_id: not valid UTF-8 \(0xE9 in .*set the layout's "encoding"$/,
    );
    expect(await ws.files('rejected')).toEqual(['settle_20260404_a01.csv']);
  });

  it('loads BOM, CRLF and quoted fields with commas and doubled quotes, amounts exact to the cent', async () => {
    const ws = await Workspace.create(db.url);
    const rows = [
      ['2026-04-05', 'Q-1', '"M, ""North"" branch"', 'VISA', 'sale', '1234567.89', '18518.52', '1216049.37', 'EUR'],
      ['2026-04-05', 'Q-2', 'M2', '"MASTER,CARD"', 'refund', '-0.10', '0.00', '-0.10', 'EUR'],
      ['2026-04-05', 'Q-3', 'M3', 'AMEX', 'sale', '0.1', '0.01', '0.09', 'USD'],
    ];
    const text = `\uFEFF${HEADER}\r\n${rows.map((r) => r.join(',')).join('\r\n')}\r\n`;
    await ws.put('settle_20260405_a01.csv', text);
    const r = await ws.run();
    expect(r.status).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    const sums = await db.client.query<{ gross: string; net: string; merchant: string; brand: string }>(
      `SELECT sum(gross_amount)::text AS gross, sum(net_amount)::text AS net,
              max(merchant_id) FILTER (WHERE transaction_id = 'Q-1') AS merchant,
              max(card_brand) FILTER (WHERE transaction_id = 'Q-2') AS brand
         FROM ${ROWS_WITH_SOURCE} WHERE source_name = 'settle_20260405_a01.csv'`,
    );
    const fileNet = cents([121604937n, -10n, 9n].reduce((a, b) => a + b));
    expect(sums.rows[0]).toEqual({ gross: '1234567.89', net: fileNet, merchant: 'M, "North" branch', brand: 'MASTER,CARD' });
    const lines = await db.client.query(`SELECT transaction_id, source_line FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1 ORDER BY 2`, [
      'settle_20260405_a01.csv',
    ]);
    expect(lines.rows.map((x) => x.source_line)).toEqual([2, 3, 4]);
  });

  it('counts uploads under temporary names as not ready, and every other name it does not take as ignored, by name', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-04-06', rows: 5, idPrefix: 'PART' }).text;
    const uploading = [
      'settle_20260406_a01.csv.part',
      'settle_20260406_a01.csv.filepart',
      '.settle_20260406_a02.csv',
      'settle_20260406_a03.csv.tmp',
    ];
    const strangers = ['settle_20260406_a04.CSV', 'SETTLE_20260406_a05.csv', 'README.txt'];
    for (const n of [...uploading, ...strangers]) await ws.put(n, f);

    const r = await ws.run(['--json']);
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout) as { files: { name: string; outcome: string }[] } & Record<string, unknown>;
    expect(summary).toMatchObject({ loaded: 0, skipped: 0, held: 0, rejected: 0, failed: 0, rows: 0, not_ready: 4, ignored: 3 });
    const by = (outcome: string) =>
      summary.files
        .filter((x) => x.outcome === outcome)
        .map((x) => x.name)
        .sort();
    expect(by('ignored')).toEqual([...strangers].sort());
    expect(by('not_ready')).toEqual([...uploading].sort());
    expect((await ws.files('intake')).length).toBe(7);
    expect(ws.ledgerFiles()).toEqual([]);
    expect(ws.runs()[0]).toMatchObject({ loaded: 0, skipped: 0, ignored: 3, not_ready: 4, exit_status: 0 });

    // a known neighbour named with --ignore is neither taken nor counted
    const known = parseSummary((await ws.run(['--ignore', 'README.*'])).stdout);
    expect(known).toMatchObject({ ignored: 2, not_ready: 4 });
  });

  it('records an ignored name once, not once per run, yet counts and lists it every run; a changed one is recorded again', async () => {
    const ws = await Workspace.create(db.url);
    const strangers = ['README.txt', 'notes.md', 'settle_20260408_a01.CSV'];
    for (const n of strangers) await ws.put(n, 'not a settlement file\n');
    const runs = [];
    // (left there longer than --max-waiting-runs, they would be named as waiting too long: another test's case)
    for (let i = 0; i < 3; i++) runs.push(JSON.parse((await ws.run(['--json', '--max-waiting-runs', '9'])).stdout));
    for (const j of runs) {
      expect(j).toMatchObject({ ignored: 3, exit_status: 0 });
      expect(j.files.map((f: { name: string }) => f.name).sort()).toEqual([...strangers].sort());
    }
    expect(ws.runs().map((r) => r.ignored)).toEqual([3, 3, 3]);
    expect(ws.events().filter((e) => e.event === 'ignored')).toHaveLength(3);

    await ws.put('notes.md', 'a longer note, so another size\n');
    expect(JSON.parse((await ws.run(['--json', '--max-waiting-runs', '9'])).stdout)).toMatchObject({ ignored: 3 });
    const events = ws.events().filter((e) => e.event === 'ignored');
    expect(events.map((e) => e.name).sort()).toEqual([...strangers, 'notes.md'].sort());
    expect(events.at(-1)).toMatchObject({ name: 'notes.md', run_id: ws.runs()[3]!.run_id });
  });

  it('keeps both files when a second identical resend meets a name already in duplicates/', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-04-07', rows: 8, idPrefix: 'CLASH' }).text;
    await ws.put('settle_20260407_a01.csv', f);
    await ws.run();
    await ws.put('settle_20260407_a02.csv', f);
    await ws.run();
    await ws.put('settle_20260407_a02.csv', f);
    const r = await ws.run();
    expect(parseSummary(r.stdout)).toMatchObject({ skipped: 1 });
    expect(await ws.files('duplicates')).toEqual(['settle_20260407_a02.1.csv', 'settle_20260407_a02.csv']);
    expect((await ws.read('duplicates', 'settle_20260407_a02.1.csv')).toString()).toBe(f);
    expect((await ws.read('duplicates', 'settle_20260407_a02.csv')).toString()).toBe(f);
    expect(await rowsFrom('settle_20260407_a01.csv')).toBe(8);
  });
});

describe('the sample files in fixtures/', () => {
  it('load (12 rows) and reject (line 5, gross_amount) as their names say', async () => {
    const { readFile } = await import('node:fs/promises');
    const ws = await Workspace.create(db.url);
    for (const name of ['settle_20260314_a01.csv', 'settle_20260315_bad_amount.csv']) {
      await ws.put(name, await readFile(new URL(`../../fixtures/${name}`, import.meta.url)));
    }
    const r = await ws.run(['--json']);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, rejected: 1, rows: 12 });
    expect(j.files.find((f: { outcome: string }) => f.outcome === 'rejected').error).toMatch(/^line 5, field gross_amount: "12.5O"/);
  });
});
