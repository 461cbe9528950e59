import { describe, expect, it } from 'vitest';
import { suggestLayout } from '../../src/layout/suggest/suggestLayout.js';
import { draftRoundTrip, sampleFile } from '../support/draftRoundTrip.js';

const fixture = (name: string) => `fixtures/statements/${name}`;

describe('layout suggest on statements in the legacy encodings of the world', () => {
  it.each([
    ['cathay_statement_big5.csv', 'big5'],
    ['mufg_statement_sjis.csv', 'shift_jis'],
    ['kb_statement_euckr.csv', 'euc-kr'],
    ['sber_statement_cp1251.csv', 'windows-1251'],
    ['vtb_statement_koi8r.csv', 'koi8-r'],
  ])('drafts %s in %s, and the file checks with the draft', async (name, encoding) => {
    const { s, layout, checked } = await draftRoundTrip(fixture(name), name);
    expect(layout).toMatchObject({ encoding });
    expect(s.encoding?.encoding).toBe(encoding);
    expect(checked.error).toBeNull();
    expect(checked.rows).toBe(20);
  });

  it('says an unsure encoding is unsure, naming the alternative', async () => {
    const { s } = await draftRoundTrip(fixture('kb_statement_euckr.csv'), 'kb.csv');
    expect(s.draft!.unsure.join('\n')).toMatch(/the encoding: .*euc-kr.*; else gb18030/);
  });

  it('types 19- and 20-digit account numbers as text, never as amounts', async () => {
    const { s } = await draftRoundTrip(fixture('sber_statement_cp1251.csv'), 'sber.csv');
    const account = s.draft!.columns.find((c) => c.header === 'Счёт')!;
    expect(account.type).toBe('text');
    expect(account.why).toMatch(/account or card numbers/);
  });
});

describe('layout suggest proves its draft over the whole file', () => {
  const STATEMENTS = [
    'cathay_statement_big5.csv',
    'continuation_export.csv',
    'icbc_statement_gb18030.csv',
    'kb_statement_euckr.csv',
    'mufg_statement_sjis.csv',
    'sber_statement_cp1251.csv',
    'vtb_statement_koi8r.csv',
  ];

  it.each(STATEMENTS)('drafts %s so that its own check passes', async (name) => {
    const { s, checked } = await draftRoundTrip(fixture(name), name);
    expect(checked.error).toBeNull();
    expect(s.draft!.notes).toContain(`check passes over the whole file with this draft: ${checked.rows} rows`);
  });

  it('names no key for a statement with identical rows, saying so', async () => {
    const suggestion = await suggestLayout(fixture('wallet_statement_no_ids.csv'), 'wallet.csv');
    expect(suggestion.draft!.naturalKey).toEqual([]);
    expect(suggestion.config.layout).not.toHaveProperty('naturalKey');
    expect(suggestion.draft!.naturalKeyWhy).toMatch(/^no unique key: rows without ids: /);
    expect(suggestion.draft!.unsure.join('\n')).toMatch(/the natural key: no unique key: rows without ids/);
  });

  it('takes another key when the first repeats past the sample, and reads as text a column a later row refuses', async () => {
    // 1,200 rows: the sample's first 1,000 hold each reference once, and every amount as a number
    const rows = Array.from({ length: 1200 }, (_, i) => {
      const reference = i < 1100 ? `R${i}` : `R${i - 1100}`;
      const amount = i === 1150 ? 'n/a' : `${i}.50`;
      return `P${100000 + i},${reference},2024-01-01,${amount}`;
    });
    const text = `Payment Ref,Order Ref,Date,Amount\n${rows.join('\n')}\n`;
    const path = sampleFile(text, 'late.csv');
    const { s, layout, checked } = await draftRoundTrip(path, 'late.csv');
    expect(checked).toMatchObject({ rows: 1200, error: null });
    expect(s.draft!.naturalKey).toEqual(['payment_ref']);
    expect(layout.columns).toContainEqual({ name: 'amount', from: 'Amount', type: 'text' });
    expect(s.draft!.unsure.join('\n')).toMatch(/Amount: drafted as text, since line 1152 of the whole file refuses/);
  });

  it('splits a currency code written inside the amount into a column of its own', async () => {
    const { s, layout, checked } = await draftRoundTrip(fixture('cathay_statement_big5.csv'), 'cathay.csv');
    expect(checked.error).toBeNull();
    const columns = layout.columns as Record<string, unknown>[];
    const amount = columns.find((c) => c.from === '金額' && c.type === 'decimal')!;
    expect(amount).not.toHaveProperty('currencySymbols');
    expect(columns).toContainEqual({ name: `${String(amount.name)}_currency`, from: '金額', type: 'currency', inAmount: amount.name });
    expect(s.draft!.notes.join('\n')).toMatch(/writes its currency code inside the amount/);
  });
});

describe('layout suggest finds the account and summary records of a statement', () => {
  it('takes K as the account record and checks S as the count of D records', async () => {
    const { s, layout, checked } = await draftRoundTrip(fixture('bank_statement_records.txt'), 'statement.txt');
    expect(layout.recordTypes).toEqual({ K: 'info', D: 'data', S: { count: 2 } });
    expect(s.draft!.notes.join('\n')).toMatch(/K is the account's record \(it carries the account number 6222021234567890123\)/);
    expect(s.draft!.naturalKey).toEqual(['field_3']);
    expect(checked).toMatchObject({ rows: 15, error: null });
  });
});
