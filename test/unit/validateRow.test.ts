import { describe, expect, it } from 'vitest';
import { RejectError } from '../../src/errors.js';
import { DEFAULT_LAYOUT, type Layout } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { ACTIVE_CURRENCIES, isActiveCurrency } from '../../src/layout/values/currencies.js';
import { isCalendarDate, keyProblem, MAX_KEY_BYTES } from '../../src/layout/reader/columnValues.js';
import { planRows } from '../../src/layout/reader/rowPlan.js';
import { rejection } from '../support/thrown.js';

/** One row checked as the reader checks it, under a header in the layout's own order. */
function validateRow(layout: Layout, values: string[], line: number): (string | null)[] {
  const out = planRows(
    layout,
    layout.columns.map((c) => c.from),
    1,
  ).row(values, line);
  if (out === 'skip') throw new Error('skipped');
  return out;
}
const validateHeader = (layout: Layout, header: string[], line: number) => planRows(layout, header, line);

const fields = (...v: string[]) => v;
const good = ['2026-03-14', 'T1', 'M1', 'VISA', 'sale', '100.00', '1.50', '98.50', 'EUR'];

describe('a settlement row against the default layout', () => {
  it('keeps amounts as the exact strings the file wrote', () => {
    const v = validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 5), '12345678901234.99', '-0.01', '0.1', 'EUR'), 2);
    expect(v.slice(5, 8)).toEqual(['12345678901234.99', '-0.01', '0.1']);
  });

  it.each([
    ['three decimal places', '1.005'],
    ['a letter', '12.5O'],
    ['an exponent', '1e3'],
    ['a thousands separator', '1,000.00'],
    ['a plus sign', '+5.00'],
    ['a bare point', '5.'],
  ])('rejects an amount with %s, naming line and field', (_what, amount) => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 5), amount, '1.50', '98.50', 'EUR'), 7));
    expect(err.line).toBe(7);
    expect(err.field).toBe('gross_amount');
    expect(err.message).toContain('line 7, field gross_amount');
  });

  it.each(['2026-02-30', '2026-13-01', '14/03/2026', '2026-3-14', ''])('rejects the date %j', (date) => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(date, ...good.slice(1)), 3));
    expect(err.field).toBe('settlement_date');
  });

  it('accepts 29 February in a leap year only', () => {
    expect(() => validateRow(DEFAULT_LAYOUT, fields('2028-02-29', ...good.slice(1)), 2)).not.toThrow();
    expect(() => validateRow(DEFAULT_LAYOUT, fields('2026-02-29', ...good.slice(1)), 2)).toThrow(RejectError);
  });

  it('rejects a missing required value', () => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields('2026-03-14', '', ...good.slice(2)), 4));
    expect(err.message).toBe('line 4, field transaction_id: required value is missing');
  });

  it('rejects a ragged row', () => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 8)), 9));
    expect(err.message).toBe('line 9: expected 9 fields, found 8');
  });

  it('rejects a NUL character, which PostgreSQL text cannot hold', () => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(good[0]!, 'T\u00001', ...good.slice(2)), 6));
    expect(err.message).toBe('line 6, field transaction_id: contains a NUL character');
  });

  it.each(['EURO', 'E1R', 'e'])('rejects the currency %j', (cur) => {
    expect(rejection(() => validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 8), cur), 2)).field).toBe('currency');
  });

  it('upper-cases a currency code written in lower case (Stripe writes "usd")', () => {
    expect(validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 8), 'eur'), 2)[8]).toBe('EUR');
  });

  it.each(['XXX', 'XTS', 'ABC', 'HRK', 'BGN', 'ANG', 'ZWL'])('rejects %j, which is not an active ISO 4217 currency', (cur) => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 8), cur), 5));
    expect(err.message).toBe(`line 5, field currency: "${cur}" is not an active ISO 4217 currency code`);
  });

  it.each(['0000-01-01', '0000-02-29', '2026-02-30', '2026-04-31', '2100-02-29', '10000-01-01', '-001-01-01'])(
    'rejects the date %j with its line and field',
    (date) => {
      const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(date, ...good.slice(1)), 8));
      expect(err.message).toBe(`line 8, field settlement_date: "${date}" is not a date (YYYY-MM-DD, 0001-01-01 to 9999-12-31)`);
    },
  );

  it.each(['0001-01-01', '9999-12-31', '2000-02-29', '2024-02-29'])('accepts the date %j at the edges of the range', (date) => {
    expect(validateRow(DEFAULT_LAYOUT, fields(date, ...good.slice(1)), 2)[0]).toBe(date);
  });

  it.each([
    ['a trailing space', 'T-1 ', 'ends with a space: "trim": true would remove the padding'],
    ['a leading space', ' T-1', 'begins with a space: "trim": true would remove the padding'],
    ['a trailing tab', 'T-1\t', 'ends with a tab: "trim": true would remove the padding'],
    ['a trailing NBSP', 'T-1\u00a0', 'ends with a space (U+00A0): "trim": true would remove the padding'],
    ['a leading BOM', '\ufeffT-1', 'contains an invisible or control character (U+FEFF)'],
    ['a zero-width space', 'T-\u200b1', 'contains an invisible or control character (U+200B)'],
    ['a trailing zero-width space', 'T-1\u200b', 'contains an invisible or control character (U+200B)'],
    ['a zero-width joiner', 'T\u200d-1', 'contains an invisible or control character (U+200D)'],
    ['an NBSP inside', 'T\u00a01', 'contains an invisible or control character (U+00A0)'],
    ['a BOM inside', 'T-\ufeff1', 'contains an invisible or control character (U+FEFF)'],
    ['a word joiner', 'T\u20601', 'contains an invisible or control character (U+2060)'],
    ['a Hangul filler', 'T\u31641', 'contains an invisible or control character (U+3164)'],
    ['a bidi override', 'T\u202e1', 'contains an invisible or control character (U+202E)'],
    ['an escape character', 'T\u001b1', 'contains an invisible or control character (U+001B)'],
  ])('rejects a natural key with %s, naming line and field', (_what, id, problem) => {
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(good[0]!, id, ...good.slice(2)), 11));
    expect(err.line).toBe(11);
    expect(err.field).toBe('transaction_id');
    expect(err.message).toMatch(/^line 11, field transaction_id: "[^"]*" /);
    expect(err.message.endsWith(problem)).toBe(true);
  });

  it(`rejects a natural key over ${MAX_KEY_BYTES} bytes of UTF-8, quoting only its start`, () => {
    expect(keyProblem('a'.repeat(MAX_KEY_BYTES))).toBeUndefined();
    expect(keyProblem('é'.repeat(MAX_KEY_BYTES / 2))).toBeUndefined();
    expect(keyProblem('é'.repeat(MAX_KEY_BYTES / 2 + 1))).toBe(`is 258 bytes long; a key may have at most ${MAX_KEY_BYTES}`);
    const err = rejection(() => validateRow(DEFAULT_LAYOUT, fields(good[0]!, 'K'.repeat(2704), ...good.slice(2)), 2));
    expect(err.message).toBe(`line 2, field transaction_id: "${'K'.repeat(80)}…" is 2704 bytes long; a key may have at most 256`);
  });

  it('accepts ordinary keys, inner spaces and non-ASCII letters included', () => {
    for (const id of ['T1', 'a b', 'ÜBER-42', 'x_y.z/7', '東京-1']) expect(keyProblem(id)).toBeUndefined();
  });

  it('leaves other text columns free of the key rule', () => {
    expect(validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 2), 'M1 ', ...good.slice(3)), 2)[2]).toBe('M1 ');
  });

  it('matches the header by name, in any order', () => {
    const names = DEFAULT_LAYOUT.columns.map((c) => c.name);
    const swapped = [names[1]!, names[0]!, ...names.slice(2)];
    const plan = validateHeader(DEFAULT_LAYOUT, swapped, 1);
    expect(plan.row(['T1', '2026-03-14', ...good.slice(2)], 2)).toEqual(['2026-03-14', 'T1', ...good.slice(2)]);
  });

  it('names every required column the header lacks, never the whole header', () => {
    const names = DEFAULT_LAYOUT.columns.map((c) => c.name);
    const message = (got: string[]) => rejection(() => validateHeader(DEFAULT_LAYOUT, got, 1)).message;
    expect(message([names[0]!, 'id', ...names.slice(2)])).toBe('line 1: header lacks the column "transaction_id" (it has 9 columns)');
    expect(message(names.slice(0, 7))).toBe('line 1: header lacks the columns "net_amount", "currency" (it has 7 columns)');
    expect(() => validateHeader(DEFAULT_LAYOUT, [...names, 'extra'], 1)).not.toThrow();
    const long = message(['h'.repeat(20_000)]);
    expect(long).toContain('line 1: header lacks the columns "settlement_date", "transaction_id"');
    expect(long.length).toBeLessThan(400);
  });

  it('refuses extra columns when the layout says reject, naming them', () => {
    const strict = { ...DEFAULT_LAYOUT, extraColumns: 'reject' as const };
    const names = DEFAULT_LAYOUT.columns.map((c) => c.name);
    expect(rejection(() => validateHeader(strict, [...names, 'extra'], 1)).message).toBe(
      'line 1: header has a column the layout does not know: "extra"',
    );
  });

  it('refuses a header that names a layout column twice', () => {
    const names = DEFAULT_LAYOUT.columns.map((c) => c.name);
    expect(rejection(() => validateHeader(DEFAULT_LAYOUT, [...names, 'currency'], 1)).message).toBe(
      'line 1: header names "currency" twice (columns 9 and 10): say which with the column\'s "occurrence"',
    );
  });
});

describe('the ISO 4217 table', () => {
  it('holds the active codes and none of the test or no-currency codes', () => {
    for (const code of ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'XCG', 'ZWG', 'SLE', 'VES', 'XAU', 'XDR']) {
      expect(isActiveCurrency(code)).toBe(true);
    }
    for (const code of ['XXX', 'XTS', 'ABC', 'eur', 'EURO', '', 'SLL', 'CUC', 'VEF']) expect(isActiveCurrency(code)).toBe(false);
    expect(ACTIVE_CURRENCIES.size).toBe(176);
    for (const code of ACTIVE_CURRENCIES) expect(code).toMatch(/^[A-Z]{3}$/);
  });
});

describe('the calendar', () => {
  it('knows leap years by the Gregorian rule, years 1 to 9999 only', () => {
    expect(isCalendarDate(2000, 2, 29)).toBe(true);
    expect(isCalendarDate(1900, 2, 29)).toBe(false);
    expect(isCalendarDate(4, 2, 29)).toBe(true);
    expect(isCalendarDate(0, 1, 1)).toBe(false);
    expect(isCalendarDate(9999, 12, 31)).toBe(true);
    expect(isCalendarDate(10000, 1, 1)).toBe(false);
    expect(isCalendarDate(2026, 12, 32)).toBe(false);
    expect(isCalendarDate(2026, 0, 1)).toBe(false);
  });
});

describe('a layout from configuration', () => {
  it('accepts optional columns and turns their empty values into NULL', () => {
    const layout = parseLayout(
      {
        columns: [
          { name: 'id', type: 'text' },
          { name: 'note', type: 'text', required: false },
        ],
        naturalKey: 'id',
      },
      'test',
    );
    expect(validateRow(layout, fields('a', ''), 2)).toEqual(['a', null]);
  });

  it.each([
    [{ columns: [] }, 'non-empty'],
    [{ columns: [{ name: 'Id', type: 'text' }] }, 'identifier'],
    [{ columns: [{ name: 'id', type: 'money' }] }, 'type'],
    [{ columns: [{ name: 'id', type: 'text' }], naturalKey: 'nope' }, 'naturalKey'],
    [{ columns: [{ name: 'run_id', type: 'text' }] }, 'reserved'],
  ])('refuses a bad layout %#', (raw, words) => {
    expect(() => parseLayout(raw, 'cfg')).toThrow(words);
  });
});
