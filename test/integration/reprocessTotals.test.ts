import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// `run --reprocess` proves a file's control totals as a run does, and the ledger keeps what the
// fresh load proved: the totals `audit` reports are those of the rows now in the table.

const db = sharedFinanceDatabase();
const NAME = 'settlement_detail_report_batch_42.csv';
const sample = async () =>
  (await readFile(fileURLToPath(new URL(`../../fixtures/${NAME}`, import.meta.url)), 'utf8')).replaceAll('order-100', 'order-320');
const BALANCE = { total: 'balance', group: 'batch_number 42, net_currency EUR', rows: 5, agrees: 'nets to 0.00 with its MerchantPayout' };

interface ReprocessDocument {
  reprocessed: number;
  rejected: number;
  files: { name: string; outcome: string; rows: number; totals?: unknown[]; error?: string }[];
}

describe('run --reprocess and control totals', () => {
  it('keeps the totals the fresh load proved, clears them when the layout states none, and refuses a file its new rule finds off', async () => {
    const { ws, config } = await Workspace.forLayout(
      db.url,
      { extends: 'adyen-settlement-details', table: 'adyen_reprocess_totals', totals: null },
      'settlement_detail_report_batch_*.csv',
    );
    const setLayout = (layout: Record<string, unknown>) =>
      writeFile(
        config,
        JSON.stringify({
          layout: { extends: 'adyen-settlement-details', table: 'adyen_reprocess_totals', ...layout },
          pattern: 'settlement_detail_report_batch_*.csv',
        }),
      );
    const kept = () => ws.query<{ totals: string | null }>('SELECT totals FROM processed_files WHERE name = ?', NAME)[0]!.totals;
    const reprocess = async (extra: string[] = []) => {
      const r = await ws.reprocess(config, NAME, 'totals now checked, ticket FIN-7', ['--json', ...extra]);
      return { status: r.status, doc: JSON.parse(r.stdout) as ReprocessDocument };
    };

    // loaded under a layout that states no totals: the ledger keeps none
    await ws.put(NAME, await sample());
    const first = await ws.run(['--config', config]);
    expect(first.status).toBe(0);
    expect(kept()).toBeNull();

    // a dry run with the preset's rule says what it would prove, and keeps nothing
    await setLayout({});
    const dry = await reprocess(['--dry-run']);
    expect(dry.status).toBe(0);
    expect(dry.doc.files).toEqual([expect.objectContaining({ name: NAME, outcome: 'would-reprocess', rows: 3, totals: [BALANCE] })]);
    expect(kept()).toBeNull();

    // reprocessed with it: the balance is proved and kept with the load, and audit reports it
    const proved = await reprocess();
    expect(proved.status).toBe(0);
    expect(proved.doc.files).toEqual([expect.objectContaining({ name: NAME, outcome: 'reprocessed', rows: 3, totals: [BALANCE] })]);
    expect(JSON.parse(kept()!)).toEqual([BALANCE]);
    const event = ws.events().find((e) => e.event === 'reprocessed')!;
    expect(event.details.totals).toEqual([BALANCE]);
    const audit = await ws.cli(['audit', '--config', config, '--intake', ws.intake, '--ledger', ws.ledger, '--json']);
    expect((JSON.parse(audit.stdout) as { balanced: { file: string; totals: unknown[] }[] }).balanced).toEqual([
      expect.objectContaining({ file: NAME, totals: [BALANCE] }),
    ]);

    // a rule the archived file does not meet (the payout left out): refused, rows and totals as they were
    await setLayout({ totals: [{ rule: 'balance', groupBy: ['batch_number', 'net_currency'], sum: ['net_credit'] }] });
    const refused = await reprocess();
    expect(refused.status).toBe(1);
    expect(refused.doc.files).toEqual([expect.objectContaining({ name: NAME, outcome: 'rejected' })]);
    expect(refused.doc.files[0]!.error).toMatch(/batch_number 42, net_currency EUR: nets to/);
    expect(JSON.parse(kept()!)).toEqual([BALANCE]);
    expect((await db.client.query('SELECT count(*)::int AS n FROM settle.adyen_reprocess_totals')).rows[0].n).toBe(3);

    // reprocessed under a layout that states none: the kept totals are cleared, not left stale
    await setLayout({ totals: null });
    const cleared = await reprocess();
    expect(cleared.status).toBe(0);
    expect(cleared.doc.files[0]).not.toHaveProperty('totals');
    expect(kept()).toBeNull();
  });
});
