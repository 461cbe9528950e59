import { DEFAULT_LAYOUT, LAYOUT_DEFAULTS, layoutColumn as col, type Layout } from './layout.js';

/**
 * Adyen's "Settlement details" report, from its published structure: headers in words, the
 * creation time in the company account's zone with that zone's abbreviation in the next column,
 * debit/credit pairs of which one is empty, and fee, payout and correction lines that carry no
 * Psp Reference (counted, not loaded: they are not payments and have no key). A payment has
 * several lines (Settled, Refunded, Chargeback…), told apart by type and modification reference.
 */
const ADYEN: Layout = {
  ...LAYOUT_DEFAULTS,
  name: 'adyen-settlement-details',
  table: 'adyen_settlement_details',
  columns: [
    col('company_account', 'text', { from: 'Company Account' }),
    col('merchant_account', 'text', { from: 'Merchant Account' }),
    col('psp_reference', 'text', { from: 'Psp Reference' }),
    col('merchant_reference', 'text', { from: 'Merchant Reference', required: false }),
    col('payment_method', 'text', { from: 'Payment Method', required: false }),
    col('creation_date', 'timestamp', { from: 'Creation Date', format: 'yyyy-MM-dd HH:mm:ss', timeZoneFrom: 'time_zone' }),
    col('time_zone', 'text', { from: 'TimeZone' }),
    col('type', 'text', { from: 'Type' }),
    col('modification_reference', 'text', { from: 'Modification Reference' }),
    col('gross_currency', 'currency', { from: 'Gross Currency' }),
    col('gross_debit', 'decimal', { from: 'Gross Debit (GC)', required: false, scale: 4 }),
    col('gross_credit', 'decimal', { from: 'Gross Credit (GC)', required: false, scale: 4 }),
    col('exchange_rate', 'decimal', { from: 'Exchange Rate', required: false, scale: 10 }),
    col('net_currency', 'currency', { from: 'Net Currency' }),
    col('net_debit', 'decimal', { from: 'Net Debit (NC)', required: false, scale: 4 }),
    col('net_credit', 'decimal', { from: 'Net Credit (NC)', required: false, scale: 4 }),
    col('commission', 'decimal', { from: 'Commission (NC)', required: false, scale: 4 }),
    col('markup', 'decimal', { from: 'Markup (NC)', required: false, scale: 4 }),
    col('scheme_fees', 'decimal', { from: 'Scheme Fees (NC)', required: false, scale: 4 }),
    col('interchange', 'decimal', { from: 'Interchange (NC)', required: false, scale: 4 }),
    col('payment_method_variant', 'text', { from: 'Payment Method Variant', required: false }),
    col('modification_merchant_reference', 'text', { from: 'Modification Merchant Reference', required: false }),
    col('batch_number', 'integer', { from: 'Batch Number' }),
  ],
  naturalKey: ['merchant_account', 'psp_reference', 'type', 'modification_reference'],
  skipRows: [{ column: 'type', values: ['Fee', 'MiscCosts', 'MerchantPayout', 'DepositCorrection', 'InvoiceDeduction'] }],
};

/**
 * Stripe's itemized payout reconciliation report (payout_reconciliation.itemized): lower-case
 * headers, times in UTC in the `_utc` columns, lower-case currency codes, amounts in major units
 * with fees and refunds negative. Which columns a report has is chosen per account, so all but
 * the essentials are optional and may be absent from the header.
 */
const STRIPE: Layout = {
  ...LAYOUT_DEFAULTS,
  name: 'stripe-itemized-payout-reconciliation',
  table: 'stripe_payout_reconciliation',
  columns: [
    col('balance_transaction_id', 'text'),
    col('created_utc', 'timestamp', { format: 'yyyy-MM-dd HH:mm:ss', timeZone: 'UTC' }),
    col('available_on_utc', 'timestamp', { format: 'yyyy-MM-dd HH:mm:ss', timeZone: 'UTC', required: false }),
    col('currency', 'currency'),
    col('gross', 'decimal', { scale: 3 }),
    col('fee', 'decimal', { scale: 3 }),
    col('net', 'decimal', { scale: 3 }),
    col('reporting_category', 'text'),
    col('source_id', 'text', { required: false }),
    col('description', 'text', { required: false }),
    col('customer_facing_amount', 'decimal', { scale: 3, required: false }),
    col('customer_facing_currency', 'currency', { required: false }),
    col('automatic_payout_id', 'text', { required: false }),
    col('automatic_payout_effective_at_utc', 'timestamp', { format: 'yyyy-MM-dd HH:mm:ss', timeZone: 'UTC', required: false }),
    col('charge_id', 'text', { required: false }),
    col('payment_intent_id', 'text', { required: false }),
  ],
  naturalKey: ['balance_transaction_id'],
};

export const PRESETS: ReadonlyMap<string, Layout> = new Map([DEFAULT_LAYOUT, ADYEN, STRIPE].map((l) => [l.name, l]));
