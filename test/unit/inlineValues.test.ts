import { describe, expect, it } from 'vitest';
import { inlineValues } from '../../src/ledger/pgLedger.js';

describe('a ledger statement’s values inlined for the round trip that begins its transaction', () => {
  it('quotes each value as the literal node-postgres would send as the parameter, NULL for none', () => {
    // a backslash makes escapeLiteral's E'' form, its backslash doubled
    expect(inlineValues('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)', ["it's \\ a; ?", 42, 1.5, true, null, undefined])).toBe(
      "INSERT INTO t VALUES ( E'it''s \\\\ a; ?', '42', '1.5', 'true', NULL, NULL)",
    );
  });

  it('leaves the statement to its parameters when a value is not a string, number, boolean or null, or the count differs', () => {
    expect(inlineValues('SELECT ?', [new Date(0)])).toBeUndefined();
    expect(inlineValues('SELECT ?', [Buffer.from('x')])).toBeUndefined();
    expect(inlineValues('SELECT ?', [{ a: 1 }])).toBeUndefined();
    expect(inlineValues('SELECT ?, ?', ['a'])).toBeUndefined();
    expect(inlineValues('SELECT ?', ['a', 'b'])).toBeUndefined();
  });
});
