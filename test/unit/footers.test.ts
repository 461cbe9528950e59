import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Layout } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { layoutError } from '../support/statementLayout.js';
import { LineHoldback } from '../../src/layout/reader/lineHoldback.js';
import { findBadRows, readSettlement } from '../../src/layout/reader/readSettlement.js';
import { lastRecordCutShort } from '../../src/layout/reader/lastRecord.js';
import { missingFooter } from '../../src/layout/reader/trailer.js';

// A statement's free-text footer (issue 46.6): lines after the rows, declared where they begin,
// set aside (never rows), their figures captured and checked as the statement's totals.

const STATEMENTS = fileURLToPath(new URL('../../fixtures/statements/', import.meta.url));
const fixture = (name: string) => readFileSync(join(STATEMENTS, name), 'utf8');
const configLayout = (name: string, change: Record<string, unknown> = {}): Layout =>
  parseLayout({ ...(JSON.parse(fixture(name)) as { layout: Record<string, unknown> }).layout, ...change }, name);

function file(content: string | Buffer, name = 'statement.csv'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-footer-')), name);
  writeFileSync(path, content);
  return path;
}

/** Text pushed through the look-ahead in pieces of `size`: what it handed on, and the rows and footer at the end. */
function heldBack(text: string, count: number, size: number, maxLineUnits = 1000) {
  const holdback = new LineHoldback(count, maxLineUnits);
  let handed = '';
  for (let i = 0; i < text.length; i += size) handed += holdback.push(text.slice(i, i + size));
  const end = holdback.end('');
  return { handed, rows: handed + end.rows, footer: end.footer };
}

describe("the reader's look-ahead: the last N lines that are not blank, held back", () => {
  it('hands on everything before them, in any piece size, and keeps blank lines with the footer only after its first line', () => {
    const text = 'h\r\nr1\r\nr2\r\n\r\nF1\r\n  \r\nF2\r\n\r\n';
    for (const size of [1, 2, 3, 5, 8, 100]) {
      const got = heldBack(text, 2, size);
      expect(got.rows, `pieces of ${size}`).toBe('h\r\nr1\r\nr2\r\n\r\n');
      expect(got.footer, `pieces of ${size}`).toBe('F1\r\n  \r\nF2\r\n\r\n');
    }
  });

  it('never hands on a line that may yet be the footer: the line in progress and the last N whole lines stay', () => {
    const holdback = new LineHoldback(2, 1000);
    expect(holdback.push('h\nr1\nr2\nF1\nF2')).toBe('h\nr1\n');
    // F2 had no line end yet: it was not counted; with it, r2 is surely a row
    expect(holdback.push('\n')).toBe('r2\n');
    expect(holdback.end('')).toEqual({ rows: '', footer: 'F1\nF2\n' });
  });

  it('reads CRLF split across pieces as one line end, and a last line without one as a line', () => {
    const holdback = new LineHoldback(1, 1000);
    expect(holdback.push('h\r')).toBe('');
    expect(holdback.push('\nr1\r')).toBe('h\r\n');
    // "last" is in progress: r1 is the last whole line, and may yet be the footer
    expect(holdback.push('\nlast')).toBe('');
    expect(holdback.end('')).toEqual({ rows: 'r1\r\n', footer: 'last' });
  });

  it('holds everything when the text has fewer lines than the footer', () => {
    expect(heldBack('only\n', 3, 1)).toEqual({ handed: '', rows: '', footer: 'only\n' });
  });

  it('lets a line longer than a record may be go on at once, for the record reader to refuse: memory stays bounded', () => {
    const holdback = new LineHoldback(2, 10);
    expect(holdback.push('h\nr1\n')).toBe('');
    expect(holdback.push('x'.repeat(11))).toBe(`h\nr1\n${'x'.repeat(11)}`);
  });
});

describe('a layout says where its footer begins, and what it reads there', () => {
  const columns = [{ name: 'id', type: 'text' }];

  it('takes a pattern or a count, and refuses anything else naming the key', () => {
    expect(layoutError({ columns, naturalKey: 'id', footer: { startsAt: '^#' } })).toBeUndefined();
    expect(layoutError({ columns, naturalKey: 'id', footer: { lines: 3 } })).toBeUndefined();
    expect(layoutError({ columns, naturalKey: 'id', footer: '^#' })).toMatch(/layout "footer" must be \{"startsAt": PATTERN\}/);
    expect(layoutError({ columns, naturalKey: 'id', footer: { startsAt: '^#', lines: 2 } })).toMatch(/"footer" must be/);
    expect(layoutError({ columns, naturalKey: 'id', footer: { lines: 0 } })).toMatch(/footer: "lines" must be a whole number, 1 to 100/);
    expect(layoutError({ columns, naturalKey: 'id', footer: { startsAt: '(' } })).toMatch(/footer: "startsAt" is not a regular expression/);
    expect(layoutError({ columns, naturalKey: 'id', footer: { startsAt: '#*' } })).toMatch(
      /footer: "startsAt" \/#\*\/ matches an empty text, so it would match the first row/,
    );
  });

  it('is one way to end a file: not with a trailer, nor in a file of record types', () => {
    expect(layoutError({ columns, naturalKey: 'id', footer: { lines: 1 }, trailer: { firstField: 'T', rowCountField: 2 } })).toMatch(
      /"footer" and "trailer" both say how the file ends/,
    );
    expect(layoutError({ columns, naturalKey: 'id', header: true, footer: { lines: 1 }, recordTypes: { D: 'data', H: 'header' } })).toMatch(
      /"footer" needs a file without "recordTypes"/,
    );
  });

  it('reads a figure there with "at": "footer", by the group named or numbered, and only for totals', () => {
    const ok = {
      columns: [
        { name: 'id', type: 'text' },
        { name: 'day', type: 'date', format: 'MM/dd', year: 'export_year' },
      ],
      naturalKey: 'id',
      footer: { startsAt: '^#' },
      captures: { export_year: { line: '^#导出时间：\\[(?<year>\\d{4})', at: 'footer', group: 'year' } },
    };
    expect(layoutError(ok)).toMatch(
      /column "day": "year" "export_year" is read from the footer, after the rows: a figure known only then cannot fill or date them/,
    );
    const counted = { columns, naturalKey: 'id', footer: { startsAt: '^#' } };
    expect(layoutError({ ...counted, captures: { n: { line: '^#共(\\d+)笔', at: 'footer', group: 2 } } })).toMatch(
      /"group" must be a group's number, 1 to 1, or its name/,
    );
    expect(layoutError({ ...counted, captures: { n: { line: '^#共(\\d+)笔', at: 'footer', group: 'count' } } })).toMatch(
      /"group" "count" is not a named group of the pattern \(it has none: write \(\?<name>…\)\)/,
    );
    expect(layoutError({ columns, naturalKey: 'id', captures: { n: { line: '^#共(\\d+)笔', at: 'footer' } } })).toMatch(
      /"at": "footer" reads the lines after the rows: the layout has no "footer"/,
    );
    expect(layoutError({ ...counted, captures: { n: { fileName: '(\\d+)', at: 'footer' } } })).toMatch(
      /"at" is where a "line" pattern reads/,
    );
  });

  it('writes the footer and its captures back as configuration (what `extends` starts from)', () => {
    const alipay = configLayout('alipay-ledger.config.json');
    const json = toLayoutJson(alipay);
    expect(json.footer).toEqual({ startsAt: '^#-+账务明细列表结束' });
    expect((json.captures as Record<string, unknown>).stated_rows).toEqual({ line: '^#共(\\d+)笔记录', at: 'footer' });
    expect(parseLayout(json, 'again')).toMatchObject({ footer: { startsAt: /^#-+账务明细列表结束/u } });
    const releve = toLayoutJson(configLayout('releve-footer.config.json'));
    expect(releve.footer).toEqual({ lines: 1 });
    expect(releve.totals).toEqual([
      { statement: { bridge: { of: ['credit', 'debit'], opening: 'opening_balance', closing: 'closing_balance' } } },
    ]);
  });
});

describe('a statement whose figures follow its rows', () => {
  const alipay = configLayout('alipay-ledger.config.json');
  const bill = fixture('alipay_20261201-20261231.csv');

  it('reads every row and no footer line as one, and proves the count and both sums the footer states', async () => {
    const rows: { line: number; id: string | null }[] = [];
    for await (const row of readSettlement(file(bill), alipay)) rows.push({ line: row.line, id: row.values[0]! });
    expect(rows).toHaveLength(11);
    expect(rows.at(-1)).toEqual({ line: 16, id: '20261230100011' });
    const checked = await findBadRows(file(bill), alipay);
    expect(checked.error).toBeNull();
    expect(checked.footer).toMatchObject({ first: 17, last: 21, lines: 5 });
    expect(checked.footer!.shown[1]).toEqual({ line: 18, text: '#共11笔记录' });
    expect(checked.totals).toEqual([
      {
        total: 'statement',
        group: '',
        rows: 11,
        agrees:
          'count 11 = stated_rows "11" (line 18), credit 1234.50 = stated_income "1234.50" (line 19), debit 321.40 = stated_expense "321.40" (line 20)',
      },
    ]);
    expect(checked.figures?.map((f) => [f.name, f.value, f.line])).toEqual([
      ['stated_rows', '11', 18],
      ['stated_income', '1234.50', 19],
      ['stated_expense', '321.40', 20],
    ]);
  });

  it('rejects a footer whose count or sum disagrees, naming both figures', async () => {
    const count = await findBadRows(file(bill.replace('#共11笔记录', '#共13笔记录')), alipay);
    expect(count.error?.message).toBe('line 18, statement: stated_rows says 13 rows, the file has 11');
    const sum = await findBadRows(file(bill.replace('1234.50元', '1243.50元')), alipay);
    expect(sum.error?.message).toBe(
      'line 19, statement: stated_income "1243.50" (line 19) says the credit total 1243.50, the rows add up to 1234.50',
    );
  });

  it('rejects a file cut before its footer as incomplete, and one whose footer lacks a figure, naming what was expected', async () => {
    const cut = bill.slice(0, bill.indexOf('#-----------------------------------------账务明细列表结束'));
    const missing = await findBadRows(file(cut), alipay);
    expect(missing.error?.message).toBe(
      'the file ends at line 16 without its footer (a line after the rows matching /^#-+账务明细列表结束/): it is incomplete',
    );
    expect(missing.error?.field).toBe('footer');
    const short = bill.slice(0, bill.indexOf('#收入合计'));
    expect((await findBadRows(file(short), alipay)).error?.message).toBe(
      'line 17: the footer (lines 17 to 18) does not state the figures its layout captures (stated_income: no line of the footer matches /^#收入合计：\\d+笔，([\\d.,]+)元/; stated_expense: no line of the footer matches /^#支出合计：\\d+笔，([\\d.,]+)元/)',
    );
  });

  it('is whole by its footer when it ends without a line end, and waits before a run claims it while the footer is not there', async () => {
    expect(await lastRecordCutShort(file(bill.trimEnd()), alipay)).toBeUndefined();
    const cutInRow = bill.slice(0, bill.indexOf(',1913.10'));
    expect(await lastRecordCutShort(file(cutInRow), alipay)).toMatchObject({ line: 16 });
    expect(await missingFooter(file(bill), alipay)).toBeUndefined();
    const beforeFooter = bill.slice(0, bill.indexOf('#-----------------------------------------账务明细列表结束'));
    expect(await missingFooter(file(beforeFooter), alipay)).toBe('no footer (a line after the rows matching /^#-+账务明细列表结束/)');
    expect(await missingFooter(file(bill.slice(0, bill.indexOf('#收入合计'))), alipay)).toMatch(
      /^no footer line stating stated_income \(.+\), stated_expense \(.+\)$/,
    );
  });

  it('reads a GB18030 export, its footer decoded as the rows are', async () => {
    const gb = configLayout('alipay-ledger.config.json', { encoding: 'gb18030' });
    const path = join(STATEMENTS, 'alipay_gb18030_20261201-20261231.csv');
    const checked = await findBadRows(path, gb);
    expect(checked.error).toBeNull();
    expect(checked.rows).toBe(11);
    expect(checked.footer?.shown.map((l) => l.text)).toContain('#收入合计：5笔，1234.50元');
    expect(await missingFooter(path, gb)).toBeUndefined();
  });

  it('with a footer of its last line: a bank statement whose rows bridge the closing balance above them and the opening balance below', async () => {
    const releve = configLayout('releve-footer.config.json');
    const text = fixture('releve_2026-12.csv');
    const good = await findBadRows(file(text), releve);
    expect(good.error).toBeNull();
    expect(good.rows).toBe(3);
    expect(good.footer).toMatchObject({ first: 9, last: 9, lines: 1 });
    expect(good.totals?.[0]?.agrees).toBe(
      'opening_balance "500,00" (line 9) + credit + debit 1155.25 = closing_balance "1 655,25" (line 4)',
    );
    const off = await findBadRows(file(text.replace('500,00', '600,00')), releve);
    expect(off.error?.message).toBe(
      'line 4, statement: the rows do not bridge the balances: opening_balance "600,00" (line 9) + the credit + debit of 3 rows 1155.25 = 1755.25, but closing_balance "1 655,25" (line 4) says 1655.25',
    );
    // a file cut before its last line: the last row is read as the footer, and the footer's figure is missing
    const cut = await findBadRows(file(text.slice(0, text.indexOf('Solde en début'))), releve);
    expect(cut.error?.message).toMatch(/^line 8: the footer \(line 8\) does not state the figure its layout captures \(opening_balance/);
  });
});
