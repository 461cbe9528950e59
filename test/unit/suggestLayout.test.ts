import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/intake/names.js';
import { parseLayout } from '../../src/layout/parseLayout.js';
import { findBadRows } from '../../src/layout/readSettlement.js';
import { suggestLayout } from '../../src/layout/suggestLayout.js';

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
    expect(s.config.layout).toMatchObject({ header: false, recordTypes: { H: 'info', I: 'data', F: 'info', L: 'info' } });
    expect(s.draft!.columns.find((c) => c.name === 'field_3')).toMatchObject({ type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ss.SSSX" });
    expect((await findBadRows(path, parseLayout(s.config.layout, 'draft'))).error).toBeNull();
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
