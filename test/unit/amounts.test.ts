import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { ACTIVE_CURRENCIES, minorUnitsOf } from '../../src/layout/values/currencies.js';
import type { Layout } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { planRows } from '../../src/layout/reader/rowPlan.js';
import { rejection, thrown } from '../support/thrown.js';

/** A layout of an id and one amount column (its keys `amount`), plus the layout keys given. */
function amountLayout(amount: Record<string, unknown>, layoutKeys: Record<string, unknown> = {}): Layout {
  return parseLayout(
    {
      columns: [
        { name: 'id', type: 'text' },
        { name: 'amount', type: 'decimal', ...amount },
      ],
      naturalKey: 'id',
      ...layoutKeys,
    },
    'test',
  );
}

/** The rows as the reader checks them, under a header in the layout's own order. */
function rows(layout: Layout, ...records: string[][]): (string | null)[][] {
  const plan = planRows(
    layout,
    layout.columns.map((c) => c.from),
    1,
  );
  return records.map((r, i) => {
    const out = plan.row(r, i + 2);
    if (out === 'skip') throw new Error('skipped');
    return out;
  });
}

const amountOf = (layout: Layout, written: string) => rows(layout, ['T1', written])[0]![1];

const usage = (fn: () => unknown): string => thrown(fn, UsageError).message;

describe('amounts with a currency symbol', () => {
  it.each([
    // Venmo: a sign apart from the symbol, a plus written out
    [['$'], {}, '- $220.00', '-220.00'],
    [['$'], { groupSeparator: ',' }, '+ $1,350.00', '1350.00'],
    [['$'], { groupSeparator: ',' }, '- $2,878.25', '-2878.25'],
    [['$'], {}, '-$5', '-5'],
    [['$'], {}, '$-5', '-5'],
    [['$'], {}, '$ - 5.10', '-5.10'],
    [['$'], {}, '$5', '5'],
    [['$'], {}, '5.00$', '5.00'],
    [['$'], {}, '12.00', '12.00'],
    // a German bank: the symbol after, a space or a no-break space between
    [['€'], { decimalMark: ',', groupSeparator: '.' }, '-123,45 €', '-123.45'],
    [['€'], { decimalMark: ',', groupSeparator: '.' }, '123,45\u00a0€', '123.45'],
    [['€'], { decimalMark: ',', groupSeparator: '.' }, '€ 1.234,56', '1234.56'],
    [['€'], { decimalMark: ',', groupSeparator: '.' }, '-1.234,56€', '-1234.56'],
    [['€'], { decimalMark: ',', groupSeparator: '.' }, '\u00a0-0,50\u202f€\u00a0', '-0.50'],
    [['€', 'EUR'], {}, 'EUR 12.00', '12.00'],
    [['€', 'EUR'], {}, '12.00 EUR', '12.00'],
    [['€', 'EUR'], {}, '-12.00EUR', '-12.00'],
    [['€', 'EUR'], {}, '€.50', '0.50'],
    // the longest symbol first: US$ is not $ after "US"
    [['$', 'US$'], {}, 'US$5.00', '5.00'],
    [['CHF'], { groupSeparator: "'" }, "CHF -11'373.94", '-11373.94'],
    // sixteen integer digits and every place kept: never through a float
    [['$'], { groupSeparator: ',' }, '$9,999,999,999,999,999.99', '9999999999999999.99'],
    [['$'], {}, '-$0.10', '-0.10'],
  ])('%j reads %j (layout %j) as %j', (symbols, layoutKeys, written, expected) => {
    expect(amountOf(amountLayout({ currencySymbols: symbols }, layoutKeys), written)).toBe(expected);
  });

  it.each([
    ['$$5', 'two symbols'],
    ['$5$', 'a symbol at both ends'],
    ['$5 USD', 'two symbols of the list'],
    ['-$-5', 'two signs'],
    ['--$5', 'two signs before the symbol'],
    ['+-$5', 'a plus and a minus'],
    ['$5-', 'a minus after the number'],
    ['(5.00)', 'brackets for a negative'],
    ['$(5.00)', 'brackets inside the symbol'],
    ['+5.00', 'a plus sign without a symbol'],
    ['- 5.00', 'a spaced sign without a symbol'],
    ['$', 'a symbol alone'],
    ['- $', 'a sign and a symbol alone'],
    ['$5.001', 'three places'],
    ['$1,000.00', 'a group separator the layout does not have'],
    ['£5.00', 'a symbol not in the list'],
    ['5 $ 5', 'digits on both sides'],
  ])('refuses %j (%s), naming the line and the field', (written) => {
    const layout = amountLayout({ currencySymbols: ['$', 'USD'] });
    const err = rejection(() => amountOf(layout, written));
    expect(err.line).toBe(2);
    expect(err.field).toBe('amount');
  });

  it('says which key would read a symbol the column does not list', () => {
    const bare = rejection(() => amountOf(amountLayout({}), '€12.00'));
    expect(bare.message).toBe('line 2, field amount: "€12.00" has a currency symbol: add "currencySymbols": ["€"] to the column');
    const code = rejection(() => amountOf(amountLayout({}, { decimalMark: ',' }), '-123,45 EUR'));
    expect(code.message).toContain('add "currencySymbols": ["EUR"] to the column');
    const other = rejection(() => amountOf(amountLayout({ currencySymbols: ['€'] }), '£5.00'));
    expect(other.message).toBe(
      'line 2, field amount: "£5.00" has the currency symbol "£": add it to the column\'s "currencySymbols" (["€"])',
    );
    // a plus is read beside a symbol only: adding the symbol reads it
    const venmo = rejection(() => amountOf(amountLayout({}), '+ $220.00'));
    expect(venmo.message).toContain('add "currencySymbols": ["$"]');
    // a symbol and grouping both: both keys named
    const both = rejection(() => amountOf(amountLayout({}), '+ $1,350.00'));
    expect(both.message).toBe(
      'line 2, field amount: "+ $1,350.00" has a currency symbol: add "currencySymbols": ["$"] to the column, and it is grouped by ",": set the layout\'s "groupSeparator" to ","',
    );
  });

  it('names no key when none would read the value', () => {
    const err = rejection(() => amountOf(amountLayout({ currencySymbols: ['$'] }), '(5.00)'));
    expect(err.message).toBe('line 2, field amount: "(5.00)" is not a decimal amount with at most 2 places (like 1250.00)');
    expect(rejection(() => amountOf(amountLayout({}), '12 apples')).message).not.toContain('currencySymbols');
  });

  it('takes the sign from another column when the amount carries only its symbol', () => {
    const layout = parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'amount', type: 'decimal', currencySymbols: ['€'], sign: { from: 'direction', negative: ['DR'], positive: ['CR'] } },
          { name: 'direction', type: 'text' },
        ],
        naturalKey: 'id',
      },
      'test',
    );
    expect(rows(layout, ['T1', '€5.00', 'DR'], ['T2', '5.00 €', 'CR']).map((r) => r[1])).toEqual(['-5.00', '5.00']);
    expect(rejection(() => rows(layout, ['T3', '-€5.00', 'DR'])).message).toContain('is signed, but its sign comes from direction');
  });
  it("sums amounts with symbols for the trailer, those of skipped rows and the trailer's own included", async () => {
    const layout = parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'amount', type: 'decimal', currencySymbols: ['$'] },
          { name: 'kind', type: 'text' },
        ],
        naturalKey: 'id',
        skipRows: [{ column: 'kind', values: ['fee'] }],
        trailer: { firstField: 'Total', sumField: 2, sumOf: 'amount' },
      },
      'test',
    );
    const checked = async (total: string) => {
      const path = join(mkdtempSync(join(tmpdir(), 'settle-amounts-')), 'statement.csv');
      writeFileSync(path, `id,amount,kind\nA,$5.00,sale\nB,- $1.00,sale\nF,$2.00,fee\nTotal,${total},\n`);
      return (await findBadRows(path, layout)).error?.message;
    };
    expect(await checked('$ 6.00')).toBeUndefined();
    expect(await checked('$7.00')).toMatch(/^line 5, trailer: /);
  });
});

describe('group separators and spaces', () => {
  it.each([
    ["'", '.', "11'373.94", '11373.94'],
    ["'", '.', '11\u2019373.94', '11373.94'],
    ["'", '.', "1'234'567.00", '1234567.00'],
    ["'", '.', "-1'000", '-1000'],
    ["'", ',', "1'234,5", '1234.5'],
    [' ', ',', '1 234,56', '1234.56'],
    [' ', ',', '1\u00a0234,56', '1234.56'],
    [' ', ',', '1\u202f234,56', '1234.56'],
    [' ', ',', '1\u2009234,56', '1234.56'],
    [' ', ',', '-12\u00a0345\u00a0678,90', '-12345678.90'],
    [' ', ',', '\u00a01\u00a0234,56\u00a0', '1234.56'],
  ])('groupSeparator %j with decimal mark %j reads %j as %j', (groupSeparator, decimalMark, written, expected) => {
    expect(amountOf(amountLayout({}, { groupSeparator, decimalMark }), written)).toBe(expected);
  });

  it.each([
    ["'", "1'234\u2019567.00", 'two kinds of apostrophe in one value'],
    [' ', '1\u00a0234 567.00', 'two kinds of space in one value'],
    ["'", "1'23.00", 'a group of two'],
    ["'", "'123.00", 'a leading separator'],
    ["'", "1''234.00", 'a doubled separator'],
    ["'", "1'234.", 'a bare decimal mark'],
    [' ', '1\u200b234.00', 'a zero-width space'],
    [' ', '1\t234.00', 'a tab'],
  ])('groupSeparator %j refuses %j (%s)', (groupSeparator, written) => {
    expect(rejection(() => amountOf(amountLayout({}, { groupSeparator }), written)).field).toBe('amount');
  });

  it('reads no-break spaces around any amount, as it reads spaces (Satispay writes "30,40\\u00a0")', () => {
    expect(amountOf(amountLayout({}, { decimalMark: ',' }), '30,40\u00a0')).toBe('30.40');
    expect(amountOf(amountLayout({}), '\u202f-7.25 ')).toBe('-7.25');
    expect(rejection(() => amountOf(amountLayout({}), '\u00a0')).field).toBe('amount');
  });

  it('says which group separator or decimal mark would read a value', () => {
    const swiss = rejection(() => amountOf(amountLayout({}), "11'373.94"));
    expect(swiss.message).toBe(
      'line 2, field amount: "11\'373.94" is not a decimal amount with at most 2 places (like 1250.00): it is grouped by "\'": set the layout\'s "groupSeparator" to "\'"',
    );
    const spaced = rejection(() => amountOf(amountLayout({}, { decimalMark: ',' }), '1\u00a0234,56'));
    expect(spaced.message).toContain('set the layout\'s "groupSeparator" to " "');
    const mark = rejection(() => amountOf(amountLayout({}), '12,5'));
    expect(mark.message).toContain('set the layout\'s "decimalMark" to ","');
  });
});

describe('minorUnits: "currency"', () => {
  const ownCurrency = (extra: Record<string, unknown> = {}) =>
    parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'amount', type: 'decimal', minorUnits: 'currency', ...extra },
          { name: 'currency', type: 'currency' },
        ],
        naturalKey: 'id',
      },
      'test',
    );

  it("reads each row's amount in its own currency's minor unit by ISO 4217", () => {
    const layout = ownCurrency();
    const read = rows(
      layout,
      ['1', '5000', 'JPY'],
      ['2', '1000', 'USD'],
      ['3', '1500', 'KWD'],
      ['4', '-2', 'BHD'],
      ['5', '12345', 'CLF'],
      ['6', '-250', 'usd'],
      ['7', '100', 'HUF'], // ISO 4217 gives 2 places, CLDR 0
      ['8', '100', 'ISK'],
      ['9', '1000', 'IQD'], // ISO 4217 gives 3 places, CLDR 0
      ['10', '0', 'EUR'],
      ['11', '99999999999999999999', 'CLF'],
    );
    expect(read.map((r) => r[1])).toEqual([
      '5000',
      '10.00',
      '1.500',
      '-0.002',
      '1.2345',
      '-2.50',
      '1.00',
      '100',
      '1.000',
      '0.00',
      '9999999999999999.9999',
    ]);
    // a table column holds every currency's places
    expect(layout.columns[1]!.scale).toBe(4);
  });

  it('reads the currency from the column currencyFrom names, before or after the amount', () => {
    const layout = parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'settled', type: 'currency' },
          { name: 'amount', type: 'decimal', minorUnits: 'currency', currencyFrom: 'local' },
          { name: 'local', type: 'currency' },
        ],
        naturalKey: 'id',
      },
      'test',
    );
    expect(rows(layout, ['1', 'USD', '5000', 'JPY'])[0]![2]).toBe('5000');
    expect(rows(layout, ['2', 'JPY', '5000', 'USD'])[0]![2]).toBe('50.00');
  });

  it('refuses a row whose currency is unknown or has no minor unit, naming the row and the value', () => {
    const layout = ownCurrency();
    const unknown = rejection(() => rows(layout, ['1', '100', 'USD'], ['2', '5000', 'ABC']));
    expect(unknown.message).toBe(
      'line 3, field amount: "5000" is in minor units of its row\'s currency, and currency is "ABC", not an ISO 4217 currency code',
    );
    expect(unknown.line).toBe(3);
    const gold = rejection(() => rows(layout, ['1', '5000', 'XAU']));
    expect(gold.message).toBe(
      'line 2, field amount: "5000" is in minor units of its row\'s currency, and currency is XAU, which has no minor unit in ISO 4217',
    );
  });

  it('refuses a value written with a decimal mark, naming the places implied', () => {
    const err = rejection(() => rows(ownCurrency(), ['1', '10.00', 'USD']));
    expect(err.message).toBe(
      'line 2, field amount: "10.00" is not a whole number of minor units (USD: 2 places implied, like 10400 for 104.00)',
    );
    expect(rejection(() => rows(ownCurrency(), ['1', '1,000', 'JPY'])).field).toBe('amount');
    expect(rejection(() => rows(ownCurrency(), ['1', '¥5000', 'JPY'])).field).toBe('amount');
  });

  it("changes a preset's amount column to it, with the currency column named", () => {
    const layout = parseLayout(
      { extends: 'adyen-settlement-details', columns: { gross_debit: { minorUnits: 'currency', currencyFrom: 'gross_currency' } } },
      'test',
    );
    expect(layout.columns.find((c) => c.name === 'gross_debit')).toMatchObject({
      minorUnits: 'currency',
      currencyFrom: 'gross_currency',
      scale: 4,
    });
    expect(
      usage(() => parseLayout({ extends: 'adyen-settlement-details', columns: { gross_debit: { minorUnits: 'currency' } } }, 'test')),
    ).toContain('say which with "currencyFrom"');
  });

  it('keeps its keys when a layout is written back as configuration', () => {
    const layout = ownCurrency();
    expect(parseLayout(toLayoutJson(layout), 'again')).toEqual({ ...layout, name: 'custom' });
    const symbols = amountLayout({ currencySymbols: ['€', 'EUR'] }, { groupSeparator: "'" });
    expect(parseLayout(toLayoutJson(symbols), 'again')).toEqual({ ...symbols, name: 'custom' });
  });

  it('gives every active code its ISO 4217 minor unit (the list, not CLDR), and none to metals and units of account', () => {
    // ISO 4217 List One's "Minor unit" column where it is not 2
    const iso: Record<string, number | undefined> = {};
    for (const code of 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF'.split(' ')) iso[code] = 0;
    for (const code of 'BHD IQD JOD KWD LYD OMR TND'.split(' ')) iso[code] = 3;
    for (const code of ['CLF', 'UYW']) iso[code] = 4;
    for (const code of 'XAG XAU XBA XBB XBC XBD XDR XPD XPT XSU XUA'.split(' ')) iso[code] = undefined;
    const expected = [...ACTIVE_CURRENCIES].map((code) => [code, code in iso ? iso[code] : 2]);
    expect([...ACTIVE_CURRENCIES].map((code) => [code, minorUnitsOf(code)])).toEqual(expected);
    expect(minorUnitsOf('ABC')).toBeUndefined();
    expect(minorUnitsOf('XTS')).toBeUndefined();
  });
});

describe('the amount keys in a layout', () => {
  const currencyColumn = { name: 'currency', type: 'currency' };
  const layoutError = (columns: unknown[], keys: Record<string, unknown> = {}) =>
    usage(() => parseLayout({ columns: [{ name: 'id', type: 'text' }, ...columns], naturalKey: 'id', ...keys }, 'partner.json'));

  it.each([
    [[{ name: 'amount', type: 'decimal', minorUnits: 'currency' }], '"minorUnits": "currency" needs a currency column'],
    [
      [{ name: 'amount', type: 'decimal', minorUnits: 'currency' }, currencyColumn, { name: 'local', type: 'currency' }],
      'several currency columns ("currency", "local"): say which with "currencyFrom"',
    ],
    [
      [
        { name: 'amount', type: 'decimal', minorUnits: 'currency', currencyFrom: 'note' },
        { name: 'note', type: 'text' },
      ],
      '"currencyFrom" must name a currency column',
    ],
    [
      [{ name: 'amount', type: 'decimal', minorUnits: 'currency', currencyFrom: 'amount' }, currencyColumn],
      '"currencyFrom" must name another',
    ],
    [[{ name: 'amount', type: 'decimal', currencyFrom: 'currency' }, currencyColumn], '"currencyFrom" goes with "minorUnits": "currency"'],
    [
      [{ name: 'amount', type: 'decimal', minorUnits: 'currency', scale: 2 }, currencyColumn],
      '"scale" of a column in each currency\'s minor unit is 4',
    ],
    [[{ name: 'amount', type: 'decimal', minorUnits: 'cents' }], '"minorUnits" must be 0 to 6 (the places implied), or "currency"'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: '€' }], '"currencySymbols" must be a non-empty list'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: [] }], '"currencySymbols" must be a non-empty list'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: [''] }], '"currencySymbols" must list texts'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: ['-€'] }], 'has a digit or a sign'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: ['€ '] }], 'begins or ends with a space'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: ['€', '€'] }], 'names a symbol twice'],
    [[{ name: 'amount', type: 'decimal', currencySymbols: ['€'], minorUnits: 2 }], 'not in minor units'],
    [[{ name: 'note', type: 'text', currencySymbols: ['€'] }], '"currencySymbols" and "currencyFrom" are for decimal columns'],
  ])('refuses %j, naming the key', (columns, message) => {
    const error = layoutError(columns);
    expect(error).toMatch(/^partner\.json: layout column "(amount|note)": /);
    expect(error).toContain(message);
  });

  it('knows the apostrophe and space group separators, and no other', () => {
    expect(amountLayout({}, { groupSeparator: "'" }).groupSeparator).toBe("'");
    expect(layoutError([], { groupSeparator: '\u2019' })).toContain('"groupSeparator" must be');
    expect(layoutError([], { groupSeparator: '_' })).toContain(`"groupSeparator" must be "" (none), ",", ".", " "`);
  });
});

describe('amount notations, each declared', () => {
  it.each([
    // accounting brackets, with a currency symbol inside
    [{ notation: ['brackets'] }, '(300.00)', '-300.00'],
    [{ notation: ['brackets'], currencySymbols: ['$'] }, '($300.00)', '-300.00'],
    [{ notation: ['brackets'] }, '300.00', '300.00'],
    // an explicit plus
    [{ notation: ['plus'] }, '+10000.00', '10000.00'],
    [{ notation: ['plus'] }, '-5.00', '-5.00'],
    // a debit or credit mark after or before the amount, any case, spaces or not
    [{ notation: ['debitCredit'] }, '0.80Dr', '-0.80'],
    [{ notation: ['debitCredit'] }, '15.00Cr', '15.00'],
    [{ notation: ['debitCredit'] }, '15.00 CR', '15.00'],
    [{ notation: ['debitCredit'] }, '12.00 d', '-12.00'],
    [{ notation: ['debitCredit'] }, 'C 7.5', '7.5'],
    [{ notation: ['debitCredit'] }, 'DR 1,250.00', '-1250.00'],
    // SAP's minus after the number
    [{ notation: ['trailingMinus'] }, '300.00-', '-300.00'],
  ])('%j reads %s as %s', (amount, written, read) => {
    expect(amountOf(amountLayout(amount, { groupSeparator: ',' }), written)).toBe(read);
  });

  it.each([
    // not declared: refused, as ever
    [{}, '(300.00)'],
    [{}, '+10000.00'],
    [{}, '0.80Dr'],
    [{}, '300.00-'],
    // one sign only
    [{ notation: ['brackets'] }, '(-300.00)'],
    [{ notation: ['plus'] }, '+-5.00'],
    [{ notation: ['debitCredit'] }, '-0.80Dr'],
    [{ notation: ['trailingMinus'] }, '-300.00-'],
    // a mark must stand apart from a word: BTC is no credit mark
    [{ notation: ['debitCredit'] }, '100 BTC'],
    [{ notation: ['brackets'] }, '(300.00'],
  ])('%j refuses %s, naming the row', (amount, written) => {
    const layout = amountLayout(amount);
    expect(rejection(() => rows(layout, ['T1', written])).message).toMatch(/^line 2, field amount: .* is not a decimal amount/);
  });

  it('reads a declared "no amount" text as an empty value (NULL), on an optional column only', () => {
    const layout = amountLayout({ required: false, noAmount: ['-'] });
    expect(rows(layout, ['T1', '-'], ['T2', ' - '], ['T3', '5.00'])).toEqual([
      ['T1', null],
      ['T2', null],
      ['T3', '5.00'],
    ]);
    expect(usage(() => amountLayout({ noAmount: ['-'] }))).toMatch(/"noAmount" needs "required": false/);
  });

  it('refuses what the keys cannot mean, naming the key', () => {
    expect(usage(() => amountLayout({ notation: ['parentheses'] }))).toMatch(/"notation" must list some of "brackets", "plus"/);
    expect(usage(() => amountLayout({ notation: ['plus', 'plus'] }))).toMatch(/"notation" names one twice/);
    expect(usage(() => amountLayout({ notation: ['brackets'], minorUnits: 2 }))).toMatch(/not in minor units/);
    expect(usage(() => amountLayout({ notation: ['brackets'], sign: { from: 'id', negative: ['D'], positive: ['C'] } }))).toMatch(
      /not both/,
    );
  });

  it('keeps the keys when a layout is written back as configuration', () => {
    const layout = amountLayout({ notation: ['brackets', 'plus'], required: false, noAmount: ['-'] });
    expect(toLayoutJson(layout).columns).toContainEqual({
      name: 'amount',
      type: 'decimal',
      required: false,
      notation: ['brackets', 'plus'],
      noAmount: ['-'],
    });
  });
});

describe('a currency code written inside the amount, and currency aliases', () => {
  /** `JPY 1000.00` in one field: the amount read by one column, its code by a currency column of the same header */
  const codedLayout = (amount: Record<string, unknown> = {}, layoutKeys: Record<string, unknown> = {}) =>
    parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'amount', from: 'Amount', type: 'decimal', ...amount },
          { name: 'currency', from: 'Amount', type: 'currency', inAmount: 'amount' },
        ],
        naturalKey: 'id',
        ...layoutKeys,
      },
      'test',
    );
  const read = (layout: Layout, written: string) => {
    const plan = planRows(layout, ['id', 'Amount'], 1);
    const out = plan.row(['T1', written], 2);
    if (out === 'skip') throw new Error('skipped');
    return out.slice(1);
  };

  it.each([
    ['JPY 1000.00', ['1000.00', 'JPY']],
    ['1000.00 JPY', ['1000.00', 'JPY']],
    ['-12.50 eur', ['-12.50', 'EUR']],
    ['USD-5.00', ['-5.00', 'USD']],
  ])('reads %s as the amount and its currency', (written, expected) => {
    expect(read(codedLayout(), written)).toEqual(expected);
  });

  it('reads a code inside or outside a declared notation', () => {
    const layout = codedLayout({ notation: ['brackets', 'debitCredit'] });
    expect(read(layout, '(JPY 300)')).toEqual(['-300', 'JPY']);
    expect(read(layout, 'JPY (300)')).toEqual(['-300', 'JPY']);
    expect(read(layout, '15.00 USD Cr')).toEqual(['15.00', 'USD']);
  });

  it('refuses an amount without a code, or with a code that is no currency, naming the field', () => {
    expect(rejection(() => read(codedLayout(), '1000.00')).message).toMatch(/^line 2, field (amount|currency): /);
    expect(rejection(() => read(codedLayout(), 'XYZ 1000.00')).message).toMatch(/^line 2, field amount: "XYZ 1000.00" is not/);
  });

  it('reads a declared alias as its ISO code, and nothing else: RUR is RUB, XYZ stays unknown', () => {
    const layout = codedLayout({}, { currencyAliases: { RUR: 'RUB' } });
    expect(read(layout, '10.00 RUR')).toEqual(['10.00', 'RUB']);
    expect(read(layout, '10.00 rur')).toEqual(['10.00', 'RUB']);
    const plain = parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'currency', type: 'currency' },
        ],
        naturalKey: 'id',
        currencyAliases: { RUR: 'RUB' },
      },
      'test',
    );
    expect(rows(plain, ['T1', 'RUR'], ['T2', 'usd'])).toEqual([
      ['T1', 'RUB'],
      ['T2', 'USD'],
    ]);
    expect(rejection(() => rows(plain, ['T3', 'SUR'])).message).toMatch(/is not an active ISO 4217 currency code/);
  });

  it('refuses an alias that is a currency of its own or names none, and an inAmount that reads another field', () => {
    expect(usage(() => codedLayout({}, { currencyAliases: { USD: 'EUR' } }))).toMatch(/"USD" is an ISO 4217 currency of its own/);
    expect(usage(() => codedLayout({}, { currencyAliases: { RUR: 'RUX' } }))).toMatch(/must name an active ISO 4217 currency/);
    expect(
      usage(() =>
        parseLayout(
          {
            columns: [
              { name: 'id', type: 'text' },
              { name: 'amount', type: 'decimal' },
              { name: 'currency', type: 'currency', inAmount: 'amount' },
            ],
            naturalKey: 'id',
          },
          'test',
        ),
      ),
    ).toMatch(/"inAmount" reads the code from the same field as "amount"/);
  });
});
