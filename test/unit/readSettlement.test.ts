import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/demo/sampleSettlement.js';
import { RejectError } from '../../src/errors.js';
import { DEFAULT_LAYOUT, type Layout } from '../../src/layout/model/layout.js';
import { lastRecordCutShort } from '../../src/layout/reader/lastRecord.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows, readSettlement, settlementBlocks, type SettlementRow } from '../../src/layout/reader/readSettlement.js';

function file(content: string | Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-read-')), 'settle_x.csv');
  writeFileSync(path, content);
  return path;
}

async function readAll(path: string, layout: Layout = DEFAULT_LAYOUT) {
  const rows = [];
  for await (const r of readSettlement(path, layout)) rows.push(r);
  return rows;
}

async function rejection(path: string, layout: Layout = DEFAULT_LAYOUT): Promise<RejectError> {
  try {
    await readAll(path, layout);
  } catch (err) {
    if (err instanceof RejectError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

const row = (id: string, merchant = 'M1') => `2026-03-14,${id},${merchant},VISA,sale,10.00,0.15,9.85,EUR`;

describe('reading a settlement file', () => {
  it('strips a byte-order mark, takes CRLF, and numbers lines as an editor does, quoted line breaks included', async () => {
    const text = `\uFEFF${HEADER}\r\n${row('A')}\r\n\r\n${row('B', '"two\r\nlines"')}\r\n${row('C', '"x, ""y"""')}\r\n`;
    const rows = await readAll(file(text));
    expect(rows.map((r) => [r.line, r.values[1], r.values[2]])).toEqual([
      [2, 'A', 'M1'],
      [4, 'B', 'two\r\nlines'],
      [6, 'C', 'x, "y"'],
    ]);
  });

  it('names the line and field of a byte that is not UTF-8, even after a quoted line break', async () => {
    const head = Buffer.from(`${HEADER}\n${row('A', '"a\nb"')}\n${row('B')}\n`);
    const bad = Buffer.from(row('C', 'M\u0001'));
    bad[bad.indexOf(0x01)] = 0xe9; // Latin-1 é
    const err = await rejection(file(Buffer.concat([head, bad, Buffer.from('\n')])));
    expect(err.message).toBe(
      'line 5, field merchant_id: not valid UTF-8 (0xE9 in "26-03-14,C,M\\xE9,VISA,sale,"); the file looks like windows-1252 or iso-8859-1, or windows-1250 (each reads it "2026-03-14,C,Mé,VISA,sale,"): set the layout\'s "encoding"',
    );
  });

  it('rejects a multi-byte character cut off at the end of the file', async () => {
    const err = await rejection(file(Buffer.concat([Buffer.from(`${HEADER}\n${row('A')}\n`), Buffer.from([0xe2, 0x82])])));
    expect(err.message).toMatch(/not valid UTF-8/);
  });

  it('accepts multi-byte characters split across read chunks', async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => row(`R${i}`, 'Zürich-€')).join('\n');
    const rows = await readAll(file(`${HEADER}\n${many}\n`));
    expect(rows).toHaveLength(20_000);
    expect(rows.every((r) => r.values[2] === 'Zürich-€')).toBe(true);
  });

  it('reports an unclosed quote with the line it starts on', async () => {
    const err = await rejection(file(`${HEADER}\n${row('A')}\n${row('B', '"M1')}\n`));
    expect(err.line).toBe(3);
  });

  it('rejects an empty file and a file with only a header row as such', async () => {
    expect((await rejection(file(''))).message).toMatch(/empty/);
    expect(await readAll(file(`${HEADER}\n`))).toEqual([]);
  });

  it('reads a file whose line endings are mixed as its lines: CRLF, LF and CR alike', async () => {
    const text = `${HEADER}\r\n${row('A')}\r\n${row('B')}\n${row('C', '"x\r\ny"')}\n${row('D')}\r${row('E')}\r\n`;
    const rows = await readAll(file(text));
    expect(rows.map((r) => [r.line, r.values[1], r.values[2], r.values[8]])).toEqual([
      [2, 'A', 'M1', 'EUR'],
      [3, 'B', 'M1', 'EUR'],
      [4, 'C', 'x\r\ny', 'EUR'],
      [6, 'D', 'M1', 'EUR'],
      [7, 'E', 'M1', 'EUR'],
    ]);
  });

  it('names the exact line of a quote problem deep in a large file, quoted line breaks before it included', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => row(`R${i}`, i === 10 ? '"two\nlines"' : 'M1'));
    const stray = [...lines];
    stray[15_000] = row('BAD', 'M"1');
    expect((await rejection(file(`${HEADER}\n${stray.join('\n')}\n`))).line).toBe(15_003);
    const open = [...lines];
    open[15_000] = row('BAD', '"M1');
    expect((await rejection(file(`${HEADER}\n${open.join('\n')}\n`))).line).toBe(15_003);
    const crlf = lines.map((l) => l.replace('"two\nlines"', '"two\r\nlines"'));
    crlf[15_000] = row('BAD', 'M"1');
    expect((await rejection(file(`\uFEFF${HEADER}\r\n${crlf.join('\r\n')}\r\n`))).line).toBe(15_003);
  });

  it('says what is wrong with a stray quote without quoting the whole field', async () => {
    const err = await rejection(file(`${HEADER}\n${row('A')}\n${row('B', `M${'x'.repeat(5000)}"y`)}\n`));
    expect(err.message).toBe(
      'line 3, field merchant_id: a double quote inside an unquoted value (quote the whole value and double the quote)',
    );
  });
});

describe('a file of many reads', () => {
  // payout lines are counted, not loaded; the trailer counts and sums every data line
  const layout: Layout = {
    ...DEFAULT_LAYOUT,
    skipRows: [{ column: 'transaction_type', values: ['payout'] }],
    trailer: { firstField: 'Total', rowCountField: 2, sumField: 3, sumOf: 'net_amount' },
  };
  const lines = Array.from({ length: 20_000 }, (_, i) => row(`R${i}`).replace(',sale,', i % 1000 === 999 ? ',payout,' : ',sale,'));
  const text = (data: string[]) => `${HEADER}\n${data.join('\n')}\nTotal,20000,197000.00\n`;

  it('hands out the same rows block by block as row by row, each as written, skipped rows and the trailer counted across reads', async () => {
    const path = file(text(lines));
    const perRow = [];
    const stats = { skipped: 0 };
    for await (const r of readSettlement(path, layout, { stats })) perRow.push(r);
    const perBlock: SettlementRow[] = [];
    let blocks = 0;
    for await (const block of settlementBlocks(path, layout)) {
      blocks++;
      for (let r = block.next(); r !== null; r = block.next()) perBlock.push(r);
    }
    expect(blocks).toBeGreaterThan(4); // 1.4 MB in 32 KiB reads (READ_BYTES)
    expect(perBlock).toEqual(perRow);
    expect([perRow.length, stats.skipped]).toEqual([19_980, 20]);
    expect(perRow.every((r) => r.text === lines[r.line - 2])).toBe(true);
    expect([perRow[0]!.line, perRow.at(-1)!.line]).toEqual([2, 20_000]); // line 20,001 is a payout
    expect(perRow[0]!.values).toEqual(['2026-03-14', 'R0', 'M1', 'VISA', 'sale', '10.00', '0.15', '9.85', 'EUR']);
    expect(await findBadRows(path, layout)).toEqual({ rows: 19_980, skippedRows: 20, error: null });
  });

  it('names every bad row, in whichever read it lies, and a load stops at the first', async () => {
    const bad = [...lines];
    bad[0] = bad[0]!.replace('9.85', '9.8.5');
    bad[10_000] = bad[10_000]!.replace('EUR', 'EURO');
    bad[19_999] = bad[19_999]!.replace('M1', '"M1');
    const path = file(text(bad));
    const { rows, skippedRows, error } = await findBadRows(path, layout);
    expect(error?.message).toBe(
      '3 bad rows: line 2, field net_amount: "9.8.5" is not a decimal amount with at most 2 places (like 1250.00); ' +
        'line 10002, field currency: "EURO" is not an active ISO 4217 currency code; ' +
        'line 20001, field merchant_id: a quoted value is not closed before the end of the file',
    );
    // no row is handed out after a bad one; the unclosed quote ends the reading (the payout line it is on is not counted)
    expect([rows, skippedRows]).toEqual([0, 19]);
    expect((await rejection(path, layout)).message).toBe(error?.message.split('; ')[0]!.replace('3 bad rows: ', ''));
  });
});

describe('the record-size limit', () => {
  const small: Layout = { ...DEFAULT_LAYOUT, maxRecordBytes: 1024 };

  it('rejects a line longer than the limit, naming its line', async () => {
    const err = await rejection(file(`${HEADER}\n${row('A')}\n${row('B', 'm'.repeat(2000))}\n${row('C')}\n`), small);
    expect(err.message).toBe('line 3: the record is longer than 1,024 bytes (--max-record-bytes)');
    expect(err.line).toBe(3);
  });

  it('rejects a header without a line end that goes on past the limit', async () => {
    const err = await rejection(file('h'.repeat(300_000)), small);
    expect(err.message).toBe('line 1: the record is longer than 1,024 bytes (--max-record-bytes)');
  });

  it('counts delimiters, so a record of endless empty fields is refused too', async () => {
    const err = await rejection(file(`${HEADER}\n${','.repeat(5000)}\n`), small);
    expect(err.line).toBe(2);
  });

  it('counts quoted line breaks as part of the record, and names the line it starts on', async () => {
    const multi = `"${'line\n'.repeat(400)}"`;
    const err = await rejection(file(`${HEADER}\n${row('A')}\n${row('B', multi)}\n`), small);
    expect(err.message).toMatch(/^line 3: the record is longer/);
  });

  it('is not fooled by doubled quotes, and lets records up to the limit through', async () => {
    const merchant = `"${'""'.repeat(400)}"`;
    const rows = await readAll(file(`${HEADER}\n${row('A', merchant)}\n${row('B')}\n`), small);
    expect(rows.map((r) => [r.line, r.values[1], r.values[2]!.length])).toEqual([
      [2, 'A', 400],
      [3, 'B', 2],
    ]);
  });

  it('finds a long record wherever the read chunks cut it, quoted line breaks counted', async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => row(`R${i}`, '"a,""b""\r\nc"')).join('\r\n');
    const err = await rejection(file(`${HEADER}\r\n${many}\r\n${row('LAST', 'z'.repeat(1100))}\r\n`), small);
    expect(err.line).toBe(40_002);
  });
});

describe('a header with nameless fields, and rows wider than it', () => {
  const layout = (more: Record<string, unknown> = {}): Layout =>
    parseLayout(
      {
        columns: [
          { name: 'booked', from: 'Booked', type: 'date' },
          { name: 'reference', from: 'Reference', type: 'text' },
          { name: 'amount', from: 'Amount', type: 'decimal' },
        ],
        naturalKey: 'reference',
        ...more,
      },
      'layout',
    );
  const values = async (text: string, l = layout()) => (await readAll(file(text), l)).map((r) => [r.line, ...r.values]);

  it('reads a header whose last names are empty, rows with or without the nameless fields', async () => {
    const text = 'Booked,Reference,Amount,,\n2026-03-01,R1,1.00,,\n2026-03-02,R2,2.00\n2026-03-03,R3,3.00,\n';
    expect(await values(text)).toEqual([
      [2, '2026-03-01', 'R1', '1.00'],
      [3, '2026-03-02', 'R2', '2.00'],
      [4, '2026-03-03', 'R3', '3.00'],
    ]);
    // extraColumns "reject" knows no nameless column to refuse
    expect(await values(text, layout({ extraColumns: 'reject' }))).toHaveLength(3);
  });

  it('reads rows longer than the header only by empty fields, and refuses a value past it by its position', async () => {
    expect(await values('Booked,Reference,Amount\n2026-03-01,R1,1.00,\n2026-03-02,R2,2.00,, ,\n')).toEqual([
      [2, '2026-03-01', 'R1', '1.00'],
      [3, '2026-03-02', 'R2', '2.00'],
    ]);
    const { error } = await findBadRows(file('Booked,Reference,Amount,\n2026-03-01,R1,1.00,,\n2026-03-02,R2,2.00,,,x\n'), layout());
    expect(error?.message).toBe('line 3: expected 4 fields, found 6: field 6, past the header\'s, holds "x"');
    expect([error?.line, error?.field]).toEqual([3, 'field 6']);
  });

  it("keeps a row shorter than the header's names a reject (a record cut short)", async () => {
    const { error } = await findBadRows(file('Booked,Reference,Amount,,\n2026-03-01,R1\n'), layout());
    expect(error?.message).toBe('line 2: expected 3 fields, found 2');
  });

  it('ignores a nameless field between named ones, and says so when the header then lacks a column', async () => {
    expect(await values('Booked,,Reference,Amount\n2026-03-01,x,R1,1.00\n')).toEqual([[2, '2026-03-01', 'R1', '1.00']]);
    const { error } = await findBadRows(file('Booked,,Amount\n2026-03-01,R1,1.00\n'), layout());
    expect(error?.message).toBe(
      'line 1: header lacks the column "Reference" (it has 3 columns); its column 2 has no name: a layout reads a column by its header\'s name, so a nameless one only by position ("header": false, its header line skipped with "skipLines")',
    );
  });

  it('is whole when its last row has the named fields and no line end (no paused upload)', async () => {
    const text = 'Booked,Reference,Amount,,\n2026-03-01,R1,1.00,,\n2026-03-02,R2,2.00';
    expect(await lastRecordCutShort(file(text), layout())).toBeUndefined();
    expect(await lastRecordCutShort(file('Booked,Reference,Amount,,\n2026-03-02,R2'), layout())).toEqual({
      line: 2,
      fields: 2,
      expected: 3,
    });
  });
});

describe('a header read as one field', () => {
  it('says which delimiter it seems to use and the key to set', async () => {
    const l = parseLayout(
      {
        columns: [
          { name: 'reference', from: 'Reference', type: 'text' },
          { name: 'amount', from: 'Amount', type: 'decimal' },
        ],
        naturalKey: 'reference',
      },
      'layout',
    );
    const { error } = await findBadRows(file('Reference;Amount;Note\nR1;1,00;x\n'), l);
    expect(error?.message).toBe(
      'line 1: header lacks the columns "Reference", "Amount" (it has 1 columns); the header is read as one field: it seems to use ";" as its delimiter, not ",": set the layout\'s "delimiter" to ";"',
    );
    const tab = await findBadRows(file('Reference\tAmount\nR1\t1.00\n'), { ...l, delimiter: ';' });
    expect(tab.error?.message).toMatch(/it seems to use a tab as its delimiter, not ";": set the layout's "delimiter" to "\\t"$/);
  });
});

describe("nullPadding: rows that leave out the header's last columns", () => {
  const bank = (nullPadding: boolean) =>
    parseLayout(
      {
        decimalMark: ',',
        ...(nullPadding ? { nullPadding: true } : {}),
        columns: [
          { name: 'booked', from: 'Buchungsdatum', type: 'date', format: 'dd.MM.yyyy' },
          { name: 'amount', from: 'Betrag', type: 'decimal' },
          { name: 'reference', from: 'Referenz', type: 'text' },
          { name: 'cash', from: 'Bargeldabhebung', type: 'text', required: false },
        ],
        naturalKey: 'reference',
      },
      'test',
    );
  // a bank export whose rows stop before the header's last column
  const text = 'Buchungsdatum,Betrag,Referenz,Bargeldabhebung\n05.12.2025,"-123,45",R-1\n05.12.2025,"123,45",R-2,\n';

  it('refuses the short rows without it, and reads their missing last fields as empty with it', async () => {
    expect((await rejection(file(text), bank(false))).message).toBe('line 2: expected 4 fields, found 3');
    const rows = await readAll(file(text), bank(true));
    expect(rows.map((r) => r.values)).toEqual([
      ['2025-12-05', '-123.45', 'R-1', null],
      ['2025-12-05', '123.45', 'R-2', null],
    ]);
  });

  it('still names a required column left out, and still waits for a last record cut short without its line end', async () => {
    const required = parseLayout(
      {
        nullPadding: true,
        columns: [
          { name: 'booked', from: 'Buchungsdatum', type: 'date', format: 'dd.MM.yyyy' },
          { name: 'reference', from: 'Referenz', type: 'text' },
        ],
        naturalKey: 'reference',
      },
      'test',
    );
    const short = file('Buchungsdatum,Referenz\n05.12.2025\n');
    expect((await findBadRows(short, required)).error?.message).toMatch(/^line 2, field reference: required value is missing/);
    const cut = file('Buchungsdatum,Betrag,Referenz,Bargeldabhebung\n05.12.2025,"-123,45",R-1\n05.12.2025,"12');
    expect(await lastRecordCutShort(cut, bank(true))).toMatchObject({ line: 3 });
  });
});
