import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/intake/names.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { suggestLayout } from '../../src/layout/suggest/suggestLayout.js';
import { draftRoundTrip, draftTypes } from '../support/draftRoundTrip.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));

function file(text: string, name: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-suggest-')), name);
  writeFileSync(path, text);
  return path;
}

describe('layout suggest', () => {
  it.each([
    ['settle_20260314_a01.csv', 'default'],
    ['settlement_detail_report_batch_42.csv', 'adyen-settlement-details'],
    ['payments_accounting_report_2026_03_14.csv', 'adyen-payments-accounting'],
    ['stripe_payout_reconciliation_2026-03-16.csv', 'stripe-itemized-payout-reconciliation'],
    ['Itemized_balance_change_from_activity_USD_2026-03-07_to_2026-03-09_America-Chicago.csv', 'stripe-itemized-balance-change'],
    ['STL-20260314.01.009.csv', 'paypal-settlement-report'],
    ['transaction_level_fee_report_2026-03-14.csv', 'braintree-transaction-level-fees'],
    ['settlement-breakdown_ent_exampleshop_20260314_0000000ABC12_1.csv', 'checkout-settlement-breakdown'],
  ])('names the preset that reads %s: %s', async (name, preset) => {
    const s = await suggestLayout(fixture(name), name);
    expect(s.preset).toBe(preset);
    expect(s.why).toMatch(/^the header names \d+ of its \d+ columns \(all it requires\), and the first \d+ rows check/);
    expect(s.config).toEqual({ layout: preset });
  });

  it('extends a Stripe preset with a zone when the file is local time and its name carries none', async () => {
    const path = file(
      'balance_transaction_id,created,currency,gross,fee,net,reporting_category\ntxn_1,2026-03-08 01:59:59,usd,10.00,0.59,9.41,charge\n',
      'payments_activity.csv',
    );
    const s = await suggestLayout(path, 'payments_activity.csv');
    expect(s.preset).toBeNull();
    expect(s.config).toEqual({ layout: { extends: 'stripe-itemized-balance-change', timeZone: 'UTC' } });
    expect((await findBadRows(path, parseLayout(s.config.layout, 'draft'), { fileName: 'payments_activity.csv' })).error).toBeNull();
  });

  it("drafts a layout for a file no preset reads (a bank's export: preamble, dd/MM/yy, quoted decimal commas, a balance line) that check accepts", async () => {
    const text = [
      'Bank : 99,Branch : 1,Period : March,,',
      ',,,,',
      'Value date,Reference,Text,Amount,Currency',
      '02/03/26,BK-0001,"TRANSFER, CUSTOMER A","1250,00",EUR',
      '05/03/26,BK-0002,CARD 4242,"-18,40",EUR',
      '09/03/26,BK-0003,FEES,"-2,50",EUR',
      'Closing balance,,,"1229,10",',
    ].join('\n');
    const path = file(`${text}\n`, 'kontoauszug_2026_03.csv');
    const s = await suggestLayout(path, 'kontoauszug_2026_03.csv');
    expect(s.preset).toBeNull();
    expect(s.why).toMatch(/^no preset fits/);
    expect(s.draft!.columns.map((c) => [c.name, c.type, c.format ?? null, c.required])).toEqual([
      ['value_date', 'date', 'dd/MM/yy', true],
      ['reference', 'text', null, true],
      ['text', 'text', null, true],
      ['amount', 'decimal', null, true],
      ['currency', 'currency', null, true],
    ]);
    expect(s.draft!.naturalKey).toEqual(['reference']);
    expect(s.config.layout).toMatchObject({
      table: 'kontoauszug',
      decimalMark: ',',
      skipLines: 2,
      skipRows: [{ column: 'value_date', values: ['Closing balance'] }],
    });
    const checked = await findBadRows(path, parseLayout(s.config.layout, 'draft'));
    expect(checked).toEqual({ rows: 3, skippedRows: 1, error: null });
  });

  it('drafts a file of record types without a header by position', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'settle-suggest-')), 'P11KFUN-4242.csv');
    copyFileSync(fixture('layouts/P11KFUN-4242-20260314120000-20260315120000-0001of0001.csv'), path);
    const s = await suggestLayout(path, 'P11KFUN-4242.csv');
    expect(s.config.layout).toMatchObject({ header: false, recordTypes: { H: 'info', I: 'data', F: { count: 7 }, L: { count: 2 } } });
    expect(s.draft!.columns.find((c) => c.name === 'field_3')).toMatchObject({ type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ss.SSSX" });
    expect((await findBadRows(path, parseLayout(s.config.layout, 'draft'))).error).toBeNull();
  });
});

describe('layout suggest drafts what a person would type (keys on main)', () => {
  it('takes the header under a preamble of name/value lines, not the first of those lines', async () => {
    const text = [
      '"Payments Export"',
      '"Merchant","ACME-42"',
      '"PeriodStart","2026-03-01T00:00:00 -0700"',
      '"PeriodEnd","2026-03-02T00:00:00 -0700"',
      '"PostedDate","SettlementId","OrderReference","Type","CurrencyCode","Amount","Fee"',
      '"2026-03-01T07:06:47 -0700","5984862001","ORD-1","Capture","USD","25.54","-0.74"',
      '"2026-03-01T11:10:34 -0700","5984862001","ORD-2","Capture","USD","10.00","-0.59"',
      '"2026-03-01T12:00:00 -0700","5984862001","ORD-3","Refund","USD","-5.00","0.00"',
    ].join('\n');
    const name = 'payments_2026_03.csv';
    const { s, checked } = await draftRoundTrip(file(`${text}\n`, name), name);
    expect(s.config.layout).toMatchObject({ skipLines: 4, naturalKey: 'orderreference' });
    expect(draftTypes(s)).toEqual([
      "posteddate:timestamp yyyy-MM-dd'T'HH:mm:ss XX",
      'settlementid:integer',
      'orderreference:text',
      'type:text',
      'currencycode:currency',
      'amount:decimal',
      'fee:decimal',
    ]);
    expect(checked).toEqual({ rows: 3, skippedRows: 0, error: null });
  });

  it('reads a header whose last name is empty as the header, never as a row, and amounts like "1,000" and .5', async () => {
    const text = [
      'Company,Donation Date,Transaction ID,Currency,Total Donation,Fee,Net Total,',
      'Duck Inc,2026-03-01T23:09:28Z,trxn-A,CAD,1200,11,1189,',
      'Mouse Inc,2026-03-02T00:07:05Z,trxn-B,CAD,"1,000",.5,999.50,',
      'Goofy Inc,2026-03-02T00:09:36Z,trxn-C,CAD,100,0.05,99.95,',
    ].join('\n');
    const name = 'donations.csv';
    const { s, checked } = await draftRoundTrip(file(`${text}\n`, name), name);
    expect(s.config.layout).toMatchObject({ groupSeparator: ',', naturalKey: 'transaction_id' });
    expect(s.config.layout).not.toHaveProperty('header');
    expect(draftTypes(s)).toEqual([
      'company:text',
      "donation_date:timestamp yyyy-MM-dd'T'HH:mm:ssX",
      'transaction_id:text',
      'currency:currency',
      'total_donation:decimal',
      'fee:decimal',
      'net_total:decimal',
    ]);
    expect(s.draft!.notes.join('\n')).toMatch(/the header ends with 1 empty name/);
    expect(checked).toEqual({ rows: 3, skippedRows: 0, error: null });
  });

  it('decides day-first by a day over 12 in any row, not the first', async () => {
    const rows = ['05/03/2026,R-1,10.00', '06/03/2026,R-2,11.00', '13/03/2026,R-3,12.00'];
    const name = 'statement.csv';
    const { s, checked } = await draftRoundTrip(file(`Date,Reference,Amount\n${rows.join('\n')}\n`, name), name);
    expect(draftTypes(s)[0]).toBe('date:date dd/MM/yyyy');
    expect(s.draft!.unsure.join('\n')).not.toMatch(/no day over 12/);
    expect(checked.error).toBeNull();
  });

  it('says plainly when no row decides day-first or month-first, and reads a US-style file month-first', async () => {
    const rows = ['05/03/2026,R-1,10.00', '06/03/2026,R-2,11.00', '07/04/2026,R-3,12.00'];
    const name = 'statement.csv';
    const { s, checked } = await draftRoundTrip(file(`Date,Reference,Amount\n${rows.join('\n')}\n`, name), name);
    expect(draftTypes(s)[0]).toBe('date:date MM/dd/yyyy');
    expect(s.draft!.unsure).toContain(
      'Date: 05/03/2026: no day over 12 in 3 rows; read as MM/dd (a US export?) — check, and write "dd/MM/yyyy" if it is day-first',
    );
    expect(checked.error).toBeNull();
  });

  it('joins a time of day kept in its own column to its date, in the zone the next column names', async () => {
    const rows = ['"2/1/2026","11:05:56","Europe/Berlin","TID1","49,37"', '"14/1/2026","13:06:07","Europe/Berlin","TID2","-1,78"'];
    const name = 'activity.csv';
    const { s, checked } = await draftRoundTrip(
      file(`"Fecha","Hora","Zona horaria","Id. de transaccion","Bruto"\n${rows.join('\n')}\n`, name),
      name,
    );
    expect(s.config.layout).toMatchObject({ decimalMark: ',', naturalKey: 'id_de_transaccion' });
    expect((s.config.layout as { columns: unknown[] }).columns[0]).toEqual({
      name: 'fecha',
      from: 'Fecha',
      type: 'timestamp',
      format: 'd/M/yyyy HH:mm:ss',
      timeFrom: 'hora',
      timeZoneFrom: 'zona_horaria',
    });
    expect(checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });

  it('prefers an id to free text that happens to be unique, and types an empty amount column as an amount', async () => {
    const rows = ['Payment one,PAY-1,10.00,', 'Payment two,PAY-2,11.00,', 'Payment three,PAY-3,12.00,'];
    const name = 'payments.csv';
    const { s, checked } = await draftRoundTrip(file(`Description,Payment Reference,Amount,Fee Amount\n${rows.join('\n')}\n`, name), name);
    expect(s.draft!.naturalKey).toEqual(['payment_reference']);
    expect(draftTypes(s)).toEqual(['description:text', 'payment_reference:text', 'amount:decimal', 'fee_amount:decimal']);
    expect(checked.error).toBeNull();
  });
});

describe('the example configs under fixtures/layouts', () => {
  const dir = fileURLToPath(new URL('../../fixtures/layouts/', import.meta.url));
  const configs = readdirSync(dir).filter((f) => f.endsWith('.config.json'));

  it.each(configs)('%s reads the sample its pattern takes', async (name) => {
    const config = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { pattern: string; layout: Record<string, unknown> };
    const layout = parseLayout(config.layout, name);
    const samples = readdirSync(dir).filter((f) => !f.endsWith('.json') && globToRegExp(config.pattern).test(f));
    // a layout that only extends a preset with a zone is proven by the preset's own sample
    if (config.layout.extends !== undefined && samples.length === 0) return;
    expect(samples).toHaveLength(1);
    const { rows, error } = await findBadRows(join(dir, samples[0]!), layout, { fileName: samples[0]! });
    expect(error).toBeNull();
    expect(rows).toBeGreaterThan(0);
  });
});
