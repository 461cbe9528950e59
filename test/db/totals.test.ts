import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const sample = () => readFile(fileURLToPath(new URL('../../fixtures/settlement_detail_report_batch_42.csv', import.meta.url)), 'utf8');

describe('a file proves its own totals before a row is loaded', () => {
  it('rejects an Adyen batch one cent off with nothing loaded, then loads the balanced batch with its totals kept', async () => {
    const ws = await Workspace.create(db.url);
    const config = join(ws.root, 'partner.json');
    // a table of its own: the other tests' loads of the sample stay out of the way
    await writeFile(
      config,
      JSON.stringify({
        layout: { extends: 'adyen-settlement-details', table: 'adyen_totals' },
        pattern: 'settlement_detail_report_batch_*.csv',
      }),
    );
    const migrated = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
    expect(migrated.status).toBe(0);
    await db.client.query('TRUNCATE settle.adyen_totals');
    const balanced = (await sample()).replaceAll('order-100', 'order-310');

    // one payment's net credit one cent higher: the batch no longer nets to zero with its payout
    const offByACent = balanced.replace(',98.05,', ',98.06,');
    expect(offByACent).not.toBe(balanced);
    await ws.put('settlement_detail_report_batch_42.csv', offByACent);
    const refused = await ws.run(['--config', config]);
    expect(refused.status).toBe(1);
    expect(parseSummary(refused.stdout)).toMatchObject({ loaded: 0, rejected: 1 });
    expect(await ws.files('rejected')).toEqual(['settlement_detail_report_batch_42.csv']);
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.adyen_totals')).rows[0].n).toBe(0);
    const rejected = ws.ledgerFile('settlement_detail_report_batch_42.csv')!;
    expect(rejected.state).toBe('rejected');
    const reason = ws.events().find((e) => e.event === 'rejected')!.details.reason;
    expect(reason).toMatch(/batch_number 42, net_currency EUR: nets to 0\.01 with its MerchantPayout, not 0\.00/);

    await ws.put('settlement_detail_report_batch_42_fixed.csv', balanced);
    const loaded = await ws.run(['--config', config, '--json']);
    expect(loaded.status).toBe(0);
    const summary = JSON.parse(loaded.stdout) as { loaded: number; files: { name: string; rows: number; totals?: unknown[] }[] };
    expect(summary.loaded).toBe(1);
    expect(summary.files).toEqual([
      expect.objectContaining({
        name: 'settlement_detail_report_batch_42_fixed.csv',
        rows: 3,
        totals: [{ total: 'balance', group: 'batch_number 42, net_currency EUR', rows: 5, agrees: 'nets to 0.00 with its MerchantPayout' }],
      }),
    ]);
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.adyen_totals')).rows[0].n).toBe(3);
    const event = ws.events().find((e) => e.event === 'loaded' && e.name === 'settlement_detail_report_batch_42_fixed.csv')!;
    expect(event.details.totals).toEqual([
      { total: 'balance', group: 'batch_number 42, net_currency EUR', rows: 5, agrees: 'nets to 0.00 with its MerchantPayout' },
    ]);
    const kept = ws.query<{ totals: string }>(
      'SELECT totals FROM processed_files WHERE name = ?',
      'settlement_detail_report_batch_42_fixed.csv',
    );
    expect(JSON.parse(kept[0]!.totals)).toEqual(event.details.totals);

    // the ledger keeps them with the load: audit says the loaded file balanced
    const auditArgs = ['audit', '--config', config, '--intake', ws.intake, '--ledger', ws.ledger];
    const json = await ws.cli([...auditArgs, '--json']);
    const doc = JSON.parse(json.stdout) as { balanced: { file: string; totals: unknown[] }[] };
    expect(doc.balanced).toEqual([
      expect.objectContaining({ file: 'settlement_detail_report_batch_42_fixed.csv', totals: event.details.totals }),
    ]);
    const text = await ws.cli(auditArgs);
    expect(text.stdout).toContain('settlement_detail_report_batch_42_fixed.csv');
    expect(text.stdout).toMatch(/1 loaded file proved their control totals before loading/);
  });

  it('checks a batch whose payout line writes its Type in another case or padded, and check says when no batch was balanced', async () => {
    const ws = await Workspace.create(db.url);
    const config = join(ws.root, 'partner.json');
    await writeFile(
      config,
      JSON.stringify({
        layout: { extends: 'adyen-settlement-details', table: 'adyen_totals_case' },
        pattern: 'settlement_detail_report_batch_*.csv',
      }),
    );
    expect((await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger])).status).toBe(0);
    const balanced = (await sample()).replaceAll('order-100', 'order-320');
    // the payout line states 999.99 where the batch nets to 317.29, its Type written two other ways
    for (const [name, type] of [
      ['settlement_detail_report_batch_42_lower.csv', 'merchantpayout'],
      ['settlement_detail_report_batch_42_padded.csv', 'MerchantPayout '],
    ] as const) {
      await ws.put(name, balanced.replace(',MerchantPayout,', `,${type},`).replace(',317.29,', ',999.99,'));
    }
    const refused = await ws.run(['--config', config]);
    expect(refused.status).toBe(1);
    expect(parseSummary(refused.stdout)).toMatchObject({ loaded: 0, rejected: 2 });
    expect((await ws.files('rejected')).sort()).toEqual([
      'settlement_detail_report_batch_42_lower.csv',
      'settlement_detail_report_batch_42_padded.csv',
    ]);
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.adyen_totals_case')).rows[0].n).toBe(0);

    // a report cut to a selection without its payout line states nothing: check says so, never "balances"
    const cut = join(ws.root, 'settlement_detail_report_batch_42_cut.csv');
    await writeFile(
      cut,
      balanced
        .split('\n')
        .filter((line) => !line.includes(',MerchantPayout,'))
        .join('\n'),
    );
    const checked = await ws.cli(['check', '--config', config, cut]);
    expect(checked.status).toBe(0);
    expect(checked.stdout).toMatch(
      /ok, 3 rows.*; not checked: no batch_number, net_currency group was balanced: no row has type MerchantPayout/,
    );
    const json = JSON.parse((await ws.cli(['check', '--config', config, '--json', cut])).stdout) as {
      files: { totals?: unknown[]; totals_not_checked?: string[] }[];
    };
    expect(json.files[0]!.totals ?? []).toEqual([]);
    expect(json.files[0]!.totals_not_checked).toEqual(['no batch_number, net_currency group was balanced: no row has type MerchantPayout']);
  });

  it('a file without the summary record its layout says it carries is not ready: left in the intake, nothing claimed', async () => {
    const ws = await Workspace.create(db.url);
    const config = join(ws.root, 'partner.json');
    const layout = {
      table: 'summary_totals',
      leadingRecords: 2,
      columns: [
        { name: 'transaction_id', from: 'TRANSACTION_ID', type: 'text' },
        { name: 'gross_amount', from: 'GROSS_AMOUNT', type: 'decimal' },
      ],
      totals: [{ record: 'HEADER', at: 'top', count: 3, sums: [{ field: 4, of: 'gross_amount' }] }],
    };
    await writeFile(config, JSON.stringify({ layout, pattern: 'summary_*.csv' }));
    expect((await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger])).status).toBe(0);
    await db.client.query('TRUNCATE settle.summary_totals');
    await ws.put('summary_1.csv', 'ROW_TYPE,CURRENCY,ITEMS,GROSS\n');
    const waiting = await ws.run(['--config', config]);
    expect(parseSummary(waiting.stdout)).toMatchObject({ loaded: 0, not_ready: 1 });
    expect(await ws.files('intake')).toEqual(['summary_1.csv']);
    expect(ws.ledgerFile('summary_1.csv')).toBeUndefined();

    await ws.put('summary_1.csv', 'ROW_TYPE,CURRENCY,ITEMS,GROSS\nHEADER,USD,2,3.50\nTRANSACTION_ID,GROSS_AMOUNT\nX1,1.25\nX2,2.25\n');
    const loaded = await ws.run(['--config', config]);
    expect(parseSummary(loaded.stdout)).toMatchObject({ loaded: 1, rows: 2 });
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.summary_totals')).rows[0].n).toBe(2);
  });
});

describe('the dlocal-settlement-report preset, end to end', () => {
  it('refuses a report whose rows add up to a cent less than its HEADER with nothing loaded, and loads the one that agrees', async () => {
    const { ws, config } = await Workspace.forLayout(
      db.url,
      { extends: 'dlocal-settlement-report', table: 'dlocal_totals' },
      '*_Settlement_Reports_*.csv',
    );
    const good = await readFile(fileURLToPath(new URL('../../fixtures/Example_Settlement_Reports_20260314.csv', import.meta.url)), 'utf8');
    const centShort = good.replace(',-0.299255,9.675913,', ',-0.299255,9.665913,');
    expect(centShort).not.toBe(good);

    await ws.put('Example_Settlement_Reports_20260314.csv', centShort);
    const refused = await ws.run(['--config', config, '--json']);
    expect(refused.status).toBe(1);
    const refusedDoc = JSON.parse(refused.stdout) as { rejected: number; files: { error: string }[] };
    expect(refusedDoc.rejected).toBe(1);
    expect(refusedDoc.files[0]!.error).toMatch(/line 2, HEADER: says the net_amount total 12\.80, the rows add up to 12\.79/);
    expect(await ws.files('rejected')).toEqual(['Example_Settlement_Reports_20260314.csv']);
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.dlocal_totals')).rows[0].n).toBe(0);

    await ws.put('Example_Settlement_Reports_20260314_resent.csv', good);
    const loaded = await ws.run(['--config', config, '--json']);
    expect(loaded.status).toBe(0);
    const doc = JSON.parse(loaded.stdout) as { files: { rows: number; totals: unknown[] }[] };
    expect(doc.files[0]).toMatchObject({ rows: 5, totals: [{ total: 'HEADER', group: '', rows: 5 }] });
    const rows = await db.client.query<{ row_type: string; net_amount: string; approved_at: string | null }>(
      `SELECT row_type, net_amount::text, to_char(approved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS approved_at
         FROM settle.dlocal_totals ORDER BY source_line`,
    );
    expect(rows.rows.map((r) => r.row_type)).toEqual(['PAYMENT', 'PAYMENT', 'REFUND', 'ADJUSTMENT', 'SETTLEMENT_FEE']);
    expect(rows.rows[0]).toMatchObject({ net_amount: '19.352228', approved_at: '2026-03-12 14:02:13' });
    expect(rows.rows[4]).toMatchObject({ net_amount: '-5.000000', approved_at: null });
  });
});
