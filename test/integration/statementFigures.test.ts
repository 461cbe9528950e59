import { readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// Statement figures (issue 46.6), 12-hour clocks and yearless dates (46.7) and dLocal's settlement
// currency (44.9), end to end: the built CLI, a real PostgreSQL, files in folders, exit statuses.

const db = sharedFinanceDatabase();
const STATEMENTS = fileURLToPath(new URL('../../fixtures/statements/', import.meta.url));
const fixture = (name: string) => readFile(join(STATEMENTS, name), 'utf8');
const layoutOf = async (config: string) => (JSON.parse(await fixture(config)) as { layout: Record<string, unknown> }).layout;
const count = async (table: string) => (await db.client.query<{ n: number }>(`SELECT count(*)::int AS n FROM settle.${table}`)).rows[0]!.n;

describe('a statement proves the figures its preamble states before a row is loaded', () => {
  it('rejects a WeChat bill whose "共N笔记录" disagrees with nothing loaded, then loads the one that agrees with its totals kept', async () => {
    const layout = { ...(await layoutOf('wechat-bill.config.json')), table: 'wechat_figures' };
    const { ws, config } = await Workspace.forLayout(db.url, layout, 'wechat_bill_*.csv');
    const bill = await fixture('wechat_bill_20261201-20261231.csv');

    await ws.put('wechat_bill_20261201-20261231.csv', bill.replace('共6笔记录', '共66笔记录'));
    const refused = await ws.run(['--config', config, '--json']);
    expect(refused.status).toBe(1);
    const refusedDoc = JSON.parse(refused.stdout) as { rejected: number; files: { error: string }[] };
    expect(refusedDoc.rejected).toBe(1);
    expect(refusedDoc.files[0]!.error).toContain('line 7, statement: stated_rows says 66 rows, the file has 6');
    expect(await ws.files('rejected')).toEqual(['wechat_bill_20261201-20261231.csv']);
    expect(await ws.files('intake')).toEqual([]);
    expect(await count('wechat_figures')).toBe(0);
    expect(ws.ledgerFile('wechat_bill_20261201-20261231.csv')!.state).toBe('rejected');

    // `check` says the same of the same bytes, exit 1
    const checkedBad = await ws.cli(['check', '--config', config, join(ws.root, 'rejected', 'wechat_bill_20261201-20261231.csv')]);
    expect(checkedBad.status).toBe(1);
    expect(checkedBad.stdout).toContain('stated_rows says 66 rows, the file has 6');

    await ws.put('wechat_bill_20261201-20261231_resent.csv', bill);
    const loaded = await ws.run(['--config', config, '--json']);
    expect(loaded.status).toBe(0);
    const doc = JSON.parse(loaded.stdout) as { files: { rows: number; totals: unknown[] }[] };
    expect(doc.files[0]).toMatchObject({
      rows: 6,
      totals: [
        {
          total: 'statement',
          group: '',
          rows: 6,
          agrees:
            'count 6 = stated_rows "6" (line 7), credits of amount 520.00 = stated_income "520.00" (line 8), debits of amount 96.50 = stated_expense "96.50" (line 9)',
        },
      ],
    });
    expect(await ws.files('archive')).toEqual(['wechat_bill_20261201-20261231_resent.csv']);
    const rows = await db.client.query<{ amount: string; booked_at: string }>(
      `SELECT amount::text, to_char(booked_at AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM-DD HH24:MI:SS') AS booked_at
         FROM settle.wechat_figures ORDER BY source_line`,
    );
    expect(rows.rows.map((r) => r.amount)).toEqual(['-32.00', '-32.00', '300.00', '120.00', '-32.50', '100.00']);
    expect(rows.rows[0]!.booked_at).toBe('2026-12-30 18:50:12');
  });

  it('rejects a bank statement whose rows do not bridge its opening and closing balances, and loads one that does, its yearless 12-hour times placed', async () => {
    const layout = { ...(await layoutOf('checking-statement.config.json')), table: 'checking_figures' };
    const { ws, config } = await Workspace.forLayout(db.url, layout, 'checking_*.csv');
    const statement = await fixture('checking_2026-12.csv');

    await ws.put('checking_2026-12.csv', statement.replace('Closing balance: $1,284.65', 'Closing balance: $1,294.65'));
    const refused = await ws.run(['--config', config]);
    expect(refused.status).toBe(1);
    expect(parseSummary(refused.stdout)).toMatchObject({ loaded: 0, rejected: 1 });
    expect(await ws.files('rejected')).toEqual(['checking_2026-12.csv']);
    expect(await count('checking_figures')).toBe(0);
    const reason = ws.events().find((e) => e.event === 'rejected')!.details.reason;
    expect(reason).toContain(
      'the rows do not bridge the balances: opening_balance "1,000.00" (line 3) + the amount of 5 rows 284.65 = 1284.65, but closing_balance "1,294.65" (line 4) says 1294.65',
    );

    // a name that states no year: the year is not guessed, the file is rejected
    await ws.put('checking_dec.csv', statement);
    const noYear = await ws.run(['--config', config]);
    expect(noYear.status).toBe(1);
    expect(await ws.files('rejected')).toEqual(['checking_2026-12.csv', 'checking_dec.csv']);

    await ws.put('checking_2026-12.csv', statement);
    const loaded = await ws.run(['--config', config]);
    expect(loaded.status).toBe(0);
    expect(parseSummary(loaded.stdout)).toMatchObject({ loaded: 1, rows: 5 });
    const rows = await db.client.query<{ posted_at: string; amount: string }>(
      `SELECT to_char(posted_at AT TIME ZONE 'America/New_York', 'YYYY-MM-DD HH24:MI') AS posted_at, amount::text
         FROM settle.checking_figures ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      { posted_at: '2026-12-01 09:05', amount: '1500.00' },
      { posted_at: '2026-12-03 12:30', amount: '-950.00' },
      { posted_at: '2026-12-15 18:50', amount: '-4.35' },
      { posted_at: '2026-12-29 23:59', amount: '-260.00' },
      { posted_at: '2026-12-31 00:05', amount: '-1.00' },
    ]);
  });
});

describe('dates without a year take the delivery’s', () => {
  it('December rows delivered on 3 January are last year’s, January rows this year’s; reprocessing later reads the same dates', async () => {
    const layout = { ...(await layoutOf('wallet-export.config.json')), table: 'wallet_figures' };
    const { ws, config } = await Workspace.forLayout(db.url, layout, 'wallet_export*.csv');
    const path = await ws.put('wallet_export.csv', await fixture('wallet_export.csv'));
    const delivered = new Date('2026-01-03T02:00:00Z');
    await utimes(path, delivered, delivered);
    // check takes the file's own time as its delivery, as the run will
    const checked = await ws.cli(['check', '--config', config, path, '--json']);
    expect(checked.status).toBe(0);
    expect(checked.stdout).toContain('"outcome":"ok"');
    const noon = join(ws.root, 'wallet_export_noon.csv');
    await writeFile(noon, (await fixture('wallet_export.csv')).replace('下午 06:50:12', '中午 06:50:12'));
    const refusedCheck = await ws.cli(['check', '--config', config, noon]);
    expect(refusedCheck.status).toBe(1);
    expect(refusedCheck.stdout).toContain(
      'line 3, field booked_at: "12-29" with booked_time "中午 06:50:12" is not a time stamp (MM-dd a hh:mm:ss)',
    );
    const loaded = await ws.run(['--config', config]);
    expect(loaded.status).toBe(0);
    expect(parseSummary(loaded.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    const booked = async () =>
      (
        await db.client.query<{ booked_at: string }>(
          `SELECT to_char(booked_at AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM-DD HH24:MI:SS') AS booked_at FROM settle.wallet_figures ORDER BY source_line`,
        )
      ).rows.map((r) => r.booked_at);
    expect(await booked()).toEqual(['2025-12-29 18:50:12', '2025-12-31 09:03:44', '2026-01-02 00:15:00']);

    // the archived copy touched today: the reload still takes the delivery's day the ledger kept
    const archived = join(ws.archive, 'wallet_export.csv');
    const today = new Date();
    await utimes(archived, today, today);
    const reprocessed = await ws.reprocess(config, 'wallet_export.csv', 'dates checked, ticket FIN-46');
    expect(reprocessed.status).toBe(0);
    expect(await booked()).toEqual(['2025-12-29 18:50:12', '2025-12-31 09:03:44', '2026-01-02 00:15:00']);
  });
});

describe('the dlocal-settlement-report preset keeps the HEADER’s settlement currency', () => {
  it('loads every row with its settlement_currency, and rejects a report whose row names another, with nothing loaded', async () => {
    const { ws, config } = await Workspace.forLayout(
      db.url,
      { extends: 'dlocal-settlement-report', table: 'dlocal_currency' },
      '*_Settlement_Reports_*.csv',
    );
    const good = await readFile(fileURLToPath(new URL('../../fixtures/Example_Settlement_Reports_20260314.csv', import.meta.url)), 'utf8');
    const lines = good.split('\n');
    lines[2] = `${lines[2]},SETTLEMENT_CURRENCY`;
    for (let i = 3; i < lines.length; i++) if (lines[i]) lines[i] = `${lines[i]},${i === 4 ? 'EUR' : 'USD'}`;
    await ws.put('Example_Settlement_Reports_20260314.csv', lines.join('\n'));
    const refused = await ws.run(['--config', config, '--json']);
    expect(refused.status).toBe(1);
    const refusedDoc = JSON.parse(refused.stdout) as { files: { error: string }[] };
    expect(refusedDoc.files[0]!.error).toContain(
      'line 5, field settlement_currency: "EUR" is not the file\'s settlement_currency "USD" (line 2, HEADER field 2)',
    );
    expect(await ws.files('rejected')).toEqual(['Example_Settlement_Reports_20260314.csv']);
    expect(await count('dlocal_currency')).toBe(0);

    await ws.put('Example_Settlement_Reports_20260315.csv', good.replace('HEADER,USD,', 'HEADER,EUR,'));
    const loaded = await ws.run(['--config', config]);
    expect(loaded.status).toBe(0);
    const currencies = await db.client.query<{ settlement_currency: string; n: number }>(
      'SELECT settlement_currency, count(*)::int AS n FROM settle.dlocal_currency GROUP BY 1',
    );
    expect(currencies.rows).toEqual([{ settlement_currency: 'EUR', n: 5 }]);
  });
});
