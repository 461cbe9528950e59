import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// Each preset loads the file partners really send: its synthetic sample in fixtures/ (the
// partner's shape, our own rows), or a variant written here, through the built CLI into a real
// PostgreSQL. A renamed resend is skipped; a resend with one row added is rejected whole, naming
// the keys it shares with what was loaded.

const db = sharedFinanceDatabase();
const fixture = (name: string) => readFile(fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url)), 'utf8');

async function presetWorkspace(layout: unknown, pattern: string) {
  const { ws, config } = await Workspace.forLayout(db.url, layout, pattern);
  const run = async () => {
    const r = await ws.run(['--config', config, '--json']);
    return {
      status: r.status,
      doc: JSON.parse(r.stdout) as { files: { name: string; outcome: string; error: string | null }[] } & Record<string, number>,
    };
  };
  return { ws, run };
}

interface PresetCase {
  preset: string;
  table: string;
  pattern: string;
  name: string;
  text: () => Promise<string>;
  rows: number;
  /** rows as the finance database holds them (times shown in UTC), in file order */
  select: string;
  expected: Record<string, unknown>[];
  /** the same file under another name, and with one more row of a new key */
  renamed: string;
  added: { name: string; change: (text: string) => string; keys: RegExp };
}

const utc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS ${column}`;

const CASES: PresetCase[] = [
  {
    preset: 'adyen-payments-accounting',
    table: 'adyen_payments_accounting',
    pattern: 'payments_accounting_report_*.csv',
    name: 'payments_accounting_report_2026_03_14.csv',
    text: () => fixture('payments_accounting_report_2026_03_14.csv'),
    rows: 5,
    select: `SELECT record_type, modification_psp_reference AS modification, ${utc('booking_date')}, main_currency, main_amount::text,
                    exchange_rate::text, settlement_currency, payable_sc::text, payable_batch::text FROM settle.adyen_payments_accounting`,
    expected: [
      // CET is UTC+1 in March before the 29th
      { record_type: 'Received', modification: '', booking_date: '2026-03-14 08:00:01', main_amount: '50.0000', payable_sc: null },
      { record_type: 'Authorised', modification: '' },
      { record_type: 'SentForSettle', modification: '8826140000000101', payable_sc: '49.1200', exchange_rate: '1' },
      { record_type: 'Settled', booking_date: '2026-03-15 01:10:44', payable_batch: '17' },
      {
        record_type: 'Refunded',
        main_currency: 'GBP',
        main_amount: '-17.2800',
        exchange_rate: '1.157407407407407',
        settlement_currency: 'EUR',
      },
    ],
    renamed: 'payments_accounting_report_2026_03_14_resent.csv',
    added: {
      name: 'payments_accounting_report_2026_03_15.csv',
      change: (t) =>
        `${t}TestCompany,TestMerchantEU,8826140000000003,order-7003,visa,visadebit,2026-03-15 12:00:00,CET,Received,,EUR,9.99,EUR,9.99,,,,,,,,,,,,,\n`,
      keys: /^field \(merchant_account, psp_reference, record_type, modification_psp_reference\): 5 value\(s\) already used: line 2: "TestMerchantEU" "8826140000000001" "Received" "" already loaded from payments_accounting_report_2026_03_14\.csv/,
    },
  },
  {
    // a Dashboard download: local times, the zone in the file name, across the change to daylight-saving time on 8 March
    preset: 'stripe-itemized-balance-change',
    table: 'stripe_balance_change',
    pattern: 'Itemized_balance_change_from_activity_*.csv',
    name: 'Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-09_America-Chicago.csv',
    text: () => fixture('Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-09_America-Chicago.csv'),
    rows: 4,
    select: `SELECT balance_transaction_id AS id, ${utc('created_utc')}, ${utc('available_on_utc')}, currency, gross::text, fee::text, net::text,
                    customer_facing_currency FROM settle.stripe_balance_change`,
    expected: [
      // CST (UTC-6) until 2am on 8 March, CDT (UTC-5) after
      {
        id: 'txn_3PcDst0000000001',
        created_utc: '2026-03-08 05:15:00',
        available_on_utc: '2026-03-10 05:00:00',
        currency: 'USD',
        gross: '80.000',
        fee: '2.620',
        net: '77.380',
      },
      { id: 'txn_3PcDst0000000002', created_utc: '2026-03-08 07:59:59', customer_facing_currency: 'EUR' },
      { id: 'txn_3PcDst0000000003', created_utc: '2026-03-08 08:00:00', gross: '-25.000', fee: '0.000', net: '-25.000' },
      { id: 'txn_1PcDst0000000004', created_utc: '2026-03-09 15:00:00', customer_facing_currency: null },
    ],
    renamed: 'Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-09_America-Chicago (1).csv',
    added: {
      name: 'Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-10_America-Chicago.csv',
      change: (t) =>
        `${t}txn_3PcDst0000000005,2026-03-10 08:00:00,2026-03-12 00:00:00,usd,10.00,0.59,9.41,charge,ch_5,Invoice 8805,10.00,usd\n`,
      keys: /^field balance_transaction_id: 4 value\(s\) already used: line 2: "txn_3PcDst0000000001" already loaded from Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-09_America-Chicago\.csv/,
    },
  },
  {
    preset: 'paypal-settlement-report',
    table: 'paypal_settlement_report',
    pattern: 'STL-*.csv',
    name: 'STL-20260314.01.009.csv',
    text: () => fixture('STL-20260314.01.009.csv'),
    rows: 3,
    select: `SELECT transaction_id AS id, gross_amount::text AS gross, gross_currency, fee_amount::text AS fee, ${utc('initiated_at')}
               FROM settle.paypal_settlement_report`,
    expected: [
      { id: '5TY0101AA1234567B', gross: '125.00', gross_currency: 'USD', fee: '-3.93', initiated_at: '2026-03-14 15:02:11' },
      // two places implied whatever the currency: 1000000 yen as PayPal writes it is 10000.00
      { id: '5TY0101AA1234568C', gross: '10000.00', gross_currency: 'JPY', fee: '-360.00', initiated_at: '2026-03-15 06:30:00' },
      { id: '9KL0202BB7654321D', gross: '-25.00', fee: '0.79' },
    ],
    renamed: 'STL-20260314.01.009 (resent).csv',
    added: {
      name: 'STL-20260314.02.009.csv',
      change: (t) =>
        t
          .replace(
            'SB,9KL0202BB7654321D',
            'SB,7ZZ0303CC1112223E,INV-3003,,,T0006,2026/03/14 13:00:00 -0700,2026/03/14 13:00:00 -0700,CR,100,USD,DR,33,USD,,BUYER3,,,\nSB,9KL0202BB7654321D',
          )
          // the section's and the report's USD footers total the added row too, as PayPal writes them
          .replaceAll('F,USD,12500,2500,79,393', 'F,USD,12600,2500,79,426')
          .replace('SC,3', 'SC,4')
          .replace('RC,3', 'RC,4')
          .replace('FF,3', 'FF,4'),
      keys: /^field transaction_id: 3 value\(s\) already used: line 5: "5TY0101AA1234567B" already loaded from STL-20260314\.01\.009\.csv/,
    },
  },
  {
    preset: 'braintree-transaction-level-fees',
    table: 'braintree_transaction_fees',
    pattern: 'transaction_level_fee_report_*.csv',
    name: 'transaction_level_fee_report_2026-03-14.csv',
    text: () => fixture('transaction_level_fee_report_2026-03-14.csv'),
    rows: 3,
    select: `SELECT transaction_id AS id, transaction_type AS type, settlement_amount::text AS settled, to_char(settlement_date, 'YYYY-MM-DD') AS date,
                    exchange_rate::text, discount_rate::text, braintree_total_amount::text AS fees FROM settle.braintree_transaction_fees`,
    expected: [
      {
        id: 'k7x2m9pq',
        type: 'sale',
        settled: '194.37',
        date: '2026-03-13',
        exchange_rate: '0.925571428571',
        discount_rate: '0.0290',
        fees: '8.0700',
      },
      { id: 'r4t8w1zz', settled: '59.90' },
      { id: 'c9v3n6bb', type: 'credit', settled: '46.28', date: '2026-03-14', fees: '-1.3400' },
    ],
    renamed: 'transaction_level_fee_report_2026-03-14_copy.csv',
    added: {
      name: 'transaction_level_fee_report_2026-03-15.csv',
      change: (t) =>
        `${t}examplestore_eur,m2p5s8vv,,sale,EUR,10.00,EUR,,10.00,2026-03-14,2026-03-16,,credit_card,Visa,Credit,0.00,,1,WEB-5004,74123456789012345678904,FRA,0.0290,0.0000,0.49,0.00,0.00,0.00,0.78,0.78\n`,
      keys: /^field transaction_id: 3 value\(s\) already used: line 2: "k7x2m9pq" already loaded from transaction_level_fee_report_2026-03-14\.csv/,
    },
  },
  {
    preset: 'checkout-settlement-breakdown',
    table: 'checkout_settlement_breakdown',
    pattern: 'settlement-breakdown_*.csv',
    name: 'settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_1.csv',
    text: () => fixture('settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_1.csv'),
    rows: 3,
    select: `SELECT type, payment_id, ${utc('processed_on')}, net_in_holding_currency::text AS net, processing_currency, fx_rate_applied::text AS fx
               FROM settle.checkout_settlement_breakdown`,
    expected: [
      { type: 'Capture', payment_id: 'pay_7f3k2q9xw4example', processed_on: '2026-03-13 10:20:30', net: '117.5400', fx: '1' },
      { payment_id: 'pay_8g4l3r0yx5example', processing_currency: 'EUR', fx: '0.864' },
      { type: 'Refund', net: '-30.2000' },
    ],
    renamed: 'settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_2.csv',
    added: {
      name: 'settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_3.csv',
      change: (t) =>
        `${t}ent_exampleshop,Example Shop,pc_exampleshopweb,Capture,pay_9h5m4s1zy6example,ORD-9003,2026-03-13T22:00:00.000,2026-03-14T00:00:00.000,GBP,0000000ABC12,10,-0.3,9.7,-0.2,-0.05,-0.05,0,GBP,10,1,VISA\n`,
      keys: /^field \(payout_id, payment_id, type\): 3 value\(s\) already used: line 2: "0000000ABC12" "pay_7f3k2q9xw4example" "Capture" already loaded from settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_1\.csv/,
    },
  },
];

describe.each(CASES)('the $preset preset', (c) => {
  it('loads exact amounts and times in UTC, skips a renamed resend, and rejects a resend with a row added naming the overlapping keys', async () => {
    const { ws, run } = await presetWorkspace(c.preset, c.pattern);
    await db.client.query(`TRUNCATE settle.${c.table}`);
    const text = await c.text();
    await ws.put(c.name, text);
    const first = await run();
    expect(first.doc.files).toEqual([expect.objectContaining({ name: c.name, outcome: 'loaded' })]);
    expect(first.doc.rows).toBe(c.rows);
    const rows = (await db.client.query(`${c.select} ORDER BY source_line`)).rows;
    expect(rows).toHaveLength(c.expected.length);
    c.expected.forEach((e, i) => expect(rows[i]).toMatchObject(e));

    await ws.put(c.renamed, text);
    await ws.put(c.added.name, c.added.change(text));
    const again = await run();
    expect(again.status).toBe(1);
    const outcome = Object.fromEntries(again.doc.files.map((f) => [f.name, f]));
    expect(outcome[c.renamed]).toMatchObject({ outcome: 'skipped' });
    expect(outcome[c.added.name]).toMatchObject({ outcome: 'rejected', error: expect.stringMatching(c.added.keys) });
    expect(await ws.files('duplicates')).toEqual([c.renamed]);
    expect(await ws.files('rejected')).toEqual([c.added.name]);
    const count = await db.client.query(`SELECT count(*)::int AS n FROM settle.${c.table}`);
    expect(count.rows[0].n).toBe(c.rows);
  });
});

describe('the adyen-settlement-details preset on the variants partners send', () => {
  it('loads a selection without the net columns and with others, rates as written, ".11", an empty modification reference, and counts every line without a Psp Reference', async () => {
    const { ws, run } = await presetWorkspace('adyen-settlement-details', 'settlement_detail_report_batch_*.csv');
    const header =
      'Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Batch Number,Acquirer,Booking Date';
    const text = [
      header,
      'TestCompany,TestMerchantJP,4111000000000001,order-1,jcb,2026-03-10 11:44:20,PDT,Settled,4111000000000101,JPY,,3158,0.006733333333333,,0,0.1,0.04,jcbcredit,55,ExampleAcquirer,2026-03-12',
      'TestCompany,TestMerchantJP,4111000000000002,order-2,visa,2026-03-10 21:37:50,PDT,settled,"",USD,,5.35,1.000000000000000,,.11,,,visadebit,55,ExampleAcquirer,2026-03-12',
      'TestCompany,TestMerchantJP,,,,2026-03-11 00:24:23,PDT,Balancetransfer,Balancetransfer,,,,,,,,,,55,,2026-03-12',
      'TestCompany,TestMerchantJP,,,,2026-03-12 15:17:00,PDT,MerchantPayout,"TX0000000001XT batch 55, TestMerchantJP",,,,,,,,,,55,,2026-03-12',
    ].join('\n');
    await ws.put('settlement_detail_report_batch_55.csv', `${text}\n`);
    const r = await run();
    expect(r.doc.files[0]).toMatchObject({ outcome: 'loaded' });
    expect(r.doc.rows).toBe(2);
    expect(ws.events().find((e) => e.event === 'loaded')!.details).toMatchObject({ rows: 2, skippedRows: 2 });
    const rows = await db.client.query(
      `SELECT psp_reference, type, modification_reference, ${utc('creation_date')}, gross_credit::text, exchange_rate::text, markup::text, net_currency, net_credit
         FROM settle.adyen_settlement_details WHERE merchant_account = 'TestMerchantJP' ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      {
        psp_reference: '4111000000000001',
        type: 'Settled',
        modification_reference: '4111000000000101',
        creation_date: '2026-03-10 18:44:20',
        gross_credit: '3158.0000',
        exchange_rate: '0.006733333333333',
        markup: '0.0000',
        net_currency: null,
        net_credit: null,
      },
      {
        psp_reference: '4111000000000002',
        type: 'settled',
        modification_reference: '',
        creation_date: '2026-03-11 04:37:50',
        gross_credit: '5.3500',
        exchange_rate: '1.000000000000000',
        markup: '0.1100',
        net_currency: null,
        net_credit: null,
      },
    ]);
  });
});
