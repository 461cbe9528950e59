import { AS_WRITTEN, DEFAULT_LAYOUT, type Layout } from './layout.js';
import { readLayoutObject } from './layoutObject.js';

/**
 * The shipped presets, each written as configuration would write it (and read by the same
 * parser), each from its partner's published report structure and proven on genuine public exports
 * with `npm run conformance` (docs/LAYOUTS.md, "Conformance": a corpus kept outside the repository). Amounts are exact decimals; a column a
 * partner lets its users leave out is optional; a header the preset does not name is ignored.
 */

const optional = { required: false } as const;
const amount = (name: string, from: string, scale: number | typeof AS_WRITTEN = 4) => ({ name, from, type: 'decimal', scale, ...optional });

/** The columns that open Adyen's transaction reports: the accounts and the payment. */
const ADYEN_PAYMENT = [
  { name: 'company_account', from: 'Company Account', type: 'text' },
  { name: 'merchant_account', from: 'Merchant Account', type: 'text' },
  { name: 'psp_reference', from: 'Psp Reference', type: 'text' },
  { name: 'merchant_reference', from: 'Merchant Reference', type: 'text', ...optional },
  { name: 'payment_method', from: 'Payment Method', type: 'text', ...optional },
];

/** An Adyen time: in the account's zone, whose abbreviation (`CET`, `PDT`…) the `TimeZone` column beside it gives. */
const adyenTime = (name: string, from: string) => [
  { name, from, type: 'timestamp', format: 'yyyy-MM-dd HH:mm:ss', timeZoneFrom: 'time_zone' },
  { name: 'time_zone', from: 'TimeZone', type: 'text' },
];

/**
 * Adyen's "Settlement details" report: headers in words, the creation time in the company
 * account's zone with that zone's abbreviation in the next column, debit/credit pairs of which
 * one is empty, exchange rates with as many places as Adyen writes (15 and more). Every line
 * without a Psp Reference (fees, payouts, balance transfers, corrections, invoice deductions,
 * whatever Adyen names them) is counted, not loaded: it is no payment and has no key. Which
 * columns a report has is chosen per account: the net and fee columns may be absent.
 *
 * Its control total is Adyen's payout rule ("Getting paid", docs.adyen.com/account/getting-paid:
 * a payout is the batch's funds calculated on a net basis, and the report's `MerchantPayout`
 * line is that payout, booked as a net debit): every line of a batch that carries its
 * `MerchantPayout`, fees and payout included, nets to exactly zero per net currency. A batch
 * without its payout line (a report cut to a selection) states nothing and is not checked.
 */
const ADYEN_SETTLEMENT = {
  table: 'adyen_settlement_details',
  columns: [
    ...ADYEN_PAYMENT,
    ...adyenTime('creation_date', 'Creation Date'),
    { name: 'type', from: 'Type', type: 'text' },
    // empty on some Settled lines: kept as '' in the key
    { name: 'modification_reference', from: 'Modification Reference', type: 'text', ...optional },
    { name: 'gross_currency', from: 'Gross Currency', type: 'currency' },
    amount('gross_debit', 'Gross Debit (GC)'),
    amount('gross_credit', 'Gross Credit (GC)'),
    amount('exchange_rate', 'Exchange Rate', AS_WRITTEN),
    { name: 'net_currency', from: 'Net Currency', type: 'currency', ...optional },
    amount('net_debit', 'Net Debit (NC)'),
    amount('net_credit', 'Net Credit (NC)'),
    amount('commission', 'Commission (NC)'),
    amount('markup', 'Markup (NC)'),
    amount('scheme_fees', 'Scheme Fees (NC)'),
    amount('interchange', 'Interchange (NC)'),
    { name: 'payment_method_variant', from: 'Payment Method Variant', type: 'text', ...optional },
    { name: 'modification_merchant_reference', from: 'Modification Merchant Reference', type: 'text', ...optional },
    { name: 'batch_number', from: 'Batch Number', type: 'integer' },
  ],
  naturalKey: ['merchant_account', 'psp_reference', 'type', 'modification_reference'],
  skipRows: [{ column: 'psp_reference', values: [''] }],
  totals: [
    {
      rule: 'balance',
      groupBy: ['batch_number', 'net_currency'],
      sum: ['net_credit', '-net_debit'],
      when: { column: 'type', values: ['MerchantPayout'] },
    },
  ],
};

/**
 * Adyen's "Payments accounting" report: every status change of every payment (Received,
 * Authorised, SentForSettle, Settled, Refunded, Chargeback…), each a line of its own, the
 * booking time in the account's zone named in the next column. Some exports name `Settlement
 * Currency` twice: the first is the one Adyen documents.
 */
const ADYEN_PAYMENTS_ACCOUNTING = {
  table: 'adyen_payments_accounting',
  columns: [
    ...ADYEN_PAYMENT,
    { name: 'payment_method_variant', from: 'Payment Method Variant', type: 'text', ...optional },
    ...adyenTime('booking_date', 'Booking Date'),
    { name: 'record_type', from: 'Record Type', type: 'text' },
    // empty on Received and Authorised lines: kept as '' in the key
    { name: 'modification_psp_reference', from: 'Modification Psp Reference', type: 'text', ...optional },
    { name: 'main_currency', from: 'Main Currency', type: 'currency' },
    { name: 'main_amount', from: 'Main Amount', type: 'decimal', scale: 4 },
    { name: 'payment_currency', from: 'Payment Currency', type: 'currency', ...optional },
    amount('received_pc', 'Received (PC)'),
    amount('exchange_rate', 'Exchange Rate', AS_WRITTEN),
    amount('authorised_pc', 'Authorised (PC)'),
    amount('captured_pc', 'Captured (PC)'),
    { name: 'settlement_currency', from: 'Settlement Currency', occurrence: 1, type: 'currency', ...optional },
    amount('payable_sc', 'Payable (SC)'),
    amount('commission_sc', 'Commission (SC)'),
    amount('markup_sc', 'Markup (SC)'),
    amount('scheme_fees_sc', 'Scheme Fees (SC)'),
    amount('interchange_sc', 'Interchange (SC)'),
    { name: 'processing_fee_currency', from: 'Processing Fee Currency', type: 'currency', ...optional },
    amount('processing_fee_fc', 'Processing Fee (FC)'),
    { name: 'payable_batch', from: 'Payable Batch', type: 'integer', ...optional },
    { name: 'modification_merchant_reference', from: 'Modification Merchant Reference', type: 'text', ...optional },
  ],
  naturalKey: ['merchant_account', 'psp_reference', 'record_type', 'modification_psp_reference'],
};

/**
 * A Stripe time: `NAME_utc` as the API writes it (UTC), else `NAME` as the Dashboard downloads
 * it and the API writes it when asked for a `timezone`: in the report's zone (the layout's
 * `timeZone`, else the download's file-name suffix such as `_America-Chicago.csv`).
 */
const stripeTime = (name: string, required = true) => ({
  name: `${name}_utc`,
  from: [`${name}_utc`, { header: name, timeZone: 'local' }],
  type: 'timestamp',
  format: 'yyyy-MM-dd HH:mm:ss',
  timeZone: 'UTC',
  ...(required ? {} : optional),
});

/**
 * Stripe's itemized reports of balance transactions: lower-case headers, currencies in either
 * case, amounts in major units with up to 3 places, `fee` positive (what Stripe charged) and
 * `net` = `gross` − `fee`. Which columns a report has is chosen per account, so all but the
 * essentials are optional; metadata columns (`payment_metadata[…]`) and others are ignored.
 */
const stripeColumns = (payouts: boolean) => [
  { name: 'balance_transaction_id', type: 'text' },
  stripeTime('created'),
  stripeTime('available_on', false),
  { name: 'currency', type: 'currency' },
  { name: 'gross', type: 'decimal', scale: 3 },
  { name: 'fee', type: 'decimal', scale: 3 },
  { name: 'net', type: 'decimal', scale: 3 },
  { name: 'reporting_category', type: 'text' },
  { name: 'source_id', type: 'text', ...optional },
  { name: 'description', type: 'text', ...optional },
  { name: 'customer_facing_amount', type: 'decimal', scale: 3, ...optional },
  { name: 'customer_facing_currency', type: 'currency', ...optional },
  { name: 'automatic_payout_id', type: 'text', ...optional },
  stripeTime('automatic_payout_effective_at', false),
  { name: 'charge_id', type: 'text', ...optional },
  { name: 'payment_intent_id', type: 'text', ...optional },
  ...(payouts ? [] : [{ name: 'regulatory_tag', type: 'text', ...optional }]),
];

/** `payout_reconciliation.itemized`: the transactions each automatic payout settled. */
const STRIPE_PAYOUT_RECONCILIATION = {
  table: 'stripe_payout_reconciliation',
  columns: stripeColumns(true),
  naturalKey: ['balance_transaction_id'],
};

/** `balance_change_from_activity.itemized`: every transaction that changed the balance (payouts aside). */
const STRIPE_BALANCE_CHANGE = {
  table: 'stripe_balance_change',
  columns: stripeColumns(false),
  naturalKey: ['balance_transaction_id'],
};

/**
 * The columns PayPal's SFTP reports (STL, TRR) open their `SB` records with: the transaction,
 * its event code, its times with their offset, and the gross and fee amounts in unsigned
 * minor units (two places implied whatever the currency), each signed by its CR/DR column.
 */
const PAYPAL_TRANSACTION_COLUMNS = [
  { name: 'transaction_id', from: 'Transaction ID', type: 'text' },
  { name: 'invoice_id', from: 'Invoice ID', type: 'text', ...optional },
  { name: 'paypal_reference_id', from: 'PayPal Reference ID', type: 'text', ...optional },
  { name: 'paypal_reference_id_type', from: 'PayPal Reference ID Type', type: 'text', ...optional },
  { name: 'transaction_event_code', from: 'Transaction Event Code', type: 'text' },
  { name: 'initiated_at', from: 'Transaction Initiation Date', type: 'timestamp', format: 'yyyy/MM/dd HH:mm:ss XX' },
  { name: 'completed_at', from: 'Transaction Completion Date', type: 'timestamp', format: 'yyyy/MM/dd HH:mm:ss XX', ...optional },
  { name: 'transaction_debit_or_credit', from: 'Transaction Debit or Credit', type: 'text' },
  {
    name: 'gross_amount',
    from: 'Gross Transaction Amount',
    type: 'decimal',
    minorUnits: 2,
    sign: { from: 'transaction_debit_or_credit', negative: ['DR'], positive: ['CR'] },
  },
  { name: 'gross_currency', from: 'Gross Transaction Currency', type: 'currency' },
  { name: 'fee_debit_or_credit', from: 'Fee Debit or Credit', type: 'text', ...optional },
  {
    name: 'fee_amount',
    from: 'Fee Amount',
    type: 'decimal',
    minorUnits: 2,
    sign: { from: 'fee_debit_or_credit', negative: ['DR'], positive: ['CR'] },
    ...optional,
  },
  { name: 'fee_currency', from: 'Fee Currency', type: 'currency', ...optional },
];

/**
 * PayPal's Settlement report (`STL-yyyymmdd.sequence.version.csv`): records told by their first
 * field, the `CH` record naming the columns of the `SB` ones; amounts unsigned in minor units
 * (two places implied, whatever the currency: PayPal writes 100 yen as 10000), signed by the
 * debit/credit column beside each; times with their offset (`2026/01/06 03:12:28 -0800`). The
 * section and report counts (`SC`, `RC`) must agree with the body records, and the file is
 * complete only with its `FF` footer, whose count must agree too.
 *
 * Its footers are checked as PayPal's "Settlement Report Specification" (developer.paypal.com/
 * docs/reports/sftp-reports/settlement-report, "Section data" and "File data") defines them: each
 * `SF` (section footer) and `RF` (report footer) line names a currency (field 2) and states the
 * total gross amount credit and debit and the total fee amount credit and debit (fields 3 to 6,
 * unsigned minor units) of the section's (the report's) `SB` records in that currency.
 */
const PAYPAL_SETTLEMENT = {
  table: 'paypal_settlement_report',
  recordTypes: { RH: 'info', FH: 'info', SH: 'info', CH: 'header', SB: 'data', SF: 'info', SC: { count: 2 }, RF: 'info', RC: { count: 2 } },
  trailer: { firstField: 'FF', rowCountField: 2 },
  totals: ['SF', 'RF'].map((record) => ({
    record,
    groupBy: { column: 'gross_currency', field: 2 },
    sums: [
      { field: 3, of: 'gross_amount', sign: 'credit' },
      { field: 4, of: 'gross_amount', sign: 'debit' },
      { field: 5, of: 'fee_amount', sign: 'credit' },
      { field: 6, of: 'fee_amount', sign: 'debit' },
    ],
  })),
  columns: [
    ...PAYPAL_TRANSACTION_COLUMNS,
    { name: 'custom_field', from: 'Custom Field', type: 'text', ...optional },
    { name: 'consumer_id', from: 'Consumer ID', type: 'text', ...optional },
    { name: 'payment_tracking_id', from: 'Payment Tracking ID', type: 'text', ...optional },
    { name: 'store_id', from: 'Store ID', type: 'text', ...optional },
    { name: 'bank_reference_id', from: 'Bank Reference ID', type: 'text', ...optional },
  ],
  naturalKey: ['transaction_id'],
};

/**
 * PayPal's Transaction Detail report (`TRR-yyyymmdd.sequence.version.CSV`): every transaction of
 * the day, whether it moved the balance or not, in the record shape of the STL (`RH`, `FH`, `SH`,
 * `CH`, `SB`…), every record padded with commas to the `CH` width. Its footers state counts
 * only: `SF` and `SC` the section's body records, `RF` and `RC` the report's, `FF` the file's
 * (PayPal's "Transaction Detail Report Specification", developer.paypal.com/docs/reports/
 * sftp-reports/transaction-detail); each must agree, and the file is complete only with its
 * `FF`. A transaction is listed again when its status changes (`Transactional Status` `P`
 * pending, then `S` success), so the key is the transaction and its status. The payer's
 * names, addresses and e-mail are not kept.
 */
const PAYPAL_TRANSACTION_DETAIL = {
  table: 'paypal_transaction_detail_report',
  recordTypes: {
    RH: 'info',
    FH: 'info',
    SH: 'info',
    CH: 'header',
    SB: 'data',
    SF: { count: 2 },
    SC: { count: 2 },
    RF: { count: 2 },
    RC: { count: 2 },
  },
  trailer: { firstField: 'FF', rowCountField: 2 },
  columns: [
    ...PAYPAL_TRANSACTION_COLUMNS,
    { name: 'transactional_status', from: 'Transactional Status', type: 'text' },
    { name: 'insurance_amount', from: 'Insurance Amount', type: 'decimal', minorUnits: 2, ...optional },
    { name: 'sales_tax_amount', from: 'Sales Tax Amount', type: 'decimal', minorUnits: 2, ...optional },
    { name: 'shipping_amount', from: 'Shipping Amount', type: 'decimal', minorUnits: 2, ...optional },
    { name: 'transaction_subject', from: 'Transaction Subject', type: 'text', ...optional },
    { name: 'transaction_note', from: 'Transaction Note', type: 'text', ...optional },
    { name: 'item_name', from: 'Item Name', type: 'text', ...optional },
    { name: 'item_id', from: 'Item ID', type: 'text', ...optional },
    { name: 'custom_field', from: 'Custom Field', type: 'text', ...optional },
    { name: 'consumer_id', from: 'Consumer ID', type: 'text', ...optional },
    { name: 'card_type', from: 'Card Type', type: 'text', ...optional },
    { name: 'payment_source', from: 'Payment Source', type: 'text', ...optional },
    { name: 'protection_eligibility', from: 'Protection Eligibility', type: 'text', ...optional },
    { name: 'payment_tracking_id', from: 'Payment Tracking ID', type: 'text', ...optional },
  ],
  naturalKey: ['transaction_id', 'transactional_status'],
};

/**
 * Braintree's Transaction-Level Fee report (flat-rate and blended pricing; the IC+ estimate
 * columns are ignored): one line per disbursed transaction, dates `yyyy-MM-dd`, fees with up
 * to 4 places, `Discount` a rate.
 */
const BRAINTREE_FEES = {
  table: 'braintree_transaction_fees',
  columns: [
    { name: 'merchant_account_id', from: 'Merchant Account ID', type: 'text' },
    { name: 'transaction_id', from: 'Transaction ID', type: 'text' },
    { name: 'original_transaction_id', from: 'Original Transaction ID', type: 'text', ...optional },
    { name: 'transaction_type', from: 'Transaction Type', type: 'text' },
    { name: 'presentment_currency', from: 'Presentment Currency', type: 'currency', ...optional },
    amount('presentment_amount', 'Presentment Amount', 2),
    { name: 'settlement_currency', from: 'Settlement Currency', type: 'currency' },
    amount('original_sale_amount', 'Original Sale Amount', 2),
    { name: 'settlement_amount', from: 'Settlement Amount', type: 'decimal', scale: 2 },
    { name: 'settlement_date', from: 'Settlement Date', type: 'date' },
    { name: 'disbursement_date', from: 'Disbursement Date', type: 'date', ...optional },
    { name: 'deposit_id', from: 'Deposit ID', type: 'text', ...optional },
    { name: 'payment_instrument', from: 'Payment Instrument', type: 'text', ...optional },
    { name: 'card_brand', from: 'Card Brand', type: 'text', ...optional },
    { name: 'card_type', from: 'Card Type', type: 'text', ...optional },
    amount('refunded_amount', 'Refunded Amount', 2),
    { name: 'refund_type', from: 'Refund Type', type: 'text', ...optional },
    amount('exchange_rate', 'Exchange Rate', AS_WRITTEN),
    { name: 'order_id', from: 'Order ID', type: 'text', ...optional },
    { name: 'acquirer_reference_number', from: 'Acquirer Reference Number', type: 'text', ...optional },
    { name: 'card_issuing_country', from: 'Card Issuing Country', type: 'text', ...optional },
    amount('discount_rate', 'Discount', AS_WRITTEN),
    amount('discount_credit', 'Discount Credit'),
    amount('per_transaction_fee', 'Per Transaction Fee'),
    amount('per_transaction_fee_credit', 'Per Transaction Fee Credit'),
    amount('multicurrency_fee_amount', 'Multicurrency Fee Amount'),
    amount('multicurrency_fee_credit', 'Multicurrency Fee Credit'),
    amount('braintree_total_amount', 'Braintree Total Amount'),
    amount('total_fee_amount', 'Total Fee Amount'),
  ],
  naturalKey: ['transaction_id'],
};

const checkoutTime = { type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ss.SSS", timeZone: 'UTC' } as const;

/**
 * Checkout.com's Settlement Breakdown report (`settlement-breakdown_{entity}_{date}_{payout}_1.csv`):
 * every financial movement of one payout, times in ISO form in UTC, deductions negative. The
 * payout's own line (`Merchant Payout`, no Payment ID) is counted, not loaded.
 */
const CHECKOUT_SETTLEMENT = {
  table: 'checkout_settlement_breakdown',
  columns: [
    { name: 'client_entity_id', from: 'Client Entity ID', type: 'text' },
    { name: 'client_entity_name', from: 'Client Entity Name', type: 'text', ...optional },
    { name: 'processing_channel_id', from: 'Processing Channel ID', type: 'text', ...optional },
    { name: 'processing_channel_name', from: 'Processing Channel Name', type: 'text', ...optional },
    { name: 'type', from: 'Type', type: 'text' },
    { name: 'payment_id', from: 'Payment ID', type: 'text' },
    { name: 'reference', from: 'Reference', type: 'text', ...optional },
    { name: 'processed_on', from: 'Processed On', ...checkoutTime },
    { name: 'available_on', from: 'Available On', ...checkoutTime, ...optional },
    { name: 'holding_currency', from: 'Holding Currency', type: 'currency' },
    { name: 'payout_id', from: 'Payout ID', type: 'text' },
    { name: 'gross_in_holding_currency', from: 'Gross In Holding Currency', type: 'decimal', scale: 4 },
    amount('deduction_in_holding_currency', 'Deduction In Holding Currency'),
    { name: 'net_in_holding_currency', from: 'Net In Holding Currency', type: 'decimal', scale: 4 },
    amount('processing_fee_in_holding_currency', 'Processing Fee In Holding Currency'),
    amount('scheme_fee_in_holding_currency', 'Scheme Fee In Holding Currency'),
    amount('interchange_in_holding_currency', 'Interchange In Holding Currency'),
    amount('tax_in_holding_currency', 'Tax In Holding Currency'),
    amount('reserve_in_holding_currency', 'Reserve In Holding Currency'),
    { name: 'processing_currency', from: 'Processing Currency', type: 'currency', ...optional },
    amount('gross_in_processing_currency', 'Gross In Processing Currency'),
    amount('fx_rate_applied', 'FX Rate Applied', AS_WRITTEN),
    { name: 'payment_method', from: 'Payment Method', type: 'text', ...optional },
  ],
  naturalKey: ['payout_id', 'payment_id', 'type'],
  skipRows: [{ column: 'payment_id', values: [''] }],
};

const dlocalTime = { type: 'timestamp', format: 'yyyy-MM-dd HH:mm:ss', timeZone: 'UTC' } as const;

/**
 * dLocal's Settlement report (one transfer, `{merchant}_Settlement_Reports_{yyyymmdd}.csv`): two
 * leading records, the summary's own header (`ROW_TYPE,SETTLEMENT_CURRENCY,NUMBER_OF_ITEMS,…`)
 * and the `HEADER` summary (the settlement currency, the number of items, the gross, fee and
 * net totals, the transfer date and id), then the rows' header and one row per item (`PAYMENT`,
 * `CAPTURE`, `REFUND`, `CHARGEBACK`, `ADJUSTMENT`, `SETTLEMENT_FEE`…), amounts in the settlement
 * currency with up to six places, fees negative, times in UTC. The `HEADER` is checked against
 * the rows before any is loaded: its number of items, and its gross, fee and net totals, which
 * dLocal states in cents of the rows' six-place amounts (`rounding: "stated"`). The HEADER's
 * `SETTLEMENT_CURRENCY`, the currency of every amount, is kept in each row (`settlement_currency`,
 * a `capture`): a sum over the table never adds dollars to euros; a row that names its own
 * settlement currency must name the HEADER's.
 */
const DLOCAL_SETTLEMENT = {
  table: 'dlocal_settlement_report',
  leadingRecords: 2,
  columns: [
    { name: 'row_type', from: 'ROW_TYPE', type: 'text' },
    { name: 'mid', from: 'MID', type: 'text', ...optional },
    { name: 'login', from: 'LOGIN', type: 'text', ...optional },
    { name: 'country', from: 'COUNTRY', type: 'text', ...optional },
    { name: 'created_at', from: 'CREATION_DATE', ...dlocalTime, ...optional },
    { name: 'approved_at', from: 'APPROVED_DATE', ...dlocalTime, ...optional },
    { name: 'transaction_id', from: 'TRANSACTION_ID', type: 'text', ...optional },
    { name: 'dlocal_transaction_id', from: 'DLOCAL_TRANSACTION_ID', type: 'text' },
    amount('local_amount', 'LOCAL_AMOUNT', 6),
    { name: 'local_currency', from: 'LOCAL_CURRENCY', type: 'currency', ...optional },
    amount('fx_rate', 'FX_RATE', AS_WRITTEN),
    { name: 'gross_amount', from: 'GROSS_AMOUNT', type: 'decimal', scale: 6 },
    { name: 'fee_amount', from: 'FEE_AMOUNT', type: 'decimal', scale: 6 },
    { name: 'net_amount', from: 'NET_AMOUNT', type: 'decimal', scale: 6 },
    { name: 'payment_type', from: 'PAYMENT_TYPE', type: 'text', ...optional },
    { name: 'payment_method_code', from: 'PAYMENT_METHOD_CODE', type: 'text', ...optional },
    { name: 'card_bin', from: 'CARD_BIN', type: 'text', ...optional },
    { name: 'card_type', from: 'CARD_TYPE', type: 'text', ...optional },
    { name: 'installments', from: 'INSTALLMENTS', type: 'text', ...optional },
    { name: 'status', from: 'STATUS', type: 'text', ...optional },
    { name: 'status_code', from: 'STATUS_CODE', type: 'text', ...optional },
    { name: 'status_details', from: 'STATUS_DETAILS', type: 'text', ...optional },
    { name: 'description', from: 'DESCRIPTION', type: 'text', ...optional },
    // the HEADER's currency, which every amount above is in: kept with each row (and, where a
    // report's rows name it too, each row's checked against it)
    { name: 'settlement_currency', from: 'SETTLEMENT_CURRENCY', type: 'currency', capture: 'settlement_currency', ...optional },
  ],
  captures: { settlement_currency: { record: 'HEADER', field: 2 } },
  naturalKey: ['row_type', 'dlocal_transaction_id'],
  totals: [
    {
      record: 'HEADER',
      at: 'top',
      count: 3,
      rounding: 'stated',
      sums: [
        { field: 4, of: 'gross_amount' },
        { field: 5, of: 'fee_amount' },
        { field: 6, of: 'net_amount' },
      ],
    },
  ],
};

const SOURCES: [string, Record<string, unknown>][] = [
  ['adyen-settlement-details', ADYEN_SETTLEMENT],
  ['adyen-payments-accounting', ADYEN_PAYMENTS_ACCOUNTING],
  ['stripe-itemized-payout-reconciliation', STRIPE_PAYOUT_RECONCILIATION],
  ['stripe-itemized-balance-change', STRIPE_BALANCE_CHANGE],
  ['paypal-settlement-report', PAYPAL_SETTLEMENT],
  ['paypal-transaction-detail-report', PAYPAL_TRANSACTION_DETAIL],
  ['braintree-transaction-level-fees', BRAINTREE_FEES],
  ['checkout-settlement-breakdown', CHECKOUT_SETTLEMENT],
  ['dlocal-settlement-report', DLOCAL_SETTLEMENT],
];

const preset = (name: string, source: Record<string, unknown>): Layout =>
  readLayoutObject(
    source,
    (what) => {
      throw new Error(`preset ${name}: layout ${what}`);
    },
    name,
  );

export const PRESETS: ReadonlyMap<string, Layout> = new Map([
  [DEFAULT_LAYOUT.name, DEFAULT_LAYOUT],
  ...SOURCES.map(([name, source]): [string, Layout] => [name, preset(name, source)]),
]);
