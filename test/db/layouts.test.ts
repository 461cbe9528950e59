import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { financeDatabase, parseSummary, runCommand, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const fixture = (name: string) => readFile(fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url)), 'utf8');

/** A workspace whose config names a layout (a preset or an object), migrated with it. */
async function layoutWorkspace(layout: unknown, pattern: string, database: { url: string } = db) {
  const { ws, config } = await Workspace.forLayout(database.url, layout, pattern);
  const run = async (more: string[] = []) => {
    const r = await ws.run(['--config', config, ...more]);
    // a usage error (exit 2) prints no summary
    const summary =
      r.status === 2 ? {} : more.includes('--json') ? (JSON.parse(r.stdout) as Record<string, number>) : parseSummary(r.stdout);
    return { ...r, summary };
  };
  return { ws, config, run };
}

/** Shuffles a CSV's columns (the same permutation on every line): the header says where each one is. */
function shuffleColumns(text: string, order: number[]): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : ((f) => order.map((i) => f[i]).join(','))(line.split(','))))
    .join('\n');
}

describe('the adyen-settlement-details preset', () => {
  const NAME = 'settlement_detail_report_batch_42.csv';

  it('loads a Settlement details report: exact amounts, times in UTC from the TimeZone column, fee and payout lines counted not loaded', async () => {
    const { ws, run } = await layoutWorkspace('adyen-settlement-details', 'settlement_detail_report_batch_*.csv');
    await db.client.query('TRUNCATE settle.adyen_settlement_details');
    await ws.put(NAME, await fixture(NAME));
    const r = await run();
    expect(r.status).toBe(0);
    expect(r.summary).toMatchObject({ loaded: 1, rows: 3 });
    const rows = await db.client.query(
      `SELECT psp_reference, type, modification_reference, to_char(creation_date AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS utc,
              gross_credit::text, gross_debit::text, net_credit::text, net_currency, batch_number::text, source_line
         FROM settle.adyen_settlement_details ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      // CET is UTC+1; the clocks changed on 29 March at 01:00 UTC, and a row written in CEST is UTC+2
      expect.objectContaining({
        psp_reference: '8816178952380553',
        type: 'Settled',
        utc: '2026-03-14 09:15:30',
        gross_credit: '100.0000',
        gross_debit: null,
        net_credit: '98.0500',
        batch_number: '42',
        source_line: 2,
      }),
      expect.objectContaining({
        psp_reference: '8816178952380561',
        utc: '2026-03-29 00:30:00',
        gross_credit: '250.5000',
        net_currency: 'EUR',
        source_line: 3,
      }),
      expect.objectContaining({
        psp_reference: '8816178952380553',
        type: 'Refunded',
        modification_reference: '8816178952391111',
        utc: '2026-03-31 07:00:00',
        gross_debit: '20.0000',
        source_line: 4,
      }),
    ]);
    const loaded = ws.events().find((e) => e.event === 'loaded')!;
    expect(loaded.details).toMatchObject({ rows: 3, skippedRows: 2, table: 'adyen_settlement_details' });
    const marker = await db.client.query(`SELECT target_table, row_count FROM settle.file_loads WHERE file_name = $1`, [NAME]);
    expect(marker.rows).toEqual([{ target_table: 'adyen_settlement_details', row_count: 3 }]);
  });

  it('skips a renamed resend, rejects a resend with a row added naming the overlapping keys, and loads with columns shuffled', async () => {
    const { ws, run } = await layoutWorkspace('adyen-settlement-details', 'settlement_detail_report_batch_*.csv');
    await db.client.query('TRUNCATE settle.adyen_settlement_details');
    // other bytes than the first test's file (the finance database keeps its file marker)
    const text = (await fixture(NAME)).replaceAll('order-100', 'order-200');
    await ws.put(NAME, text);
    expect((await run()).status).toBe(0);

    await ws.put('settlement_detail_report_batch_42_retry.csv', text);
    const resend = await run();
    expect(resend.summary).toMatchObject({ loaded: 0, skipped: 1 });
    expect(await ws.files('duplicates')).toEqual(['settlement_detail_report_batch_42_retry.csv']);

    const lines = text.trimEnd().split('\n');
    const added = lines[1]!
      .replace('8816178952380553,order-2001', '8816178952380999,order-1009')
      .replaceAll('Settled,8816178952380553', 'Settled,8816178952380999')
      // in a batch of its own without a payout line: batch 42's lines, its payout's included, must still net to zero
      .replace(/,42,,$/, ',43,,');
    await ws.put('settlement_detail_report_batch_43.csv', [...lines, added].join('\n') + '\n');
    const overlap = await run(['--json']);
    expect(overlap.status).toBe(1);
    const rejected = JSON.parse(overlap.stdout).files.find((f: { outcome: string }) => f.outcome === 'rejected');
    expect(rejected.error).toMatch(
      /^field \(merchant_account, psp_reference, type, modification_reference\): 3 value\(s\) already used: line 2: "TestMerchant" "8816178952380553" "Settled" "8816178952380553" already loaded from settlement_detail_report_batch_42\.csv \(run /,
    );
    const count = await db.client.query(`SELECT count(*)::int AS n FROM settle.adyen_settlement_details`);
    expect(count.rows[0].n).toBe(3);

    // the same new row alone, with the columns in another order: the header says where each one is
    const order = [7, 2, 0, 1, 5, 6, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24];
    await ws.put('settlement_detail_report_batch_44.csv', shuffleColumns([lines[0]!, added].join('\n') + '\n', order));
    const shuffled = await run();
    expect(shuffled.summary).toMatchObject({ loaded: 1, rows: 1 });
    const row = await db.client.query(
      `SELECT merchant_reference, payment_method FROM settle.adyen_settlement_details WHERE psp_reference = '8816178952380999'`,
    );
    expect(row.rows).toEqual([{ merchant_reference: 'order-1009', payment_method: 'visa' }]);
  });
});

describe('the stripe-itemized-payout-reconciliation preset', () => {
  const NAME = 'stripe_payout_reconciliation_2026-03-16.csv';

  it('loads lower-case currencies upper-cased, fees as Stripe writes them (positive, net = gross - fee) and refunds exact, times as UTC, and optional columns the report left out as NULL', async () => {
    const { ws, run } = await layoutWorkspace('stripe-itemized-payout-reconciliation', 'stripe_payout_reconciliation_*.csv');
    await db.client.query('TRUNCATE settle.stripe_payout_reconciliation');
    await ws.put(NAME, await fixture(NAME));
    const r = await run();
    expect(r.status).toBe(0);
    expect(r.summary).toMatchObject({ loaded: 1, rows: 4 });
    const rows = await db.client.query(
      `SELECT balance_transaction_id, currency, gross::text, fee::text, net::text, customer_facing_currency,
              to_char(created_utc AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS created, charge_id
         FROM settle.stripe_payout_reconciliation ORDER BY source_line`,
    );
    expect(rows.rows[0]).toEqual({
      balance_transaction_id: 'txn_3OqAbc1234567890',
      currency: 'USD',
      gross: '120.000',
      fee: '3.780',
      net: '116.220',
      customer_facing_currency: 'USD',
      created: '2026-03-12 14:03:11',
      charge_id: null,
    });
    expect(rows.rows[1]).toMatchObject({ customer_facing_currency: 'EUR' });
    expect(rows.rows[2]).toMatchObject({ gross: '-20.000', net: '-20.000' });
    const sum = await db.client.query(`SELECT sum(net)::text AS net FROM settle.stripe_payout_reconciliation`);
    expect(sum.rows[0].net).toBe('129.460');

    // another account's report: fewer columns, in another order; a renamed resend of the first is skipped
    const other =
      'reporting_category,net,fee,gross,currency,created_utc,balance_transaction_id\ncharge,9.41,0.59,10.00,gbp,2026-03-15 08:00:00,txn_OTHER1\n';
    await ws.put('stripe_payout_reconciliation_2026-03-17.csv', other);
    await ws.put('stripe_payout_reconciliation_2026-03-16_again.csv', await fixture(NAME));
    const second = await run();
    expect(second.summary).toMatchObject({ loaded: 1, skipped: 1, rows: 1 });
    const gbp = await db.client.query(
      `SELECT currency, description FROM settle.stripe_payout_reconciliation WHERE balance_transaction_id = 'txn_OTHER1'`,
    );
    expect(gbp.rows).toEqual([{ currency: 'GBP', description: null }]);

    // the first report again with one more row: rejected whole, naming the keys it shares
    const more = (await fixture(NAME)) + 'txn_NEW5234567890,2026-03-14 10:00:00,2026-03-16 00:00:00,usd,5.00,0.45,4.55,charge,,,,,,\n';
    await ws.put('stripe_payout_reconciliation_2026-03-16_plus.csv', more);
    const third = await run(['--json']);
    expect(third.status).toBe(1);
    const rejected = (third.summary as unknown as { files: { outcome: string; error: string }[] }).files[0]!;
    expect(rejected.outcome).toBe('rejected');
    expect(rejected.error).toMatch(
      /^field balance_transaction_id: 4 value\(s\) already used: line 2: "txn_3OqAbc1234567890" already loaded from stripe_payout_reconciliation_2026-03-16\.csv \(run /,
    );
    const n = await db.client.query(
      `SELECT count(*)::int AS n FROM settle.stripe_payout_reconciliation WHERE balance_transaction_id = 'txn_NEW5234567890'`,
    );
    expect(n.rows[0].n).toBe(0);
  });
});

describe('the default preset', () => {
  it('loads a file whose columns come in another order: the header says where each one is', async () => {
    const ws = await Workspace.create(db.url);
    const text = shuffleColumns(
      [
        'settlement_date,transaction_id,merchant_id,card_brand,transaction_type,gross_amount,fee_amount,net_amount,currency',
        '2026-11-20,ORDER-1,M-1,VISA,SALE,100.00,1.50,98.50,EUR',
        '2026-11-20,ORDER-2,M-2,MC,REFUND,-20.00,0.00,-20.00,eur',
      ].join('\n') + '\n',
      [8, 7, 6, 5, 4, 3, 2, 1, 0],
    );
    await ws.put('settle_20261120_a01.csv', text);
    const r = await ws.run();
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, rows: 2 });
    const rows = await db.client.query(
      `SELECT transaction_id, merchant_id, net_amount::text AS net, currency, to_char(settlement_date, 'YYYY-MM-DD') AS d
         FROM settle.settlement_rows WHERE transaction_id LIKE 'ORDER-%' ORDER BY 1`,
    );
    expect(rows.rows).toEqual([
      { transaction_id: 'ORDER-1', merchant_id: 'M-1', net: '98.50', currency: 'EUR', d: '2026-11-20' },
      { transaction_id: 'ORDER-2', merchant_id: 'M-2', net: '-20.00', currency: 'EUR', d: '2026-11-20' },
    ]);
  });
});

describe("audit and reprocess on a layout's own table", () => {
  it('counts rows in the table the file marker names, and reprocesses into it', async () => {
    // audit looks at the whole finance database: this test has one of its own
    const own = await financeDatabase();
    onTestFinished(() => own.close());
    const { ws, config, run } = await layoutWorkspace('stripe-itemized-payout-reconciliation', 'stripe_audit_*.csv', own);
    const text =
      'balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category\ntxn_AUD1,2026-03-15 08:00:00,eur,10.00,0.59,9.41,charge\ntxn_AUD2,2026-03-15 09:00:00,eur,5.00,0.30,4.70,charge\n';
    await ws.put('stripe_audit_1.csv', text);
    expect((await run()).summary).toMatchObject({ loaded: 1, rows: 2 });
    const audit = () => ws.cli(['audit', '--config', config, '--intake', ws.intake, '--ledger', ws.ledger, '--json']);
    const clean = await audit();
    expect(clean.status).toBe(0);

    const again = await ws.reprocess(config, 'stripe_audit_1.csv', 'check');
    expect(again.status).toBe(0);
    const loads = await own.client.query(
      `SELECT l.reason, l.row_count FROM settle.loads l JOIN settle.file_loads f USING (sha256) WHERE f.file_name = 'stripe_audit_1.csv' ORDER BY l.load_id`,
    );
    expect(loads.rows).toEqual([
      { reason: null, row_count: 2 },
      { reason: 'check', row_count: 2 },
    ]);
    const rows = await own.client.query(
      `SELECT count(*)::int AS n FROM settle.stripe_payout_reconciliation WHERE balance_transaction_id LIKE 'txn_AUD%'`,
    );
    expect(rows.rows[0].n).toBe(2);

    await own.client.query(`DELETE FROM settle.stripe_payout_reconciliation WHERE balance_transaction_id = 'txn_AUD2'`);
    const found = await audit();
    expect(found.status).toBe(1);
    expect(found.stdout).toContain('stripe_audit_1.csv: the file marker says 2 rows, settle.stripe_payout_reconciliation holds 1');
  });
});

describe('a European acquirer layout with a trailer', () => {
  const NAME = 'acq_20260315.csv';
  const layout = async () => JSON.parse(await fixture('acquirer-eu.config.json')).layout;

  it('loads a ";" file with a preamble, dd/MM/yyyy dates and 1.250,00 amounts when its trailer agrees', async () => {
    const { ws, run } = await layoutWorkspace(await layout(), 'acq_*.csv');
    await db.client.query('TRUNCATE settle.acquirer_settlements');
    await ws.put(NAME, await fixture(NAME));
    const r = await run();
    expect(r.status).toBe(0);
    expect(r.summary).toMatchObject({ loaded: 1, rows: 3 });
    const rows = await db.client.query(
      `SELECT to_char(booking_date, 'YYYY-MM-DD') AS d, reference, amount::text FROM settle.acquirer_settlements ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      { d: '2026-03-14', reference: 'R-0001', amount: '1250.00' },
      { d: '2026-03-14', reference: 'R-0002', amount: '-35.50' },
      { d: '2026-03-15', reference: 'R-0003', amount: '12345678.90' },
    ]);
  });

  it.each([
    ['a wrong row count', (t: string) => t.replace('Total;3;', 'Total;4;'), /^line 7, trailer: says 4 rows, the file has 3$/],
    [
      'a wrong sum',
      (t: string) => t.replace('12.346.893,40', '12.346.893,41'),
      /^line 7, trailer: says the amount sum is 12346893\.41, the rows add up to 12346893\.40$/,
    ],
  ])('rejects a file whose trailer has %s, loading nothing', async (_what, change, message) => {
    const { ws, run } = await layoutWorkspace(await layout(), 'acq_*.csv');
    const text = change((await fixture(NAME)).replaceAll('R-000', `W${_what.length}-`));
    await ws.put(NAME, text);
    const r = await run(['--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).files[0]).toMatchObject({ outcome: 'rejected', error: expect.stringMatching(message) });
    expect((await ws.read('rejected', NAME)).toString()).toBe(text);
    const n = await db.client.query(`SELECT count(*)::int AS n FROM settle.acquirer_settlements WHERE reference LIKE $1`, [
      `W${_what.length}-%`,
    ]);
    expect(n.rows[0].n).toBe(0);
  });

  it('leaves a file cut before its trailer in the intake as not ready, then rejects it once it has waited --max-waiting-runs runs', async () => {
    const { ws, run } = await layoutWorkspace(await layout(), 'acq_*.csv');
    const text = (await fixture(NAME)).replaceAll('R-000', 'CUT-').split('\n').slice(0, 5).join('\n') + '\n';
    await ws.put(NAME, text);
    const first = await run(['--max-waiting-runs', '1']);
    expect(first.summary).toMatchObject({ not_ready: 1, rejected: 0 });
    expect(await ws.files('intake')).toEqual([NAME]);
    expect(ws.ledgerFile(NAME)).toBeUndefined(); // never claimed
    const second = await run(['--max-waiting-runs', '1', '--json']);
    expect(second.status).toBe(1);
    const file = JSON.parse(second.stdout).files[0];
    expect(file).toMatchObject({ outcome: 'rejected' });
    expect(file.error).toBe('the file ends at line 5 without its trailer (a line starting "Total"): it is incomplete');
    expect(await ws.files('rejected')).toEqual([NAME]);
  });

  it('names all three bad rows, and check prints the same as the run', async () => {
    const { ws, config, run } = await layoutWorkspace(await layout(), 'acq_*.csv');
    const text = (await fixture(NAME))
      .replaceAll('R-000', 'BAD-')
      .replace('1.250,00', '1,250.00')
      .replace('14/03/2026;BAD-2', '31/02/2026;BAD-2')
      .replace('T-78;', 'T-78; ;');
    await ws.put(NAME, text);
    const r = await run(['--json']);
    const error = JSON.parse(r.stdout).files[0].error as string;
    expect(error).toBe(
      '3 bad rows: line 4, field amount: "1,250.00" is not a decimal amount with at most 2 places (like 1.250,00); ' +
        'line 5, field booking_date: "31/02/2026" is not a date (dd/MM/yyyy, 0001-01-01 to 9999-12-31); line 6: expected 5 fields, found 6: field 6, past the header\'s, holds "EUR"',
    );
    const copy = join(ws.root, 'copy.csv');
    await writeFile(copy, text);
    const checked = await runCommand(['check', '--config', config, copy]);
    expect(checked.status).toBe(1);
    expect(checked.stdout.trim()).toBe(`${copy}: rejected: ${error}`);
  });
});

describe('layouts in the configuration and in migrate', () => {
  it('adds a column the layout gained to its table with a later migrate, showing the SQL first with --print-sql', async () => {
    const table = `grow_${Date.now().toString(36)}`;
    const base = { table, columns: [{ name: 'ref', type: 'text' }], naturalKey: 'ref' };
    const { ws, config, run } = await layoutWorkspace(base, 'grow_*.csv');
    await ws.put('grow_1.csv', 'ref\nA-1\n');
    expect((await run()).summary).toMatchObject({ loaded: 1 });

    const grown = { ...base, columns: [...base.columns, { name: 'amount', type: 'decimal', scale: 2, from: 'Amount', required: false }] };
    await writeFile(config, JSON.stringify({ layout: grown, pattern: 'grow_*.csv' }));
    // rows COPY takes as written: an empty optional value is NULL there too
    await ws.put('grow_2.csv', 'ref,Amount\nA-2,1.50\nA-3,\n');
    const early = await run();
    expect(early.status).toBe(2);
    expect(early.stderr).toMatch(
      new RegExp(`table settle\\.${table} of layout "custom" is missing or lacks columns: run \`settle-ingest migrate\``),
    );

    const sql = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger, '--print-sql']);
    expect(sql.status).toBe(0);
    expect(sql.stdout).toContain(`ALTER TABLE "settle"."${table}" ADD COLUMN "amount" numeric(18, 2);`);
    const cols = () =>
      db.client.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'settle' AND table_name = $1 ORDER BY 1`, [
        table,
      ]);
    expect((await cols()).rows.map((c) => c.column_name)).not.toContain('amount');

    const m = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
    expect(m.stdout).toMatch(new RegExp(`table settle\\.${table} given 1 new column\\(s\\)`));
    expect((await cols()).rows.map((c) => c.column_name)).toContain('amount');
    const r = await run();
    expect(r.summary).toMatchObject({ loaded: 1, rows: 2 });
    const rows = await db.client.query(`SELECT ref, amount::text FROM settle.${table} ORDER BY ref`);
    expect(rows.rows).toEqual([
      { ref: 'A-1', amount: null },
      { ref: 'A-2', amount: '1.50' },
      { ref: 'A-3', amount: null },
    ]);
  });

  it('widens a table whose layout now keeps a rate as written and lets a column be empty, rewriting no row', async () => {
    const table = `widen_${Date.now().toString(36)}`;
    const before = {
      table,
      columns: [
        { name: 'ref', type: 'text' },
        { name: 'rate', type: 'decimal', scale: 10 },
        { name: 'note', type: 'text' },
      ],
      naturalKey: 'ref',
    };
    const { ws, config, run } = await layoutWorkspace(before, 'widen_*.csv');
    await ws.put('widen_1.csv', 'ref,rate,note\nR-1,1.5,first\n');
    expect((await run()).summary).toMatchObject({ loaded: 1 });
    const after = {
      ...before,
      columns: [before.columns[0], { name: 'rate', type: 'decimal', scale: 'asWritten' }, { name: 'note', type: 'text', required: false }],
    };
    await writeFile(config, JSON.stringify({ layout: after, pattern: 'widen_*.csv' }));
    const sql = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger, '--print-sql']);
    expect(sql.stdout).toContain(`ALTER TABLE "settle"."${table}" ALTER COLUMN "rate" TYPE numeric;`);
    expect(sql.stdout).toContain(`ALTER TABLE "settle"."${table}" ALTER COLUMN "note" DROP NOT NULL;`);
    const m = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
    expect(m.stdout).toMatch(new RegExp(`table settle\\.${table} 2 column\\(s\\) widened`));
    await ws.put('widen_2.csv', 'ref,rate,note\nR-2,0.006733333333333,\n');
    expect((await run()).summary).toMatchObject({ loaded: 1, rows: 1 });
    const rows = await db.client.query(`SELECT ref, rate::text, note FROM settle.${table} ORDER BY ref`);
    expect(rows.rows).toEqual([
      { ref: 'R-1', rate: '1.5000000000', note: 'first' },
      { ref: 'R-2', rate: '0.006733333333333', note: null },
    ]);
  });

  it.each([
    [{ columns: [{ name: 'id', type: 'text' }], naturalKey: 'id', delimiter: ':' }, /layout "delimiter" must be one of/],
    [
      { columns: [{ name: 'id', type: 'text' }], naturalKey: 'id', decimalMark: ',', groupSeparator: ',' },
      /"groupSeparator" and "decimalMark" must differ/,
    ],
    [
      {
        columns: [
          { name: 'at', type: 'timestamp' },
          { name: 'id', type: 'text' },
        ],
        naturalKey: 'id',
      },
      /column "at": a timestamp needs "timeZone"/,
    ],
    [
      { columns: [{ name: 'at', type: 'date', format: 'dd/QQ/yyyy' }], naturalKey: 'at' },
      /column "at": "format" has "QQ", which is not a token it reads/,
    ],
    [
      { columns: [{ name: 'id', type: 'text' }], naturalKey: 'id', trailer: { firstField: 'Total', sumField: 3, sumOf: 'id' } },
      /trailer: "sumOf" must name a decimal column/,
    ],
    [{ columns: [{ name: 'id', type: 'text' }], naturalKey: 'id', colums: [] }, /layout key "colums" is unknown/],
    [
      'adyen',
      /layout "adyen" is not a preset \(presets: default, adyen-settlement-details, adyen-payments-accounting, stripe-itemized-payout-reconciliation, /,
    ],
  ])('refuses a bad layout in the config file with exit 2, naming the key (%#)', async (layout, message) => {
    const ws = await Workspace.create(db.url);
    const config = join(ws.root, 'bad.json');
    await writeFile(config, JSON.stringify({ layout }));
    await ws.put('settle_20261101_a01.csv', 'id\nX\n');
    const r = await ws.run(['--config', config]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`${config}: "layout"`);
    expect(await ws.files('intake')).toEqual(['settle_20261101_a01.csv']);
  });
});

describe('a "no activity" day', () => {
  it('archives a file with a header and no rows as loaded with 0 rows, also when its bytes equal an earlier empty file’s', async () => {
    const own = await financeDatabase(); // audit looks at the whole finance database
    onTestFinished(() => own.close());
    const ws = await Workspace.create(own.url);
    const empty = 'settlement_date,transaction_id,merchant_id,card_brand,transaction_type,gross_amount,fee_amount,net_amount,currency\n';
    await ws.put('settle_20261128_a01.csv', empty);
    const first = await ws.run();
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, skipped: 0, rows: 0 });
    await ws.put('settle_20261129_a01.csv', empty);
    await ws.put('settle_20261130_a01.csv', empty);
    const next = await ws.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 2, skipped: 0, rows: 0 });
    expect(await ws.files('archive')).toEqual(['settle_20261128_a01.csv', 'settle_20261129_a01.csv', 'settle_20261130_a01.csv']);
    expect(await ws.files('duplicates')).toEqual([]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([
      ['settle_20261128_a01.csv', 'loaded'],
      ['settle_20261129_a01.csv', 'loaded'],
      ['settle_20261130_a01.csv', 'loaded'],
    ]);
    // the same name and bytes again is a resend of that very file
    await ws.put('settle_20261130_a01.csv', empty);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 0, skipped: 1 });
    const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger]);
    expect(audit.status, audit.stdout).toBe(0);
  });
});
