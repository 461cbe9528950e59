import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Layout } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { layoutError } from '../support/statementLayout.js';
import { PRESETS } from '../../src/layout/model/presets.js';
import { findBadRows, readSettlement } from '../../src/layout/reader/readSettlement.js';
import { compileDateFormat } from '../../src/layout/values/dateFormat.js';
import { nearestYear, statedYear, yearSource } from '../../src/layout/values/yearOf.js';

// Statement figures (issue 46.6), 12-hour clocks and yearless dates (46.7), and dLocal's settlement
// currency (44.9): the `captures` of a layout, the one place a file's once-stated figures are read.

const STATEMENTS = fileURLToPath(new URL('../../fixtures/statements/', import.meta.url));
const fixture = (name: string) => readFileSync(join(STATEMENTS, name), 'utf8');
const configLayout = (name: string): Layout => parseLayout((JSON.parse(fixture(name)) as { layout: Record<string, unknown> }).layout, name);

function file(content: string, name = 'statement.csv'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-figures-')), name);
  writeFileSync(path, content);
  return path;
}

async function rowsOf(path: string, layout: Layout, opts: { fileName?: string; deliveredAt?: number } = {}) {
  const rows: (string | null)[][] = [];
  for await (const row of readSettlement(path, layout, opts)) rows.push(row.values);
  return rows;
}

describe('12-hour clocks', () => {
  const parse = (format: string, value: string, dayPeriods?: [string, string]) =>
    compileDateFormat(format, true, [], dayPeriods ? { dayPeriods } : {}).parse!(value);

  it('reads hh:mm a and h:mm:ss a, 12 AM as midnight and 12 PM as noon, the marker in any case', () => {
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 06:50 PM')).toMatchObject({ hour: 18, minute: 50 });
    expect(parse('yyyy-MM-dd h:mm:ss a', '2026-12-29 6:50:07 pm')).toMatchObject({ hour: 18, minute: 50, second: 7 });
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 12:05 AM')).toMatchObject({ hour: 0, minute: 5 });
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 12:05 PM')).toMatchObject({ hour: 12, minute: 5 });
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 09:05 Am')).toMatchObject({ hour: 9 });
  });

  it('refuses an hour a 12-hour clock has not (0, 13) and a marker not declared', () => {
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 13:05 PM')).toBeUndefined();
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 00:05 AM')).toBeUndefined();
    expect(parse('yyyy-MM-dd hh:mm a', '2026-12-29 06:50 下午')).toBeUndefined();
  });

  it('reads localised markers where the column declares them (上午, 下午), before or after the time', () => {
    expect(parse('yyyy/MM/dd ahh:mm', '2026/12/29 下午06:50', ['上午', '下午'])).toMatchObject({ hour: 18, minute: 50 });
    expect(parse('yyyy/MM/dd a h:mm', '2026/12/29 上午 9:15', ['上午', '下午'])).toMatchObject({ hour: 9, minute: 15 });
    expect(parse('yyyy/MM/dd a h:mm', '2026/12/29 PM 9:15', ['上午', '下午'])).toBeUndefined();
  });

  it('refuses a 12-hour clock without its marker, and a marker without a 12-hour clock, naming what to write', () => {
    expect(compileDateFormat('yyyy-MM-dd hh:mm', true).problem).toBe(
      'has a 12-hour clock (hh or h) without its AM/PM marker (a): "yyyy-MM-dd hh:mm"',
    );
    expect(compileDateFormat('yyyy-MM-dd HH:mm a', true).problem).toBe(
      'has an AM/PM marker (a) without a 12-hour clock (hh or h): "yyyy-MM-dd HH:mm a"',
    );
    expect(
      layoutError({ columns: [{ name: 'at', type: 'timestamp', format: 'yyyy-MM-dd HH:mm', timeZone: 'UTC', dayPeriods: ['AM', 'PM'] }] }),
    ).toMatch(/column "at": "dayPeriods" are the markers the format's "a" reads/);
  });
});

describe('the year of a date written without one', () => {
  it('is the one nearest to the reference day: December rows delivered in January are last year’s', () => {
    const delivered = nearestYear({ year: 2027, month: 1, day: 3 });
    expect(delivered(12, 29)).toBe(2026);
    expect(delivered(1, 2)).toBe(2027);
    expect(delivered(1, 10)).toBe(2027);
    // half a year either way: 182 days before against 183 after
    const midsummer = nearestYear({ year: 2026, month: 7, day: 1 });
    expect(midsummer(12, 31)).toBe(2025);
    expect(midsummer(1, 1)).toBe(2026);
    // 29 February only where a year has it
    expect(nearestYear({ year: 2028, month: 3, day: 1 })(2, 29)).toBe(2028);
    expect(nearestYear({ year: 2027, month: 3, day: 1 })(2, 29)).toBe(2028);
  });

  it('is the year stated, for every row, when a year is stated; a capture is a year or a date, nothing else', () => {
    expect(statedYear(2026)(12, 29)).toBe(2026);
    expect(statedYear(2026)(1, 2)).toBe(2026);
    expect(statedYear(2027)(2, 29)).toBeUndefined();
    expect(yearSource('2026')!(1, 2)).toBe(2026);
    expect(yearSource('2027-01-31')!(12, 29)).toBe(2026);
    expect(yearSource('26')).toBeUndefined();
    expect(yearSource('2027-02-30')).toBeUndefined();
  });

  it('comes from a declared place only: a yearless format without "year" is a layout error saying how', () => {
    expect(layoutError({ columns: [{ name: 'day', type: 'date', format: 'MM/dd' }], naturalKey: 'day' })).toMatch(
      /column "day": "format" lacks year: "MM\/dd" \(a file that writes none: say where the year comes from with the column's "year"\)/,
    );
    expect(layoutError({ columns: [{ name: 'day', type: 'date', format: 'MM/dd', year: 'title_year' }], naturalKey: 'day' })).toMatch(
      /column "day": "year" must be "delivery" or name one of the layout's captures \(the layout has no "captures"\)/,
    );
    expect(layoutError({ columns: [{ name: 'day', type: 'date', format: 'yyyy-MM-dd', year: 'delivery' }], naturalKey: 'day' })).toMatch(
      /"year" is for a format that writes no year: this one does/,
    );
  });

  const walletLayout = configLayout('wallet-export.config.json');
  const wallet = () => file(fixture('wallet_export.csv'));

  it('from the delivery: a wallet export of late December delivered on 3 January 2026 (12-hour clock, 上午/下午)', async () => {
    const rows = await rowsOf(wallet(), walletLayout, { deliveredAt: Date.parse('2026-01-03T02:00:00Z') });
    expect(rows.map((r) => r[0])).toEqual(['2025-12-29 18:50:12+08:00', '2025-12-31 09:03:44+08:00', '2026-01-02 00:15:00+08:00']);
  });

  it('from the delivery: the same rows delivered on 1 July are each the nearer of their two days (29 December after, 31 December before)', async () => {
    const rows = await rowsOf(wallet(), walletLayout, { deliveredAt: Date.parse('2026-07-01T02:00:00Z') });
    expect(rows.map((r) => r[0])).toEqual(['2026-12-29 18:50:12+08:00', '2025-12-31 09:03:44+08:00', '2026-01-02 00:15:00+08:00']);
  });

  it('from the delivery, unknown: the file is rejected, never a year guessed', async () => {
    const result = await findBadRows(wallet(), walletLayout, { fileName: 'wallet_export.csv' });
    expect(result.error?.message).toBe(
      'line 2: column booked_at takes its year from the day the file was delivered, which is not known here',
    );
  });

  it('from the file name: a bank statement whose year only its name says', async () => {
    const checking = configLayout('checking-statement.config.json');
    const rows = await rowsOf(file(fixture('checking_2026-12.csv'), 'checking_2026-12.csv'), checking, {
      fileName: 'checking_2026-12.csv',
    });
    expect(rows.map((r) => r[0])).toEqual([
      '2026-12-01 09:05:00-05:00',
      '2026-12-03 12:30:00-05:00',
      '2026-12-15 18:50:00-05:00',
      '2026-12-29 23:59:00-05:00',
      '2026-12-31 00:05:00-05:00',
    ]);
  });

  it('from a title line: the period end stated above the rows places December and January alike', async () => {
    const titled = parseLayout(
      {
        skipLines: 1,
        captures: { period_end: { line: 'to (\\d{4}-\\d{2}-\\d{2})' } },
        columns: [
          { name: 'day', from: 'Date', type: 'date', format: 'MM/dd', year: 'period_end' },
          { name: 'ref', from: 'Ref', type: 'text' },
        ],
        naturalKey: 'ref',
      },
      'titled',
    );
    const rows = await rowsOf(file('Statement 2026-12-15 to 2027-01-14\nDate,Ref\n12/29,a\n01/02,b\n'), titled);
    expect(rows).toEqual([
      ['2026-12-29', 'a'],
      ['2027-01-02', 'b'],
    ]);
    // a stated day that is no day is refused, never read as some year
    const bad = await findBadRows(file('Statement 2026-12-15 to 2027-13-14\nDate,Ref\n12/29,a\n'), titled);
    expect(bad.error?.message).toBe(
      'line 1: period_end "2027-13-14" (line 1) is neither a year (2026) nor a date (2026-12-31), which column day takes its year from',
    );
    const notADate = parseLayout({ ...toLayoutJson(titled), captures: { period_end: { line: 'Statement (\\S+)' } } }, 'x');
    expect((await findBadRows(file('Statement Q4/2026\nDate,Ref\n12/29,a\n'), notADate)).error?.message).toBe(
      'line 1: period_end "Q4/2026" (line 1) is neither a year (2026) nor a date (2026-12-31), which column day takes its year from',
    );
  });
});

describe('statement figures: a preamble’s count and sums, and balances the rows bridge, as control totals', () => {
  const wechat = configLayout('wechat-bill.config.json');
  const bill = fixture('wechat_bill_20261201-20261231.csv');

  it('a WeChat-shaped bill whose "共6笔记录" and income and expense totals agree is ok, and says what it proved', async () => {
    const result = await findBadRows(file(bill), wechat);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(6);
    expect(result.totals).toEqual([
      {
        total: 'statement',
        group: '',
        rows: 6,
        agrees:
          'count 6 = stated_rows "6" (line 7), credits of amount 520.00 = stated_income "520.00" (line 8), debits of amount 96.50 = stated_expense "96.50" (line 9)',
      },
    ]);
  });

  it('"共66笔记录" over 6 rows is refused naming both figures and the line', async () => {
    const result = await findBadRows(file(bill.replace('共6笔记录', '共66笔记录')), wechat);
    expect(result.error?.message).toBe('line 7, statement: stated_rows says 66 rows, the file has 6');
    expect(result.error?.line).toBe(7);
  });

  it('an expense total a row short is refused with both sums; several disagreements are all named', async () => {
    const result = await findBadRows(file(bill.replace('支出：3笔 96.50元', '支出：3笔 96.60元')), wechat);
    expect(result.error?.message).toBe(
      'line 9, statement: stated_expense "96.60" (line 9) says the debits of amount total 96.60, the rows add up to 96.50',
    );
    const both = await findBadRows(
      file(bill.replace('共6笔记录', '共7笔记录').replace('收入：3笔 520.00元', '收入：3笔 520.01元')),
      wechat,
    );
    expect(both.error?.message).toMatch(
      /^2 totals disagree: line 7, statement: stated_rows says 7 rows, the file has 6; line 8, statement/,
    );
  });

  it('a figure the file does not state rejects it before any row, naming the capture and where it was looked for', async () => {
    const result = await findBadRows(file(bill.replace('共6笔记录', '共六笔记录')), wechat);
    expect(result.error?.message).toBe(
      'line 15: the file does not state the figure its layout captures (stated_rows: no line above the rows matches /^共(\\d+)笔记录/)',
    );
    expect(result.rows).toBe(0);
  });

  const checking = configLayout('checking-statement.config.json');
  const statement = fixture('checking_2026-12.csv');

  it('opening + the rows = closing: a statement that bridges is ok; one that does not names the three figures', async () => {
    const good = await findBadRows(file(statement), checking, { fileName: 'checking_2026-12.csv' });
    expect(good.error).toBeNull();
    expect(good.totals).toEqual([
      {
        total: 'statement',
        group: '',
        rows: 5,
        agrees: 'opening_balance "1,000.00" (line 3) + amount 284.65 = closing_balance "1,284.65" (line 4)',
      },
    ]);
    const off = await findBadRows(file(statement.replace('$1,284.65', '$1,284.75')), checking, { fileName: 'checking_2026-12.csv' });
    expect(off.error?.message).toBe(
      'line 4, statement: the rows do not bridge the balances: opening_balance "1,000.00" (line 3) + the amount of 5 rows 284.65 = 1284.65, but closing_balance "1,284.75" (line 4) says 1284.75',
    );
  });

  it('a file without a header: its preamble states the count and the currency every row takes', async () => {
    const headerless = parseLayout(
      {
        header: false,
        skipLines: 1,
        captures: { stated_rows: { line: 'rows: (\\d+)' }, currency: { line: 'currency (\\w+)' } },
        columns: [
          { name: 'ref', position: 1, type: 'text' },
          { name: 'amount', position: 2, type: 'decimal' },
          { name: 'currency', type: 'currency', capture: 'currency' },
        ],
        naturalKey: 'ref',
        totals: [{ statement: { count: 'stated_rows' } }],
      },
      'headerless',
    );
    expect(await rowsOf(file('rows: 2 currency eur\na,1.00\nb,2.00\n'), headerless)).toEqual([
      ['a', '1.00', 'EUR'],
      ['b', '2.00', 'EUR'],
    ]);
    // no rows at all: the count is still checked
    expect((await findBadRows(file('rows: 0 currency eur\n'), headerless)).error).toBeNull();
    expect((await findBadRows(file('rows: 1 currency eur\n'), headerless)).error?.message).toBe(
      'line 1, statement: stated_rows says 1 rows, the file has 0',
    );
  });

  it('the layout says each figure plainly: unknown captures, patterns without a group, captures with nothing to read', () => {
    const base = {
      columns: [
        { name: 'amount', type: 'decimal' },
        { name: 'ref', type: 'text' },
      ],
      naturalKey: 'ref',
    };
    expect(layoutError({ ...base, skipLines: 1, totals: [{ statement: { count: 'n' } }] })).toMatch(
      /totals 1: statement: "count" must name one of the layout's captures \(the layout has no "captures"\)/,
    );
    expect(layoutError({ ...base, skipLines: 1, captures: { n: { line: '共\\d+笔' } } })).toMatch(/captures "n": "line" has no group/);
    expect(layoutError({ ...base, captures: { n: { line: '共(\\d+)笔' } } })).toMatch(
      /captures "n": "line" reads the preamble \("skipLines"\) or the leading records \("leadingRecords"\): the layout has neither/,
    );
    expect(layoutError({ ...base, skipLines: 1, captures: { n: { line: '(' } } })).toMatch(
      /captures "n": "line" is not a regular expression/,
    );
    expect(layoutError({ ...base, skipLines: 1, captures: { n: { line: '(\\d+)' } }, totals: [{ statement: {} }] })).toMatch(
      /statement: give "count", "sums", "bridge" or several/,
    );
  });

  it('a layout with captures and statement totals writes itself back as it was read (what extends starts from)', () => {
    const json = toLayoutJson(wechat);
    expect(parseLayout(json, 'again')).toEqual({ ...wechat, name: 'custom' });
    expect(json.totals).toEqual((JSON.parse(fixture('wechat-bill.config.json')) as { layout: { totals: unknown } }).layout.totals);
  });
});

describe('the dlocal-settlement-report preset keeps its HEADER’s settlement currency in every row', () => {
  const dlocal = PRESETS.get('dlocal-settlement-report')!;
  const report = readFileSync(fileURLToPath(new URL('../../fixtures/Example_Settlement_Reports_20260314.csv', import.meta.url)), 'utf8');
  const currencyAt = dlocal.columns.findIndex((c) => c.name === 'settlement_currency');

  it('fills settlement_currency from the HEADER', async () => {
    const rows = await rowsOf(file(report), dlocal);
    expect(rows).toHaveLength(5);
    expect(new Set(rows.map((r) => r[currencyAt]))).toEqual(new Set(['USD']));
  });

  it('checks a row that names its own settlement currency against the HEADER’s, naming both', async () => {
    const lines = report.split('\n');
    lines[2] = `${lines[2]},SETTLEMENT_CURRENCY`;
    for (let i = 3; i < lines.length; i++) if (lines[i]) lines[i] = `${lines[i]},${i === 5 ? 'EUR' : i === 6 ? '' : 'usd'}`;
    const result = await findBadRows(file(lines.join('\n')), dlocal);
    expect(result.error?.message).toBe(
      'line 6, field settlement_currency: "EUR" is not the file\'s settlement_currency "USD" (line 2, HEADER field 2)',
    );
    lines[5] = lines[5]!.replace(/,EUR$/, ',USD');
    const rows = await rowsOf(file(lines.join('\n')), dlocal);
    // an empty one takes the HEADER's
    expect(rows.map((r) => r[currencyAt])).toEqual(['USD', 'USD', 'USD', 'USD', 'USD']);
  });

  it('refuses a HEADER whose currency is no ISO 4217 code before any row', async () => {
    const result = await findBadRows(file(report.replace('HEADER,USD,', 'HEADER,DOLLARS,')), dlocal);
    expect(result.error?.message).toBe(
      'line 2, HEADER field 2: settlement_currency "DOLLARS" (line 2, HEADER field 2) is not an active ISO 4217 currency code (column settlement_currency)',
    );
    expect(result.rows).toBe(0);
  });
});
