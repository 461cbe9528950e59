import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import type { Layout } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { PRESETS } from '../../src/layout/model/presets.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { SAMPLE_ROWS } from '../../src/layout/suggest/layoutFit.js';
import { suggestLayout } from '../../src/layout/suggest/suggestLayout.js';
import { MissingTotalError } from '../../src/layout/reader/totalsCheck.js';
import { endsWithTrailer, missingTotalRecord } from '../../src/layout/reader/trailer.js';

function file(content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-totals-')), 'settle_x.csv');
  writeFileSync(path, content);
  return path;
}

const layout = (raw: unknown) => parseLayout(raw, 'test');

async function check(content: string, using: Layout) {
  return findBadRows(file(content), using);
}

// ---- Adyen settlement details, synthetic: two payments, a fee line and the batch's payout line

const ADYEN_HEADER =
  'Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Batch Number';
const adyenPayment = (psp: string, gross: string, net: string, batch = '77') =>
  `Acme,AcmeShop,${psp},ref-${psp},visa,2026-03-14 10:00:00,CET,Settled,mod-${psp},EUR,,${gross},1,EUR,,${net},,0.10,0.05,0.05,visacredit,${batch}`;
const adyenLine = (type: string, debit: string, batch = '77') =>
  `Acme,AcmeShop,,,,2026-03-15 01:00:00,CET,${type},${type} of batch ${batch},,,,,EUR,${debit},,,,,,,${batch}`;

const adyenFile = (net2: string) =>
  [
    ADYEN_HEADER,
    adyenPayment('P1', '10.00', '9.80'),
    adyenPayment('P2', '20.00', net2),
    adyenLine('Fee', '1.30'),
    adyenLine('MerchantPayout', '28.10'),
  ].join('\n') + '\n';

describe('Adyen settlement details: each batch with its MerchantPayout nets to zero', () => {
  const adyen = PRESETS.get('adyen-settlement-details')!;

  it('loads a batch that balances and says so', async () => {
    const result = await check(adyenFile('19.60'), adyen);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(2);
    expect(result.totals).toEqual([
      { total: 'balance', group: 'batch_number 77, net_currency EUR', rows: 4, agrees: 'nets to 0.00 with its MerchantPayout' },
    ]);
  });

  it('rejects a batch one cent off, naming the batch and both figures', async () => {
    const result = await check(adyenFile('19.61'), adyen);
    expect(result.error?.message).toBe('batch_number 77, net_currency EUR: nets to 0.01 with its MerchantPayout, not 0.00 (4 rows)');
  });

  it('leaves a batch without its payout line unchecked (a report cut to a selection)', async () => {
    const text = [ADYEN_HEADER, adyenPayment('P1', '10.00', '9.80'), adyenLine('Fee', '1.30')].join('\n') + '\n';
    const result = await check(text, adyen);
    expect(result.error).toBeNull();
    expect(result.totals).toEqual([]);
  });
});

// ---- PayPal STL, synthetic: a section of three SB rows in two currencies, its SF footers, RF, counts

const STL_COLUMNS =
  'Transaction ID,Invoice ID,PayPal Reference ID,PayPal Reference ID Type,Transaction Event Code,Transaction Initiation Date,Transaction Completion Date,Transaction Debit or Credit,Gross Transaction Amount,Gross Transaction Currency,Fee Debit or Credit,Fee Amount,Fee Currency';
const sb = (id: string, mark: string, gross: string, currency: string, fee: string) =>
  `SB,${id},,,,T0006,2026/03/14 08:00:00 -0700,2026/03/14 08:00:00 -0700,${mark},${gross},${currency},${fee ? 'DR' : ''},${fee},${fee ? currency : ''}`;
const footer = (type: string, currency: string, credit: string, debit: string, feeDebit: string) =>
  `${type},${currency},${credit},${debit},0,${feeDebit},CR,0,CR,0`;
const stl = (usdCredit: string) =>
  [
    'RH,2026/03/15 02:00:00 -0700,A,ACCT1,011',
    'FH,01',
    'SH,2026/03/14 00:00:00 -0700,2026/03/14 23:59:59 -0700,ACCT1',
    `CH,${STL_COLUMNS}`,
    sb('T1', 'CR', '1500', 'USD', '75'),
    sb('T2', 'DR', '300', 'USD', ''),
    sb('T3', 'CR', '10000', 'JPY', '500'),
    footer('SF', 'USD', usdCredit, '300', '75'),
    footer('SF', 'JPY', '10000', '0', '500'),
    'SC,3',
    footer('RF', 'USD', usdCredit, '300', '75'),
    footer('RF', 'JPY', '10000', '0', '500'),
    'RC,3',
    'FF,3',
  ].join('\n') + '\n';

describe('PayPal STL: SF and RF state each currency’s gross and fee credits and debits', () => {
  const paypal = PRESETS.get('paypal-settlement-report')!;

  it('loads a report whose footers agree', async () => {
    const result = await check(stl('1500'), paypal);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(3);
    expect(result.totals?.map((t) => `${t.total} ${t.group} ${t.rows}`)).toEqual([
      'SF gross_currency USD 2',
      'SF gross_currency JPY 1',
      'RF gross_currency USD 2',
      'RF gross_currency JPY 1',
    ]);
  });

  it('rejects a report whose USD gross credits are one minor unit off, naming the section footer and both figures', async () => {
    const result = await check(stl('1501'), paypal);
    expect(result.error?.message).toBe(
      '2 totals disagree: line 8, SF gross_currency USD: says the credits of gross_amount total 1501, the rows add up to 1500; ' +
        'line 11, RF gross_currency USD: says the credits of gross_amount total 1501, the rows add up to 1500',
    );
  });
});

// ---- PayPal TRR, synthetic in its shape: counts in every footer, every record padded to the CH width

const TRR_CH =
  'CH,Transaction ID,Invoice ID,PayPal Reference ID,PayPal Reference ID Type,Transaction Event Code,Transaction Initiation Date,Transaction Completion Date,Transaction Debit or Credit,Gross Transaction Amount,Gross Transaction Currency,Fee Debit or Credit,Fee Amount,Fee Currency,Transactional Status,Custom Field';
const trrPad = (record: string) => record + ','.repeat(16 - record.split(',').length);
const trrBody = (id: string, status: string, gross: string) =>
  `SB,${id},,,,T0006,2026/03/14 08:02:11 -0700,2026/03/14 08:02:11 -0700,CR,${gross},USD,DR,45,USD,${status},order ${id}`;
const trr = (sectionCount: string, ending = true) =>
  [
    trrPad('RH,2026/03/15 02:05:37 -0700,A,ACCT42,008'),
    trrPad('FH,01'),
    trrPad('SH,2026/03/14 00:00:00 -0700,2026/03/14 23:59:59 -0700,ACCT42'),
    TRR_CH,
    trrBody('7AB01', 'S', '1500'),
    trrBody('7AB02', 'P', '2500'),
    trrBody('7AB02', 'S', '2500'),
    trrPad(`SF,${sectionCount}`),
    trrPad(`SC,${sectionCount}`),
    trrPad('RF,3'),
    trrPad('RC,3'),
    ...(ending ? [trrPad('FF,3')] : []),
  ].join('\n') + '\n';

describe('PayPal TRR: its footers count the body records', () => {
  const preset = PRESETS.get('paypal-transaction-detail-report')!;
  it('loads a report whose section, report and file counts agree; a status change is a row of its own', async () => {
    const result = await check(trr('3'), preset);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(3);
  });

  it('rejects a report whose section footer counts one record more than it holds', async () => {
    expect((await check(trr('4'), preset)).error?.message).toMatch(
      /^2 bad rows: line 8, SF: says 4 data records, the file has 3 before it; line 9, SC: says 4/,
    );
  });

  it('a report without its FF footer may still be uploading: not ready, not rejected', async () => {
    expect(await endsWithTrailer(file(trr('3', false)), preset)).toBe(false);
    expect(await endsWithTrailer(file(trr('3')), preset)).toBe(true);
  });
});

// ---- a summary record at the top (dLocal's HEADER shape): count and sums, rounded as written

const dlocalLayout = layout({
  leadingRecords: 2,
  columns: [
    { name: 'row_type', from: 'ROW_TYPE', type: 'text' },
    { name: 'transaction_id', from: 'TRANSACTION_ID', type: 'text' },
    { name: 'gross_amount', from: 'GROSS_AMOUNT', type: 'decimal', scale: 6 },
    { name: 'fee_amount', from: 'FEE_AMOUNT', type: 'decimal', scale: 6 },
  ],
  naturalKey: 'transaction_id',
  totals: [
    {
      record: 'HEADER',
      at: 'top',
      count: 3,
      rounding: 'stated',
      sums: [
        { field: 4, of: 'gross_amount' },
        { field: 5, of: 'fee_amount' },
      ],
    },
  ],
});
const dlocal = (count: string, gross: string) =>
  [
    'ROW_TYPE,SETTLEMENT_CURRENCY,NUMBER_OF_ITEMS,GROSS_TOTAL_AMOUNT,FEE_TOTAL_AMOUNT',
    `HEADER,USD,${count},${gross},-0.30`,
    'ROW_TYPE,TRANSACTION_ID,GROSS_AMOUNT,FEE_AMOUNT',
    'CAPTURE,X1,10.004,-0.104',
    'CAPTURE,X2,5.000001,-0.2',
  ].join('\n') + '\n';

describe('a leading summary record (dLocal HEADER): its count and sums against the rows', () => {
  it('agrees when the rows, rounded to the cents it writes, make its figures', async () => {
    const result = await check(dlocal('2', '15.00'), dlocalLayout);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(2);
    expect(result.skippedRows).toBe(1); // the summary's own column line: counted, not loaded
  });

  it('rejects a summary one cent off, and one whose count is wrong', async () => {
    expect((await check(dlocal('2', '15.01'), dlocalLayout)).error?.message).toBe(
      'line 2, HEADER: says the gross_amount total 15.01, the rows add up to 15.00',
    );
    expect((await check(dlocal('3', '15.00'), dlocalLayout)).error?.message).toBe('line 2, HEADER: says 3 rows, the file has 2');
  });

  it('skips leading records that no total reads (counted, not loaded)', async () => {
    const plain = layout({ ...toRaw(dlocalLayout), totals: undefined });
    const result = await check(dlocal('2', '15.00'), plain);
    expect(result.error).toBeNull();
    expect(result.skippedRows).toBe(2);
  });
});

// ---- the dLocal preset, synthetic in its shape: the summary's header and HEADER, the rows' header, items

const DLOCAL_SUMMARY_HEADER =
  'ROW_TYPE,SETTLEMENT_CURRENCY,NUMBER_OF_ITEMS,GROSS_TOTAL_AMOUNT,FEE_TOTAL_AMOUNT,NET_TOTAL_AMOUNT,TRANSFER_DATE,TRANSFER_ID';
const DLOCAL_ROWS_HEADER =
  'ROW_TYPE,MID,LOGIN,COUNTRY,CREATION_DATE,APPROVED_DATE,TRANSACTION_ID,DLOCAL_TRANSACTION_ID,LOCAL_AMOUNT,LOCAL_CURRENCY,FX_RATE,GROSS_AMOUNT,FEE_AMOUNT,NET_AMOUNT,PAYMENT_TYPE,PAYMENT_METHOD_CODE,CARD_BIN,CARD_TYPE,INSTALLMENTS,STATUS,STATUS_CODE,STATUS_DETAILS,USER_DOCUMENT,USER_EMAIL,DESCRIPTION';
const dlocalItem = (type: string, id: string, gross: string, fee: string, net: string) =>
  `${type},77,Lg9,Chile,2026-03-12 10:00:00,2026-03-12 10:00:02,ord-${id},T-77-${id},1000,CLP,950.5,${gross},${fee},${net},CARD,VI,400000,CREDIT,1,PAID,200,paid,,,`;
const dlocalPreset = (header: string, net2 = '1.033250') =>
  [
    DLOCAL_SUMMARY_HEADER,
    header,
    DLOCAL_ROWS_HEADER,
    dlocalItem('PAYMENT', 'a1', '1.052077', '-0.031562', '1.020515'),
    dlocalItem('PAYMENT', 'a2', '1.065200', '-0.031950', net2),
    'SETTLEMENT_FEE,77,,,,,,900001,0,,0,0,-0.5,-0.5,,,,,,,,,,,',
  ].join('\n') + '\n';

describe('the dlocal-settlement-report preset: its HEADER against the rows', () => {
  const preset = PRESETS.get('dlocal-settlement-report')!;
  it('loads a report whose HEADER agrees in cents, and says so', async () => {
    const result = await check(dlocalPreset('HEADER,USD,3,2.12,-0.56,1.55,2026-03-13,900001'), preset);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(3);
    expect(result.totals).toEqual([{ total: 'HEADER', group: '', rows: 3, agrees: expect.stringMatching(/count/) }]);
  });

  it('rejects a report whose net is a cent short of its HEADER, and one whose HEADER counts an item more', async () => {
    expect((await check(dlocalPreset('HEADER,USD,3,2.12,-0.56,1.55,2026-03-13,900001', '1.023250'), preset)).error?.message).toBe(
      'line 2, HEADER: says the net_amount total 1.55, the rows add up to 1.54',
    );
    expect((await check(dlocalPreset('HEADER,USD,4,2.12,-0.56,1.55,2026-03-13,900001'), preset)).error?.message).toBe(
      'line 2, HEADER: says 4 rows, the file has 3',
    );
  });
});

function toRaw(l: Layout): Record<string, unknown> {
  return {
    leadingRecords: l.leadingRecords,
    columns: l.columns.map((c) => ({ name: c.name, from: c.from, type: c.type, ...(c.scale !== undefined ? { scale: c.scale } : {}) })),
    naturalKey: l.naturalKey,
  };
}

describe('the totals language: mistakes name the key', () => {
  const base = {
    columns: [
      { name: 'transaction_id', type: 'text' },
      { name: 'amount', type: 'decimal' },
    ],
  };
  const refused = (totals: unknown, more: Record<string, unknown> = {}) => {
    try {
      layout({ ...base, ...more, totals });
    } catch (err) {
      if (err instanceof UsageError) return err.message;
      throw err;
    }
    throw new Error('expected a layout error');
  };

  it('says which entry and key is wrong', () => {
    expect(refused([])).toMatch(/"totals" must be a non-empty list/);
    expect(refused([{ rule: 'netZero', groupBy: 'transaction_id', sum: ['amount'] }])).toMatch(/totals 1: "rule" must be "balance"/);
    expect(refused([{ rule: 'balance', groupBy: 'nope', sum: ['amount'] }])).toMatch(
      /totals 1: "groupBy" must name one of the layout's columns/,
    );
    expect(refused([{ rule: 'balance', groupBy: 'amount', sum: ['transaction_id'] }])).toMatch(
      /"sum" must name one of the layout's decimal columns/,
    );
    expect(refused([{ record: 'T', sums: [{ field: 1, of: 'amount' }] }])).toMatch(/sums 1: "field" must be a field position, 2 or more/);
    expect(refused([{ record: 'T', at: 'top', count: 2 }])).toMatch(/"at": "top" needs "leadingRecords"/);
    expect(refused([{ record: 'T' }])).toMatch(/totals 1: give "count", "sums" or both/);
    expect(refused([{ record: 'T', count: 2, colour: 1 }])).toMatch(/totals 1: key "colour" is unknown/);
    expect(refused([{ record: 'T', count: 2 }], { leadingRecords: -1 })).toMatch(/"leadingRecords" must be a whole number/);
  });

  it('a preset extended keeps its totals, and may drop them', () => {
    expect(layout({ extends: 'adyen-settlement-details', table: 'adyen_other' }).totals).toEqual(
      PRESETS.get('adyen-settlement-details')!.totals,
    );
  });
});

describe('a footer per group in a plain file', () => {
  const footers = layout({
    columns: [
      { name: 'transaction_id', type: 'text' },
      { name: 'account', type: 'text' },
      { name: 'amount', type: 'decimal' },
    ],
    totals: [
      { record: 'Subtotal', groupBy: { column: 'account', field: 2 }, count: 3, sums: [{ field: 4, of: 'amount' }], everyGroup: true },
    ],
  });
  const text = (b: string) =>
    [
      'transaction_id,account,amount',
      'T1,A,1.10',
      'T2,B,2.00',
      'T3,A,-0.10',
      'Subtotal,A,2,1.00',
      `Subtotal,B,1,${b}`,
      'T4,A,5.00',
      'Subtotal,A,1,5.00',
    ].join('\n') + '\n';

  it('checks each section’s groups since the footers before it', async () => {
    const result = await check(text('2.00'), footers);
    expect(result.error).toBeNull();
    expect(result.rows).toBe(4);
    expect(result.totals?.map((t) => `${t.group}:${t.rows}`)).toEqual(['account A:2', 'account B:1', 'account A:1']);
  });

  it('names the group whose footer is a cent off', async () => {
    expect((await check(text('2.01'), footers)).error?.message).toBe(
      'line 6, Subtotal account B: says the amount total 2.01, the rows add up to 2.00',
    );
  });

  it('a file that ends with rows after its last footer is incomplete (not ready), not disagreeing', async () => {
    const cut = text('2.00').split('\n').slice(0, 7).join('\n') + '\n';
    const result = await check(cut, footers);
    expect(result.error).toBeInstanceOf(MissingTotalError);
    expect(result.error?.message).toBe('the file ends at line 7 with rows after its last Subtotal total record: it is incomplete');
  });

  it('with everyGroup, a group with rows and no footer is a reject', async () => {
    const missing = ['transaction_id,account,amount', 'T1,A,1.10', 'T2,B,2.00', 'Subtotal,A,1,1.10'].join('\n') + '\n';
    expect((await check(missing, footers)).error?.message).toBe('line 4, Subtotal: no total for account B (1 rows)');
  });
});

describe('a total record the file should carry and does not yet (looked for before the claim)', () => {
  it('a leading summary record missing, or a footer not yet at the end, is named; a whole file has none missing', async () => {
    expect(await missingTotalRecord(file(dlocal('2', '15.00')), dlocalLayout)).toBeUndefined();
    expect(await missingTotalRecord(file('ROW_TYPE,SETTLEMENT_CURRENCY\n'), dlocalLayout)).toBe(
      'its "HEADER" summary record above the header',
    );
    const footers = layout({
      columns: [
        { name: 'transaction_id', type: 'text' },
        { name: 'amount', type: 'decimal' },
      ],
      totals: [{ record: 'Total', count: 2 }],
    });
    expect(await missingTotalRecord(file('transaction_id,amount\nT1,1.00\nTotal,1\n'), footers)).toBeUndefined();
    expect(await missingTotalRecord(file('transaction_id,amount\nT1,1.00\n'), footers)).toBe('a "Total" total record at its end');
  });
});

describe('layout suggest names the totals of the preset it suggests', () => {
  it('says a batch balances, or names the preset as the closest and its totals as the reason', async () => {
    const good = await suggestLayout(file(adyenFile('19.60')), 'settlement_detail_report_batch_77.csv');
    expect(good.preset).toBe('adyen-settlement-details');
    expect(good.why).toMatch(/; its totals: batch_number 77, net_currency EUR balances$/);
    const off = await suggestLayout(file(adyenFile('19.61')), 'settlement_detail_report_batch_77.csv');
    // a file this short is read whole by the sample: the preset is the closest, and the reason is its totals
    expect(off.preset).toBeNull();
    expect(off.why).toMatch(
      /^no preset fits \(closest: adyen-settlement-details, batch_number 77, net_currency EUR: nets to 0\.01 with its MerchantPayout/,
    );

    // past the sample, the whole file is checked for the preset's totals
    const many = Array.from({ length: SAMPLE_ROWS + 5 }, (_, i) => adyenPayment(`Q${i}`, '1.00', '1.00'));
    const long = [ADYEN_HEADER, ...many, adyenLine('MerchantPayout', `${SAMPLE_ROWS + 4}.99`)].join('\n') + '\n';
    const big = await suggestLayout(file(long), 'settlement_detail_report_batch_77.csv');
    expect(big.preset).toBe('adyen-settlement-details');
    expect(big.why).toMatch(
      /; but the whole file does not check: batch_number 77, net_currency EUR: nets to 0\.01 with its MerchantPayout, not 0\.00/,
    );
  });
});
