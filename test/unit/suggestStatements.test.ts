import { describe, expect, it } from 'vitest';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { columnName, loadRomanizer } from '../../src/layout/suggest/columnNames.js';
import { suggestLayout } from '../../src/layout/suggest/suggestLayout.js';
import { draftRoundTrip, draftTypes, sampleFile } from '../support/draftRoundTrip.js';

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

describe('layout suggest names the columns of headers in any script', () => {
  const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
  const namesFrom = (layout: Record<string, unknown>) =>
    (layout.columns as { name: string; from?: string }[]).map((c) => [c.from ?? c.name, c.name]);

  it('romanizes each header into a name a table takes, keeping the header in "from", and the file checks', async () => {
    const header = '交易类型,Назначение,お取引内容,거래점,Περιγραφή,תיאור,Straße,Ref,Amount';
    const rows = ['消费,Оплата,カード,강남,Καφές,קפה,Hauptstraße,R1,12.50', '转账,Перевод,振込,종로,Μεταφορά,העברה,Ringstraße,R2,-3.20'];
    const path = sampleFile(`${header}\n${rows.join('\n')}\n`, 'scripts.csv');
    const { s, layout, checked } = await draftRoundTrip(path, 'scripts.csv');
    expect(checked).toMatchObject({ rows: 2, error: null });
    expect(s.draft!.notes.join('\n')).toMatch(
      /column names: headers in other scripts romanized \(交易类型 → jiao_yi_lei_xing, Назначение → naznachenie, お取引内容 → o_qu_yin_nei_rong, …\)/,
    );
    expect(namesFrom(layout)).toEqual([
      ['交易类型', 'jiao_yi_lei_xing'],
      ['Назначение', 'naznachenie'],
      ['お取引内容', 'o_qu_yin_nei_rong'],
      ['거래점', 'geolaejeom'],
      ['Περιγραφή', 'perigrafi'],
      ['תיאור', 'tyvr'],
      ['Straße', 'strasse'],
      ['Ref', 'ref'],
      ['Amount', 'amount'],
    ]);
  });

  it('names the finance columns of a Chinese statement as their English headers would be, the key its transaction number', async () => {
    const header = '交易时间,交易单号,金额(元),余额,币种,摘要,交易对方';
    const rows = [
      '2026-12-01 09:15:00,4200001,-25.50,974.50,CNY,咖啡,星巴克',
      '2026-12-01 12:30:00,4200002,-25.50,949.00,CNY,咖啡,星巴克',
      '2026-12-02 18:00:00,4200003,1000.00,1949.00,CNY,工资,公司',
    ];
    const path = sampleFile(`${header}\n${rows.join('\n')}\n`, '账单.csv');
    const { s, layout, checked } = await draftRoundTrip(path, '账单.csv');
    expect(checked).toMatchObject({ rows: 3, error: null });
    expect(draftTypes(s)).toEqual([
      'transaction_time:timestamp yyyy-MM-dd HH:mm:ss',
      'transaction_id:integer',
      'amount_yuan:decimal',
      'balance:decimal',
      'currency:currency',
      'description:text',
      'counterparty:text',
    ]);
    expect(layout).toMatchObject({ table: 'zhang_dan', naturalKey: 'transaction_id' });
    expect(namesFrom(layout)[2]).toEqual(['金额(元)', 'amount_yuan']);
    // the draft says what it named so, for the person who reviews it
    expect(s.draft!.notes).toContain(
      'column names: a bank\'s common words named as in English (交易时间 → transaction_time, 交易单号 → transaction_id, 金额(元) → amount_yuan, …): rename any that reads oddly, "from" keeps each header',
    );
  });

  it("names the finance columns of a Russian statement so, and types a Korean one's whole amounts as amounts by their names", async () => {
    const russian =
      'Дата;Сумма;Остаток;Валюта;Назначение платежа\n01.03.2026;-120,00;880,00;RUB;Такси\n02.03.2026;-80,50;799,50;RUB;Кафе\n';
    const ru = await draftRoundTrip(sampleFile(russian, 'выписка.csv'), 'выписка.csv');
    expect(ru.checked.error).toBeNull();
    expect(draftTypes(ru.s)).toEqual([
      'date:date dd.MM.yyyy',
      'amount:decimal',
      'balance:decimal',
      'currency:currency',
      'description:text',
    ]);
    expect(ru.layout.table).toBe('vypiska');

    // KRW has no minor unit: whole numbers, which under a header of no meaning are integers
    const korean = '거래일자,적요,금액,잔액,메모\n2026-03-01,커피,4500,95500,1\n2026-03-02,택시,12000,83500,2\n';
    const ko = await draftRoundTrip(sampleFile(korean, 'kb.csv'), 'kb.csv');
    expect(ko.checked.error).toBeNull();
    expect(draftTypes(ko.s)).toEqual([
      'transaction_date:date yyyy-MM-dd',
      'description:text',
      'amount:decimal',
      'balance:decimal',
      'memo:integer',
    ]);
  });

  // each language's words for: date, transaction date, transaction time, amount, balance, currency, description, note, transaction number, counterparty ('' where the table has none)
  const ENGLISH = 'date|transaction_date|transaction_time|amount|balance|currency|description|note|transaction_id|counterparty'.split('|');
  it.each([
    ['Simplified Chinese', '日期|交易日期|交易时间|金额|余额|币种|摘要|备注|流水号|交易对方'],
    ['Traditional Chinese', '日期|交易日期|交易時間|金額|餘額|幣別|摘要|備註|交易號|對方'],
    ['Russian', 'Дата|Дата операции|Время операции|Сумма|Остаток|Валюта|Назначение платежа|Примечание||Контрагент'],
    ['Japanese', '日付|取引日||金額|残高|通貨|摘要|備考|取引番号|取引先'],
    ['Korean', '날짜|거래일자|거래일시|금액|잔액|통화|적요|비고|거래번호|거래처'],
  ])("names a %s statement's common header words as their English headers would be", async (_language, words) => {
    const romanize = await loadRomanizer();
    const taken = new Set<string>();
    words.split('|').forEach((header, i) => {
      if (header !== '') expect(columnName(header, taken, romanize), header).toBe(ENGLISH[i]);
    });
    // a unit in brackets stays beside the meaning, as `Amount (USD)` gives `amount_usd`
    expect(columnName(`${words.split('|')[3]} (USD)`, taken, romanize)).toBe('amount_usd');
  });

  it('keeps every name unique and within the rules for a name: a second meaning numbered, a leading digit prefixed, nothing romanized named "column"', async () => {
    const long = '交易对方的开户银行名称及支行名称和所在城市以及详细地址信息';
    const header = `Сумма,金额,Сумма (RUB),Счёт,Schet,1С код,★,${long}`;
    const path = sampleFile(`${header}\n1.00,2.00,3.00,A1,B1,K1,x,y\n4.00,5.00,6.00,A2,B2,K2,x,y\n`, 'names.csv');
    const { layout, checked } = await draftRoundTrip(path, 'names.csv');
    expect(checked).toMatchObject({ rows: 2, error: null });
    const names = namesFrom(layout).map(([, name]) => name!);
    expect(names.slice(0, 7)).toEqual(['amount', 'amount_2', 'amount_rub', 'schet', 'schet_2', 'c_1s_kod', 'column']);
    expect(names[7]).toMatch(/^jiao_yi_dui_fang_de_kai_hu_yin_xing/);
    for (const name of names) expect(name).toMatch(IDENTIFIER);
    expect(new Set(names).size).toBe(names.length);
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
