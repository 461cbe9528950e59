import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** A layout of record types, a count record and a trailer, as a bank's statement has them. */
const TYPED = {
  table: 'check_typed_rows',
  columns: [
    { name: 'ref', type: 'text' },
    { name: 'amount', type: 'decimal' },
  ],
  naturalKey: 'ref',
  recordTypes: { H: 'header', D: 'data', C: { count: 2 } },
  trailer: { firstField: 'T', rowCountField: 2 },
};

/** A statement whose footer, free text after its rows, states their number (issue 46.6). */
const FOOTED = {
  table: 'check_footed_rows',
  columns: [
    { name: 'ref', type: 'text' },
    { name: 'amount', type: 'decimal' },
  ],
  naturalKey: 'ref',
  footer: { startsAt: '^#-+ end' },
  captures: { stated_rows: { line: '^#共(\\d+)笔记录', at: 'footer' } },
  totals: [{ statement: { count: 'stated_rows' } }],
};

/** An integer key, which the table's UNIQUE index compares as a number. */
const NUMBERED = {
  table: 'check_numbered_rows',
  columns: [
    { name: 'seq', type: 'integer' },
    { name: 'amount', type: 'decimal' },
  ],
  naturalKey: 'seq',
};

interface Setup {
  ws: Workspace;
  config: string[];
}

/** A workspace migrated for `layout` (the default preset when none), its config flags, and a folder outside the intake for `check`. */
async function setUp(layout?: unknown): Promise<Setup> {
  const ws = await Workspace.create(db.url);
  if (layout === undefined) return { ws, config: [] };
  const path = join(ws.root, 'partner.json');
  await writeFile(path, JSON.stringify({ layout, pattern: '*' }));
  const migrated = await ws.cli(['migrate', '--config', path, '--ledger', ws.ledger]);
  expect(migrated.status, migrated.stderr).toBe(0);
  return { ws, config: ['--config', path] };
}

/**
 * The same bytes, under the same name, given to `check` (outside the intake) and to a run:
 * both refuse it, with the same exit status and the same reason; the run loads nothing.
 */
async function bothRefuse(setup: Setup, name: string, bytes: string | Buffer, runFlags: string[] = []) {
  const { ws, config } = setup;
  const outside = join(ws.root, 'checked');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, name), bytes);
  const checked = await ws.cli(['check', ...config, join(outside, name), '--json']);
  expect(checked.stderr).toBe('');
  const checkedFile = (JSON.parse(checked.stdout) as { files: { outcome: string; error: string | null; rows: number | null }[] }).files[0]!;

  await ws.put(name, bytes);
  const ran = await ws.run([...config, ...runFlags, '--json']);
  const ranFile = (JSON.parse(ran.stdout) as { files: { name: string; outcome: string; error: string }[] }).files.find(
    (f) => f.name === name,
  )!;
  expect(ranFile.outcome).toBe('rejected');
  expect(await ws.files('rejected')).toEqual([name]);
  expect(await ws.files('archive')).toEqual([]);
  expect(checkedFile.outcome).toBe('rejected');
  expect(checked.status).toBe(ran.status);
  expect(ran.status).toBe(1);
  return { checkError: checkedFile.error!, runError: ranFile.error, ledger: ws.ledgerFile(name)! };
}

/** The sample settlement of `rows` rows with ids PREFIX-…, as text lines (the header is line 1). */
const sampleLines = (prefix: string, rows: number) => sampleSettlement({ date: '2026-11-20', rows, idPrefix: prefix }).text.split('\n');

describe('check refuses what a run refuses, for the same reason', () => {
  it('a natural key repeated within the file (the database refuses it at the load; check finds it without one)', async () => {
    const setup = await setUp();
    const lines = sampleLines('CHKREP', 4);
    const repeated = lines[1]!.split(',')[1]!;
    lines[3] = lines[3]!.replace(/^([^,]*),[^,]*,/, `$1,${repeated},`);
    const text = lines.join('\n');
    const { checkError, runError, ledger } = await bothRefuse(setup, 'settle_20261120_rep.csv', text);
    expect(runError).toBe(`field transaction_id: 1 value(s) already used: line 4: "${repeated}" repeats line 2 of this file`);
    expect(checkError).toBe(runError);
    expect(ledger).toMatchObject({ state: 'rejected', reason: runError });
    expect(await rowsWithPrefix(db, 'CHKREP')).toBe(0);
  });

  it('an integer key written 007 beside 7: one number to the table, one key to check', async () => {
    const setup = await setUp(NUMBERED);
    const text = 'seq,amount\n7,1.00\n8,2.00\n007,3.00\n';
    const { checkError, runError } = await bothRefuse(setup, 'numbered_1.csv', text);
    expect(runError).toBe('field seq: 1 value(s) already used: line 4: "007" repeats line 2 of this file');
    expect(checkError).toBe(runError);
    const n = await db.client.query<{ n: number }>('SELECT count(*)::int AS n FROM settle.check_numbered_rows');
    expect(n.rows[0]!.n).toBe(0);
  });

  it('a bad value, and a key longer than a key may be', async () => {
    const setup = await setUp();
    const lines = sampleLines('CHKBAD', 3);
    lines[2] = lines[2]!.replace(/^([^,]*),[^,]*,/, `$1,${'K'.repeat(300)},`);
    lines[3] = lines[3]!.replace(/,(-?\d+)\.(\d\d),/, ',$1.$2x,');
    const { checkError, runError } = await bothRefuse(setup, 'settle_20261120_bad.csv', lines.join('\n'));
    expect(runError).toMatch(/^2 bad rows: line 3, field transaction_id: .*300 bytes long.*; line 4, field \w+_amount: /);
    expect(checkError).toBe(runError);
  });

  it('a record longer than --max-record-bytes', async () => {
    const setup = await setUp();
    const lines = sampleLines('CHKWIDE', 2);
    lines[2] = lines[2]!.replace(/^([^,]*),[^,]*,/, `$1,CHKWIDE-${'W'.repeat(2000)},`);
    const text = lines.join('\n');
    const { checkError, runError } = await bothRefuse(
      { ws: setup.ws, config: ['--max-record-bytes', '1024'] },
      'settle_20261120_wide.csv',
      text,
    );
    expect(runError).toBe('line 3: the record is longer than 1,024 bytes (--max-record-bytes)');
    expect(checkError).toBe(runError);
  });

  it('an empty file (no header)', async () => {
    const { checkError, runError } = await bothRefuse(await setUp(), 'settle_20261120_empty.csv', '');
    expect(runError).toBe('line 1: the file is empty (no header)');
    expect(checkError).toBe(runError);
  });

  it('a gzip delivery cut short (the decoding layer)', async () => {
    const setup = await setUp();
    const whole = gzipSync(sampleSettlement({ date: '2026-11-20', rows: 50, idPrefix: 'CHKGZ' }).text);
    const { checkError, runError } = await bothRefuse(setup, 'settle_20261120_cut.csv.gz', whole.subarray(0, whole.length - 40), [
      '--pattern',
      'settle_*.csv.gz',
    ]);
    expect(runError).toMatch(/gzip/);
    expect(checkError).toBe(runError);
  });

  it('a record type the layout does not name', async () => {
    const text = 'H,ref,amount\nD,T1,1.00\nX,T2,2.00\nT,2\n';
    const { checkError, runError } = await bothRefuse(await setUp(TYPED), 'typed_type.csv', text);
    expect(runError).toBe('line 3: "X" is not a record type of the layout (H, D, C, T)');
    expect(checkError).toBe(runError);
  });

  it('a count record that disagrees with the data records before it', async () => {
    const text = 'H,ref,amount\nD,C1,1.00\nD,C2,2.00\nC,3\nT,2\n';
    const { checkError, runError } = await bothRefuse(await setUp(TYPED), 'typed_count.csv', text);
    expect(runError).toBe('line 4, C: says 3 data records, the file has 2 before it');
    expect(checkError).toBe(runError);
  });

  it('a trailer that disagrees, and a file without its trailer once a run has stopped waiting for it', async () => {
    const setup = await setUp(TYPED);
    const wrong = await bothRefuse(setup, 'typed_trailer.csv', 'H,ref,amount\nD,R1,1.00\nD,R2,2.00\nT,3\n');
    expect(wrong.runError).toMatch(/^line 4, trailer: says 3 rows, the file has 2$/);
    expect(wrong.checkError).toBe(wrong.runError);

    const other = await setUp(TYPED);
    const missing = await bothRefuse(other, 'typed_missing.csv', 'H,ref,amount\nD,M1,1.00\nD,M2,2.00\n', ['--max-waiting-runs', '0']);
    expect(missing.runError).toBe('the file ends at line 3 without its trailer (a line starting "T"): it is incomplete');
    expect(missing.checkError).toBe(missing.runError);
  });

  it('a footer whose count disagrees, and a file cut before its footer once a run has stopped waiting for it', async () => {
    const wrong = await bothRefuse(await setUp(FOOTED), 'footed_count.csv', 'ref,amount\nF1,1.00\nF2,2.00\n#----- end\n#共3笔记录, "x\n');
    expect(wrong.runError).toBe('line 5, statement: stated_rows says 3 rows, the file has 2');
    expect(wrong.checkError).toBe(wrong.runError);

    const missing = await bothRefuse(await setUp(FOOTED), 'footed_cut.csv', 'ref,amount\nG1,1.00\nG2,2.00\n', ['--max-waiting-runs', '0']);
    expect(missing.runError).toBe(
      'the file ends at line 3 without its footer (a line after the rows matching /^#-+ end/): it is incomplete',
    );
    expect(missing.checkError).toBe(missing.runError);
  });

  it('an upload that stopped mid-line: a run waits for the rest, then rejects it as incomplete; check says so at once', async () => {
    const whole = sampleSettlement({ date: '2026-11-20', rows: 5, idPrefix: 'CHKCUT' }).text;
    const lastLineStart = whole.lastIndexOf('\n', whole.length - 2) + 1;
    const cut = whole.slice(0, lastLineStart + whole.slice(lastLineStart).split(',').slice(0, 2).join(',').length + 3);
    const { checkError, runError, ledger } = await bothRefuse(await setUp(), 'settle_20261120_cut.csv', cut, ['--max-waiting-runs', '0']);
    const where = 'the upload stopped mid-line 6';
    const shape = '(3 of 9 fields, no line end)';
    expect(runError).toBe(`${where} (--max-waiting-runs 0: no run waits for the rest) ${shape}: it is incomplete`);
    expect(checkError).toBe(
      `${where} ${shape}: a run leaves it in the intake as not ready for --max-waiting-runs runs, then rejects it as incomplete`,
    );
    expect(ledger).toMatchObject({ state: 'rejected' });
  });
});

describe('a file check accepts', () => {
  it('is loaded by a run, every row', async () => {
    const { ws } = await setUp();
    const name = 'settle_20261121_ok.csv';
    const text = sampleSettlement({ date: '2026-11-21', rows: 6, idPrefix: 'CHKOK' }).text;
    const outside = join(ws.root, name);
    await writeFile(outside, text);
    const checked = await ws.cli(['check', outside]);
    expect(checked.stdout.trim()).toBe(`${outside}: ok, 6 rows`);
    expect(checked.status).toBe(0);

    await ws.put(name, text);
    const ran = await ws.run(['--json']);
    expect(ran.status, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout)).toMatchObject({ loaded: 1, rejected: 0 });
    expect(await ws.files('archive')).toEqual([name]);
    expect(await rowsWithPrefix(db, 'CHKOK')).toBe(6);
  });

  it('of record types, counts and a trailer, is loaded by a run', async () => {
    const setup = await setUp(TYPED);
    const name = 'typed_ok.csv';
    const text = 'H,ref,amount\nD,OK1,1.00\nD,OK2,2.00\nC,2\nD,OK3,3.50\nC,1\nT,3\n';
    const outside = join(setup.ws.root, name);
    await writeFile(outside, text);
    const checked = await setup.ws.cli(['check', ...setup.config, outside]);
    expect(checked.stdout.trim()).toBe(`${outside}: ok, 3 rows`);
    await setup.ws.put(name, text);
    const ran = await setup.ws.run([...setup.config]);
    expect(ran.status, ran.stderr).toBe(0);
    const rows = await db.client.query<{ ref: string; amount: string }>(
      `SELECT ref, amount::text FROM settle.check_typed_rows WHERE ref LIKE 'OK%' ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      { ref: 'OK1', amount: '1.00' },
      { ref: 'OK2', amount: '2.00' },
      { ref: 'OK3', amount: '3.50' },
    ]);
  });
});

describe('a name the configured pattern does not take', () => {
  it('is not ok to check (exit 1, the reason a run gives), and a run leaves it in the intake, loading nothing', async () => {
    const { ws } = await setUp();
    const path = join(ws.root, 'partner.json');
    await writeFile(path, JSON.stringify({ pattern: 'settle_*_eu.csv' }));
    const name = 'settle_20261122_us.csv';
    const text = sampleSettlement({ date: '2026-11-22', rows: 2, idPrefix: 'CHKNAME' }).text;
    const outside = join(ws.root, name);
    await writeFile(outside, text);
    const checked = await ws.cli(['check', '--config', path, outside, '--json']);
    expect(checked.status).toBe(1);
    const file = (JSON.parse(checked.stdout) as { files: { outcome: string; error: string }[] }).files[0]!;
    expect(file).toMatchObject({ outcome: 'ignored', error: 'the pattern does not take this name (pattern settle_*_eu.csv)' });

    await ws.put(name, text);
    const ran = await ws.run(['--config', path, '--json']);
    expect(JSON.parse(ran.stdout)).toMatchObject({ loaded: 0, ignored: 1 });
    expect(await ws.files('intake')).toEqual([name]);
    expect(await rowsWithPrefix(db, 'CHKNAME')).toBe(0);

    // the same file under a name the pattern takes: ok, and loaded
    const taken = join(ws.root, 'settle_20261122_eu.csv');
    await writeFile(taken, text);
    expect((await ws.cli(['check', '--config', path, taken])).stdout.trim()).toBe(`${taken}: ok, 2 rows`);
  });
});
