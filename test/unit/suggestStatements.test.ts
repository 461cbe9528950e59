import { describe, expect, it } from 'vitest';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
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

  it('keys a statement with identical rows on their own values, numbered by occurrence, and its check passes', async () => {
    const { s, layout, checked } = await draftRoundTrip(fixture('wallet_statement_no_ids.csv'), 'wallet.csv');
    expect(checked).toMatchObject({ rows: 11, error: null });
    expect(s.draft!.notes).toContain(`check passes over the whole file with this draft: ${checked.rows} rows`);
    expect(s.draft!.naturalKey).toEqual(['date', 'description', 'amount', 'currency']);
    expect(layout).toMatchObject({ naturalKey: ['date', 'description', 'amount', 'currency'], occurrence: true });
    // seenBefore is an occurrence's default: the draft leaves it so
    expect(layout).not.toHaveProperty('seenBefore');
    const parsed = parseLayout(layout, 'draft');
    expect(parsed).toMatchObject({ occurrence: 'occurrence', seenBefore: true });
    expect(s.draft!.naturalKeyWhy).toMatch(/^no unique key: rows without ids: .*identical lines are distinct rows: numbered by occurrence/);
    expect(s.draft!.notes.join('\n')).toMatch(/identical lines are distinct rows: numbered by occurrence/);
  });

  it('names the occurrence column otherwise when the statement has a column called occurrence', async () => {
    const rows = ['2024-03-01,Coffee,-3.20,1', '2024-03-01,Coffee,-3.20,1', '2024-03-02,Metro,-2.10,2'];
    const path = sampleFile(`Date,Text,Amount,Occurrence\n${rows.join('\n')}\n`, 'occ.csv');
    const { s, layout, checked } = await draftRoundTrip(path, 'occ.csv');
    expect(checked).toMatchObject({ rows: 3, error: null });
    expect(layout).toMatchObject({ occurrence: 'line_occurrence' });
    expect(s.draft!.naturalKey).toEqual(['date', 'text', 'amount']);
  });

  it('names no key when identical rows have no date, amount or text of their own, saying so', async () => {
    const path = sampleFile('Store,Till\n101,7\n101,7\n102,3\n', 'tills.csv');
    const s = await suggestLayout(path, 'tills.csv');
    const layout = s.config.layout!;
    expect(s.draft!.naturalKey).toEqual([]);
    expect(layout).not.toHaveProperty('naturalKey');
    expect(layout).not.toHaveProperty('occurrence');
    expect(s.draft!.naturalKeyWhy).toMatch(/^no unique key: rows without ids: /);
    expect(s.draft!.unsure.join('\n')).toMatch(/the natural key: no unique key: rows without ids, and no row has values of its own/);
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

describe('layout suggest drafts a footer when the file ends with one', () => {
  it('sets aside the lines after an export’s rows, finds them by their first line, and checks the count they state', async () => {
    const { s, layout, checked } = await draftRoundTrip(fixture('alipay_gb18030_20261201-20261231.csv'), 'alipay_20261231.csv');
    expect(layout).toMatchObject({
      encoding: 'gb18030',
      skipLines: 4,
      footer: { startsAt: '^#-+账务明细列表结束-+' },
      captures: { stated_rows: { line: '^#共(\\d+)笔记录', at: 'footer' } },
      totals: [{ statement: { count: 'stated_rows' } }],
    });
    expect(checked.error).toBeNull();
    expect(checked.rows).toBe(11);
    expect(checked.footer).toMatchObject({ first: 17, last: 21 });
    expect(checked.totals?.[0]?.agrees).toBe('count 11 = stated_rows "11" (line 18)');
    // the footer's lines taught the draft nothing: no note of records narrower than the header
    expect(s.draft!.notes.join('\n')).not.toMatch(/not as wide as the header/);
    expect(s.draft!.notes.join('\n')).toMatch(/the 5 lines after the rows, from line 17 .* are a footer: set aside, never rows/);
  });

  it('finds a footer without a mark by its narrow lines, and proposes no count that is not the rows’', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => `2026-12-0${i + 1},P-${100 + i},Coffee,-3.50,EUR`);
    const text = ['Date,Reference,Text,Amount,Currency', ...rows, '', 'Total: 7 transactions', 'Exported 2027-01-02', ''].join('\n');
    const { layout, checked } = await draftRoundTrip(sampleFile(text, 'export.csv'), 'export.csv');
    expect(layout.footer).toEqual({ startsAt: '^Total: \\d+ transactions' });
    expect(layout.captures).toBeUndefined();
    expect(checked.error).toBeNull();
    expect(checked.rows).toBe(6);
    const agreeing = text.replace('Total: 7', 'Total: 6');
    const counted = await draftRoundTrip(sampleFile(agreeing, 'export.csv'), 'export.csv');
    expect(counted.layout.captures).toEqual({ stated_rows: { line: '^Total: (\\d+) transactions', at: 'footer' } });
    expect(counted.checked.totals?.[0]?.agrees).toBe('count 6 = stated_rows "6" (line 9)');
  });

  it('drafts none for a file that ends with its rows', async () => {
    const { layout } = await draftRoundTrip(fixture('statement_2026-03-09.csv'), 'statement_2026-03-09.csv');
    expect(layout.footer).toBeUndefined();
  });
});
