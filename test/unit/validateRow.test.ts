import { describe, expect, it } from 'vitest';
import { RejectError } from '../../src/errors.js';
import { DEFAULT_LAYOUT, parseLayout } from '../../src/load/layout.js';
import { validateHeader, validateRow } from '../../src/load/validateRow.js';

const fields = (...v: string[]) => v;
const good = ['2026-03-14', 'T1', 'M1', 'VISA', 'sale', '100.00', '1.50', '98.50', 'EUR'];

function rejection(fn: () => unknown): RejectError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RejectError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

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

  it.each(['eur', 'EURO', 'E1R'])('rejects the currency %j', (cur) => {
    expect(rejection(() => validateRow(DEFAULT_LAYOUT, fields(...good.slice(0, 8), cur), 2)).field).toBe('currency');
  });

  it('checks the header names and order', () => {
    expect(() => validateHeader(DEFAULT_LAYOUT, fields(...DEFAULT_LAYOUT.columns.map((c) => c.name)), 1)).not.toThrow();
    const swapped = DEFAULT_LAYOUT.columns.map((c) => c.name);
    [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
    expect(rejection(() => validateHeader(DEFAULT_LAYOUT, fields(...swapped), 1)).line).toBe(1);
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
