import { describe, expect, it } from 'vitest';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// Amounts as partners' own exports write them (synthetic files in the shapes of a Venmo
// statement, a Swiss bank's, a German bank's and a gateway's report in minor units), loaded by
// the real CLI into the real PostgreSQL: every value exact, a bad one refusing its file whole.

const db = sharedFinanceDatabase();

interface RunDocument {
  files: { name: string; outcome: string; error?: string }[];
}

/** A workspace for one partner whose config is this layout, migrated; `run` returns the run's JSON. */
async function partner(layout: Record<string, unknown>, pattern: string) {
  const { ws, config } = await Workspace.forLayout(db.url, layout, pattern);
  const run = async () => {
    const r = await ws.run(['--config', config, '--json']);
    return { status: r.status, doc: JSON.parse(r.stdout) as RunDocument };
  };
  /** Delivers a file of these lines and runs: it loads. */
  const load = async (name: string, lines: string[]) => {
    await ws.put(name, `${lines.join('\n')}\n`);
    const r = await run();
    expect(r.doc.files.map((f) => [f.name, f.outcome])).toEqual([[name, 'loaded']]);
    expect(r.status).toBe(0);
  };
  return { ws, run, load };
}

const rowsOf = async (table: string, columns: string) =>
  (await db.client.query(`SELECT ${columns} FROM settle.${table} ORDER BY source_line`)).rows as Record<string, unknown>[];

describe('amounts written with currency symbols and group marks', () => {
  it('loads a statement whose amounts carry "$" and a spaced sign, each value exact', async () => {
    const { ws, load } = await partner(
      {
        table: 'amounts_dollars',
        groupSeparator: ',',
        columns: [
          { name: 'id', from: 'ID', type: 'text' },
          { name: 'total', from: 'Amount (total)', type: 'decimal', currencySymbols: ['$'] },
          { name: 'fee', from: 'Amount (fee)', type: 'decimal', currencySymbols: ['$'], required: false },
        ],
        naturalKey: 'id',
      },
      'statement_*.csv',
    );
    await load('statement_2017.csv', [
      '" ID","Amount (total)","Amount (fee)"',
      '"4000000000000000001","- $220.00",""',
      '"4000000000000000002","+ $1,350.00","- $0.10"',
      '"4000000000000000003","-$5","$-0.01"',
      '"4000000000000000004","+ $9,999,999,999,999,999.99","$0.00"',
      '"4000000000000000005","$12,345.67\u00a0",""',
    ]);
    expect(await rowsOf('amounts_dollars', 'id, total::text, fee::text')).toEqual([
      { id: '4000000000000000001', total: '-220.00', fee: null },
      { id: '4000000000000000002', total: '1350.00', fee: '-0.10' },
      { id: '4000000000000000003', total: '-5.00', fee: '-0.01' },
      // sixteen integer digits and both places: never rounded through a float
      { id: '4000000000000000004', total: '9999999999999999.99', fee: '0.00' },
      { id: '4000000000000000005', total: '12345.67', fee: null },
    ]);
    expect(await ws.files('archive')).toEqual(['statement_2017.csv']);
  });

  it('loads a Swiss statement grouped by apostrophes and a German one with "€" after the amount and no-break spaces', async () => {
    const swiss = await partner(
      {
        table: 'amounts_swiss',
        delimiter: ';',
        groupSeparator: "'",
        columns: [
          { name: 'ref', from: 'Transaction', type: 'text' },
          { name: 'currency', from: 'Monn.', type: 'currency' },
          { name: 'debit', from: 'Debit', type: 'decimal', required: false },
          { name: 'balance', from: 'Solde', type: 'decimal' },
        ],
        naturalKey: 'ref',
      },
      'ubs_*.csv',
    );
    await swiss.load('ubs_2019.csv', [
      'Transaction;Monn.;Debit;Solde',
      "R1;CHF;10.00;11'373.94",
      'R2;CHF;;11\u2019613.94',
      "R3;CHF;1'200.00;-1'234'567.05",
    ]);
    expect(await rowsOf('amounts_swiss', 'ref, debit::text, balance::text')).toEqual([
      { ref: 'R1', debit: '10.00', balance: '11373.94' },
      { ref: 'R2', debit: null, balance: '11613.94' },
      { ref: 'R3', debit: '1200.00', balance: '-1234567.05' },
    ]);

    const german = await partner(
      {
        table: 'amounts_euros',
        decimalMark: ',',
        groupSeparator: ' ',
        columns: [
          { name: 'ref', from: 'Referenz', type: 'text' },
          { name: 'amount', from: 'Betrag', type: 'decimal', currencySymbols: ['€', 'EUR'] },
        ],
        naturalKey: 'ref',
      },
      'konto_*.csv',
    );
    await german.load('konto_2025.csv', [
      'Referenz,Betrag',
      'A1,"-123,45 €"',
      'A2,"1\u00a0234,56\u00a0€"',
      'A3,"-12\u202f345\u202f678,90 EUR"',
      'A4,"€ 0,05"',
      'A5,"\u00a07 000,00\u00a0"',
    ]);
    expect(await rowsOf('amounts_euros', 'ref, amount::text')).toEqual([
      { ref: 'A1', amount: '-123.45' },
      { ref: 'A2', amount: '1234.56' },
      { ref: 'A3', amount: '-12345678.90' },
      { ref: 'A4', amount: '0.05' },
      { ref: 'A5', amount: '7000.00' },
    ]);
  });

  it('rejects a file with a symbol the column does not list, naming the line, the field and the key, loading nothing', async () => {
    const { ws, run } = await partner(
      {
        table: 'amounts_refused',
        columns: [
          { name: 'id', type: 'text' },
          { name: 'amount', type: 'decimal', currencySymbols: ['€'] },
        ],
        naturalKey: 'id',
      },
      'refused_*.csv',
    );
    await ws.put('refused_1.csv', 'id,amount\nX1,€5.00\nX2,£5.00\n');
    const r = await run();
    expect(r.status).toBe(1);
    expect(r.doc.files).toEqual([
      expect.objectContaining({
        name: 'refused_1.csv',
        outcome: 'rejected',
        error: 'line 3, field amount: "£5.00" has the currency symbol "£": add it to the column\'s "currencySymbols" (["€"])',
      }),
    ]);
    expect(await rowsOf('amounts_refused', 'id')).toEqual([]);
    expect(await ws.files('rejected')).toEqual(['refused_1.csv']);
  });
});

describe("amounts in each row's own currency's minor unit", () => {
  const layout = {
    table: 'amounts_minor',
    columns: [
      { name: 'id', type: 'text' },
      { name: 'amount', type: 'decimal', minorUnits: 'currency' },
      { name: 'refunded', type: 'decimal', minorUnits: 'currency', currencyFrom: 'currency', required: false },
      { name: 'currency', type: 'currency' },
    ],
    naturalKey: 'id',
  };

  it('loads JPY, USD, KWD, BHD and CLF amounts by their ISO 4217 exponents, exactly', async () => {
    const { ws, run, load } = await partner(layout, 'gateway_*.csv');
    await load('gateway_2024_09_13.csv', [
      'id,amount,refunded,currency',
      'p1,5000,0,JPY',
      'p2,1000,250,USD',
      'p3,1500,,KWD',
      'p4,-2,,BHD',
      'p5,12345,,CLF',
      'p6,100,,HUF',
      'p7,3500,-3500,usd',
    ]);
    expect(await rowsOf('amounts_minor', 'id, amount::text, refunded::text, currency')).toEqual([
      { id: 'p1', amount: '5000.0000', refunded: '0.0000', currency: 'JPY' },
      { id: 'p2', amount: '10.0000', refunded: '2.5000', currency: 'USD' },
      { id: 'p3', amount: '1.5000', refunded: null, currency: 'KWD' },
      { id: 'p4', amount: '-0.0020', refunded: null, currency: 'BHD' },
      { id: 'p5', amount: '1.2345', refunded: null, currency: 'CLF' },
      // ISO 4217 gives the forint 2 places (CLDR 0)
      { id: 'p6', amount: '1.0000', refunded: null, currency: 'HUF' },
      { id: 'p7', amount: '35.0000', refunded: '-35.0000', currency: 'USD' },
    ]);
    const exact = await db.client.query(
      `SELECT count(*)::int AS n FROM settle.amounts_minor WHERE amount IN (5000, 10.00, 1.5, -0.002, 1.2345, 1, 35)`,
    );
    expect(exact.rows[0].n).toBe(7);

    // an unknown code, and an amount with a decimal mark: each refuses its file whole
    await ws.put('gateway_2024_09_14.csv', 'id,amount,refunded,currency\nq1,100,,EUR\nq2,5000,,ABC\n');
    await ws.put('gateway_2024_09_15.csv', 'id,amount,refunded,currency\nq3,10.00,,USD\n');
    const bad = await run();
    expect(bad.status).toBe(1);
    expect(bad.doc.files.map((f) => [f.name, f.outcome, f.error])).toEqual([
      [
        'gateway_2024_09_14.csv',
        'rejected',
        'line 3, field amount: "5000" is in minor units of its row\'s currency, and currency is "ABC", not an ISO 4217 currency code',
      ],
      [
        'gateway_2024_09_15.csv',
        'rejected',
        'line 2, field amount: "10.00" is not a whole number of minor units (USD: 2 places implied, like 10400 for 104.00)',
      ],
    ]);
    expect((await rowsOf('amounts_minor', 'id')).map((row) => row.id)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7']);
  });
});

describe('amount notations of bank statements, each declared', () => {
  it('loads brackets, Dr/Cr marks, a lone dash for no amount and a code inside the amount (RUR read as RUB), each value exact', async () => {
    const { ws, load } = await partner(
      {
        table: 'amounts_notations',
        groupSeparator: ',',
        currencyAliases: { RUR: 'RUB' },
        columns: [
          { name: 'ref', from: 'Ref', type: 'text' },
          { name: 'debit', from: 'Debit', type: 'decimal', required: false, noAmount: ['-'], notation: ['brackets'] },
          { name: 'credit', from: 'Credit', type: 'decimal', required: false, noAmount: ['-'], notation: ['plus'] },
          { name: 'balance', from: 'Balance', type: 'decimal', notation: ['debitCredit'] },
          { name: 'amount', from: 'Amount', type: 'decimal' },
          { name: 'currency', from: 'Amount', type: 'currency', inAmount: 'amount' },
        ],
        naturalKey: 'ref',
      },
      'statement_*.csv',
    );
    await load('statement_0301.csv', [
      'Ref,Debit,Credit,Balance,Amount',
      'S1,"(1,300.00)",-,1200.00Cr,JPY 1000',
      'S2,-,"+10,000.00",0.80Dr,-12.50 eur',
      'S3,(0.01),-,15.00 CR,10.00 RUR',
    ]);
    expect(await rowsOf('amounts_notations', 'ref, debit::text, credit::text, balance::text, amount::text, currency')).toEqual([
      { ref: 'S1', debit: '-1300.00', credit: null, balance: '1200.00', amount: '1000.00', currency: 'JPY' },
      { ref: 'S2', debit: null, credit: '10000.00', balance: '-0.80', amount: '-12.50', currency: 'EUR' },
      { ref: 'S3', debit: '-0.01', credit: null, balance: '15.00', amount: '10.00', currency: 'RUB' },
    ]);
    expect(await ws.files('archive')).toEqual(['statement_0301.csv']);
  });

  it('rejects a file whose amount has two signs, naming the line and the field, and loads none of it', async () => {
    const { ws, run } = await partner(
      {
        table: 'amounts_two_signs',
        columns: [
          { name: 'ref', from: 'Ref', type: 'text' },
          { name: 'amount', from: 'Amount', type: 'decimal', notation: ['brackets'] },
        ],
        naturalKey: 'ref',
      },
      'signs_*.csv',
    );
    await ws.put('signs_1.csv', 'Ref,Amount\nS1,(5.00)\nS2,(-5.00)\n');
    const r = await run();
    expect(r.status).toBe(1);
    expect(r.doc.files).toEqual([expect.objectContaining({ name: 'signs_1.csv', outcome: 'rejected' })]);
    expect(r.doc.files[0]!.error).toMatch(/line 3, field amount: "\(-5\.00\)" is not a decimal amount/);
    expect(await rowsOf('amounts_two_signs', 'ref')).toEqual([]);
    expect(await ws.files('rejected')).toEqual(['signs_1.csv']);
  });
});
