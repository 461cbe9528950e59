import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { from as copyFrom } from 'pg-copy-streams';
import { describe, expect, it } from 'vitest';
import { HEADER, sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { feedCopy } from '../../src/finance/feedCopy.js';
import { parseSummary, sharedFinanceDatabase, Workspace, ROWS_WITH_SOURCE } from '../support/workspace.js';

const db = sharedFinanceDatabase();

async function rowsFrom(name: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(r.rows[0]!.n);
}

interface FileOutcome {
  name: string;
  outcome: string;
  error?: string;
}

/** The run's own account of one file, from its --json summary. */
function outcomeOf(stdout: string, name: string): FileOutcome {
  const f = (JSON.parse(stdout) as { files: FileOutcome[] }).files.find((x) => x.name === name);
  if (!f) throw new Error(`${name} is not in the summary: ${stdout}`);
  return f;
}

/**
 * Asserts the whole effect of a reject: the run's word, the ledger's state, reason and event
 * (with line and field), the exact bytes in rejected/, nothing in the finance database.
 */
async function expectRejected(
  ws: Workspace,
  stdout: string,
  name: string,
  bytes: Buffer,
  reason: RegExp,
  at: { line: number; field?: string },
) {
  expect(outcomeOf(stdout, name)).toMatchObject({ outcome: 'rejected', error: expect.stringMatching(reason) });
  expect(ws.ledgerFile(name)).toMatchObject({ state: 'rejected', reason: expect.stringMatching(reason) });
  const event = ws.events().find((e) => e.name === name && e.event === 'rejected');
  expect(event?.details).toMatchObject({ line: at.line, ...(at.field ? { field: at.field } : {}) });
  expect((await ws.read('rejected', name)).equals(bytes)).toBe(true);
  expect(await rowsFrom(name)).toBe(0);
  const marker = await db.client.query('SELECT 1 FROM settle.file_loads WHERE file_name = $1', [name]);
  expect(marker.rowCount).toBe(0);
}

describe('hostile rows are rejected with their line and field, never loaded and never a database error', () => {
  it('rejects resends whose ids differ from a loaded file only by a trailing space, a zero-width space, an NBSP or a BOM', async () => {
    const ws = await Workspace.create(db.url);
    const original = sampleSettlement({ date: '2026-05-01', rows: 6, idPrefix: 'LOOK' }).text;
    await ws.put('settle_20260501_a01.csv', original);
    expect((await ws.run()).status).toBe(0);

    const variants: [string, (id: string) => string, RegExp][] = [
      ['b01', (id) => `${id} `, /" ends with a space: "trim": true would remove the padding;/],
      ['b02', (id) => `${id}\u200b`, /\\u200b" contains an invisible or control character \(U\+200B\)/],
      ['b03', (id) => `${id}\u00a0`, /\\u00a0" ends with a space \(U\+00A0\): "trim": true/],
      ['b04', (id) => `\ufeff${id}`, /"\\ufeffLOOK-0000001" contains an invisible or control character \(U\+FEFF\)/],
    ];
    const resends = new Map<string, Buffer>();
    for (const [suffix, spoil, _reason] of variants) {
      const bytes = Buffer.from(original.replace(/LOOK-\d{7}/g, spoil));
      resends.set(`settle_20260501_${suffix}.csv`, bytes);
      await ws.put(`settle_20260501_${suffix}.csv`, bytes);
    }
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 0, rejected: 4, failed: 0, rows: 0 });
    for (const [suffix, , reason] of variants) {
      const name = `settle_20260501_${suffix}.csv`;
      // every id of the file is spoiled: all six rows are named, each with its line and field
      await expectRejected(
        ws,
        r.stdout,
        name,
        resends.get(name)!,
        /^6 bad rows: line 2, field transaction_id: ".*; line 7, field transaction_id: "/,
        {
          line: 2,
          field: 'transaction_id',
        },
      );
      expect(outcomeOf(r.stdout, name).error).toMatch(reason);
    }
    const all = await db.client.query<{ n: string }>(
      `SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE '%LOOK-%'`,
    );
    expect(Number(all.rows[0]!.n)).toBe(6);
    expect(await ws.files('archive')).toEqual(['settle_20260501_a01.csv']);
    expect(await ws.files('intake')).toEqual([]);
  });

  it('rejects a 2,704-byte id naming line and field, instead of failing on the index every night', async () => {
    const ws = await Workspace.create(db.url);
    const lines = sampleSettlement({ date: '2026-05-02', rows: 5, idPrefix: 'LONG' }).text.split('\n');
    lines[3] = lines[3]!.replace('LONG-0000003', 'K'.repeat(2704));
    const bytes = Buffer.from(lines.join('\n'));
    await ws.put('settle_20260502_a01.csv', bytes);
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ rejected: 1, failed: 0 });
    const reason = /^line 4, field transaction_id: "K{80}…" is 2704 bytes long; a key may have at most 256$/;
    await expectRejected(ws, r.stdout, 'settle_20260502_a01.csv', bytes, reason, { line: 4, field: 'transaction_id' });
    expect(ws.ledgerFile('settle_20260502_a01.csv')!.reason!.length).toBeLessThan(400);
  });

  it('rejects the currencies XXX and ABC, year 0000 and 2026-02-30, each with its line and field', async () => {
    const ws = await Workspace.create(db.url);
    const cases: [string, (l: string) => string, number, string, RegExp][] = [
      [
        'a01',
        (l) => l.replace(/,[A-Z]{3}$/, ',XXX'),
        3,
        'currency',
        /^line 3, field currency: "XXX" is not an active ISO 4217 currency code$/,
      ],
      [
        'a02',
        (l) => l.replace(/,[A-Z]{3}$/, ',ABC'),
        5,
        'currency',
        /^line 5, field currency: "ABC" is not an active ISO 4217 currency code$/,
      ],
      [
        'a03',
        (l) => l.replace('2026-05-03', '0000-05-03'),
        4,
        'settlement_date',
        /^line 4, field settlement_date: "0000-05-03" is not a date/,
      ],
      [
        'a04',
        (l) => l.replace('2026-05-03', '2026-02-30'),
        6,
        'settlement_date',
        /^line 6, field settlement_date: "2026-02-30" is not a date/,
      ],
    ];
    const files = new Map<string, Buffer>();
    for (const [suffix, spoil, line] of cases) {
      const lines = sampleSettlement({ date: '2026-05-03', rows: 6, idPrefix: `V${suffix}` }).text.split('\n');
      lines[line - 1] = spoil(lines[line - 1]!);
      files.set(suffix, Buffer.from(lines.join('\n')));
      await ws.put(`settle_20260503_${suffix}.csv`, files.get(suffix)!);
    }
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 0, rejected: 4, failed: 0 });
    for (const [suffix, , line, field, reason] of cases) {
      await expectRejected(ws, r.stdout, `settle_20260503_${suffix}.csv`, files.get(suffix)!, reason, { line, field });
    }
  });

  it('rejects a file whose first line is over 10 kB with a short reason, while a good file in the same run loads', async () => {
    const ws = await Workspace.create(db.url);
    // the last column's name is 15,000 characters long: the header lacks "currency"
    const header = `${HEADER.replace(/,currency$/, '')},${'wide_'.repeat(3000)}`;
    const wide = Buffer.from(
      `${header}\n${sampleSettlement({ date: '2026-05-04', rows: 3, idPrefix: 'WIDE' }).text.split('\n').slice(1).join('\n')}`,
    );
    expect(wide.indexOf('\n')).toBeGreaterThan(10_000);
    const good = sampleSettlement({ date: '2026-05-04', rows: 20, idPrefix: 'FINE' }).text;
    await ws.put('settle_20260504_a01.csv', wide); // sorts first: the good file comes after it in the same run
    await ws.put('settle_20260504_b01.csv', good);
    const r = await ws.run(['--json']);
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, rejected: 1, failed: 0, rows: 20 });
    expect(j.stopped_early).toBeUndefined();
    const reason = /^line 1: header lacks the column "currency" \(it has 9 columns\)$/;
    await expectRejected(ws, r.stdout, 'settle_20260504_a01.csv', wide, reason, { line: 1, field: 'header' });
    expect(ws.ledgerFile('settle_20260504_a01.csv')!.reason!.length).toBeLessThan(400);
    expect(await rowsFrom('settle_20260504_b01.csv')).toBe(20);
    expect(await ws.files('archive')).toEqual(['settle_20260504_b01.csv']);
  });

  it('keeps the COPY connection when the source fails with a message far over the 10,000 bytes a CopyFail may carry', async () => {
    await db.client.query('CREATE TEMP TABLE copy_probe (v text)');
    const long = new Error(`bad row: ${'z'.repeat(50_000)}`);
    async function* source(): AsyncGenerator<string> {
      yield 'a\nb\n';
      throw long;
    }
    const copy = db.client.query(copyFrom('COPY copy_probe (v) FROM STDIN WITH (FORMAT csv)'));
    await expect(feedCopy(source(), copy)).rejects.toBe(long);
    const after = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM copy_probe');
    expect(after.rows[0]!.n).toBe('0');
  });

  it('rejects a 200 MB line without a newline with bounded memory, a short reason and a small log', async () => {
    const ws = await Workspace.create(db.url);
    try {
      const name = 'settle_20260505_a01.csv';
      const path = join(ws.intake, name);
      // streamed to disk and hashed on the way: the test never holds the line in memory either
      const out = createWriteStream(path);
      const hash = createHash('sha256');
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      for (const piece of [Buffer.from('settlement_date,'), ...Array.from({ length: 200 }, () => chunk)]) {
        hash.update(piece);
        if (!out.write(piece)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'close');
      const old = new Date(Date.now() - 3600_000);
      await utimes(path, old, old);
      const sha256 = hash.digest('hex');
      const size = (await stat(path)).size;

      const good = sampleSettlement({ date: '2026-05-05', rows: 10, idPrefix: 'BESIDE' }).text;
      await ws.put('settle_20260505_b01.csv', good);
      const log = join(ws.root, 'run.log');
      // an unbounded reader would hold the 200 MB line as a string: far beyond this heap
      const r = await ws.run(['--json', '--log-file', log], { NODE_OPTIONS: '--max-old-space-size=96' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(1);
      const j = JSON.parse(r.stdout);
      expect(j).toMatchObject({ loaded: 1, rejected: 1, failed: 0, rows: 10 });
      expect(outcomeOf(r.stdout, name).error).toBe('line 1: the record is longer than 1,048,576 bytes (--max-record-bytes)');
      expect(ws.ledgerFile(name)).toMatchObject({
        state: 'rejected',
        sha256,
        reason: expect.stringMatching(/^line 1: the record is longer/),
      });
      expect(ws.ledgerFile(name)!.reason!.length).toBeLessThan(400);
      expect(ws.events().find((e) => e.name === name && e.event === 'rejected')?.details).toMatchObject({ line: 1 });
      expect((await stat(join(ws.rejected, name))).size).toBe(size);
      expect(await ws.files('intake')).toEqual([]);
      expect(await rowsFrom(name)).toBe(0);
      expect(await rowsFrom('settle_20260505_b01.csv')).toBe(10);
      expect((await stat(log)).size).toBeLessThan(64 * 1024);
      expect((await stat(ws.ledger)).size).toBeLessThan(1024 * 1024);
    } finally {
      await rm(ws.root, { recursive: true, force: true });
    }
  });
});

describe('line endings and the record-size option', () => {
  it('loads files whose line endings are mixed, CRLF then LF and LF then CRLF, with the right rows', async () => {
    const ws = await Workspace.create(db.url);
    const first = sampleSettlement({ date: '2026-05-06', rows: 8, idPrefix: 'MIXA' });
    const lines = first.text.trimEnd().split('\n');
    const crlfThenLf = `${lines.slice(0, 5).join('\r\n')}\r\n${lines.slice(5).join('\n')}\n`;
    const second = sampleSettlement({ date: '2026-05-06', rows: 8, idPrefix: 'MIXB' });
    const lines2 = second.text.trimEnd().split('\n');
    const lfThenCrlf = `${lines2.slice(0, 4).join('\n')}\n${lines2.slice(4).join('\r\n')}\r\n`;
    await ws.put('settle_20260506_a01.csv', crlfThenLf);
    await ws.put('settle_20260506_a02.csv', lfThenCrlf);
    const r = await ws.run();
    expect(r.status).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 2, rejected: 0, rows: 16 });
    for (const [name, file, prefix] of [
      ['settle_20260506_a01.csv', first, 'MIXA'],
      ['settle_20260506_a02.csv', second, 'MIXB'],
    ] as const) {
      const got = await db.client.query<{ ids: string[]; lines: number[]; net: string; currencies: string[] }>(
        `SELECT array_agg(transaction_id ORDER BY source_line) AS ids, array_agg(source_line ORDER BY source_line) AS lines,
                sum(net_amount)::text AS net, array_agg(DISTINCT currency) AS currencies
           FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`,
        [name],
      );
      expect(got.rows[0]!.ids).toEqual(Array.from({ length: 8 }, (_, i) => `${prefix}-${String(i + 1).padStart(7, '0')}`));
      expect(got.rows[0]!.lines).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
      expect(got.rows[0]!.net).toBe(file.netTotal);
      for (const c of got.rows[0]!.currencies) expect(c).toMatch(/^[A-Z]{3}$/);
    }
    expect(await ws.files('archive')).toEqual(['settle_20260506_a01.csv', 'settle_20260506_a02.csv']);
  });

  it('takes --max-record-bytes and SETTLE_MAX_RECORD_BYTES: a record over the limit rejects its file', async () => {
    const ws = await Workspace.create(db.url);
    const lines = sampleSettlement({ date: '2026-05-07', rows: 4, idPrefix: 'SIZE' }).text.split('\n');
    lines[2] = lines[2]!.replace(/,M\d+,/, `,M${'m'.repeat(3000)},`);
    const bytes = Buffer.from(lines.join('\n'));
    await ws.put('settle_20260507_a01.csv', bytes);
    const r = await ws.run(['--json', '--max-record-bytes', '2048'], { SETTLE_MAX_RECORD_BYTES: '1048576' });
    expect(r.status).toBe(1);
    const reason = /^line 3: the record is longer than 2,048 bytes \(--max-record-bytes\)$/;
    await expectRejected(ws, r.stdout, 'settle_20260507_a01.csv', bytes, reason, { line: 3 });

    await ws.put('settle_20260507_a02.csv', lines.join('\n').replaceAll('SIZE', 'SIZF'));
    const env = await ws.run(['--json'], { SETTLE_MAX_RECORD_BYTES: '2048' });
    expect(outcomeOf(env.stdout, 'settle_20260507_a02.csv')).toMatchObject({ outcome: 'rejected', error: expect.stringMatching(reason) });

    await ws.put('settle_20260507_a03.csv', lines.join('\n').replaceAll('SIZE', 'SIZG'));
    const byDefault = await ws.run();
    expect(parseSummary(byDefault.stdout)).toMatchObject({ loaded: 1, rows: 4 });
  });

  it('refuses a record-size limit that is not a whole number of bytes as bad usage, touching nothing', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260508_a01.csv', sampleSettlement({ date: '2026-05-08', rows: 2, idPrefix: 'USE' }).text);
    const r = await ws.run(['--max-record-bytes', '1MB']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('settle-ingest: --max-record-bytes: expected a whole number of bytes from 1024 to 67108864, got "1MB"\n');
    expect(await ws.files('intake')).toEqual(['settle_20260508_a01.csv']);
    expect(ws.runs()).toEqual([]);
  });
});
