import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// A statement's figures after its rows (issue 46.6): an Alipay-style export whose footer states
// its count and totals, loaded through the CLI into a real PostgreSQL. The footer is checked at
// the end of the stream, inside the load's transaction: a disagreement leaves nothing loaded.

const db = sharedFinanceDatabase();
const STATEMENTS = fileURLToPath(new URL('../../fixtures/statements/', import.meta.url));
const text = (name: string) => readFile(join(STATEMENTS, name), 'utf8');
const bytes = (name: string) => readFile(join(STATEMENTS, name));
const layoutOf = async (config: string) => (JSON.parse(await text(config)) as { layout: Record<string, unknown> }).layout;
const count = async (table: string) => (await db.client.query<{ n: number }>(`SELECT count(*)::int AS n FROM settle.${table}`)).rows[0]!.n;
const NAME = 'alipay_20261201-20261231.csv';
const FOOTER_START = '#-----------------------------------------账务明细列表结束';

async function alipayWorkspace(table: string, change: Record<string, unknown> = {}) {
  return Workspace.forLayout(db.url, { ...(await layoutOf('alipay-ledger.config.json')), table, ...change }, 'alipay_*.csv');
}

describe('an export whose footer states its count and totals', () => {
  it('loads the rows whose footer agrees, and never a footer line as a row; check shows the lines set aside and each figure proved', async () => {
    const { ws, config } = await alipayWorkspace('alipay_footer_ok');
    const bill = await text(NAME);
    const outside = join(ws.root, NAME);
    await writeFile(outside, bill);
    const checked = await ws.cli(['check', '--config', config, outside]);
    expect(checked.status).toBe(0);
    expect(checked.stdout.trim()).toBe(
      `${outside}: ok, 11 rows; lines 17 to 21 set aside as the footer: "#-----------------------------------------账务明细列表结束------------------------------…", "#共11笔记录", "#收入合计：5笔，1234.50元", "#支出合计：6笔，321.40元", "#导出时间：[2027年01月02日 10:15:42]    用户：示例商户"; ` +
        'statement agrees (11 rows): count 11 = stated_rows "11" (line 18), credit 1234.50 = stated_income "1234.50" (line 19), debit 321.40 = stated_expense "321.40" (line 20)',
    );
    const json = JSON.parse((await ws.cli(['check', '--config', config, outside, '--json'])).stdout) as {
      files: { footer: unknown; figures: unknown[] }[];
    };
    expect(json.files[0]!.footer).toMatchObject({ first_line: 17, last_line: 21, lines: 5 });
    expect(json.files[0]!.figures).toEqual([
      { name: 'stated_rows', value: '11', line: 18, where: 'line 18' },
      { name: 'stated_income', value: '1234.50', line: 19, where: 'line 19' },
      { name: 'stated_expense', value: '321.40', line: 20, where: 'line 20' },
    ]);

    await ws.put(NAME, bill);
    const ran = await ws.run(['--config', config, '--json']);
    expect(ran.status).toBe(0);
    const doc = JSON.parse(ran.stdout) as { loaded: number; files: { rows: number; totals: { agrees: string }[] }[] };
    expect(doc.loaded).toBe(1);
    expect(doc.files[0]!.rows).toBe(11);
    expect(doc.files[0]!.totals[0]!.agrees).toMatch(/^count 11 = stated_rows "11" \(line 18\)/);
    expect(await ws.files('archive')).toEqual([NAME]);
    const rows = await db.client.query<{ ledger_id: string; credit: string | null; debit: string | null; source_line: number }>(
      'SELECT ledger_id, credit::text, debit::text, source_line FROM settle.alipay_footer_ok ORDER BY source_line',
    );
    expect(rows.rows).toHaveLength(11);
    expect(rows.rows.map((r) => r.source_line)).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    expect(rows.rows.some((r) => r.ledger_id.startsWith('#'))).toBe(false);
    const sums = await db.client.query<{ credit: string; debit: string }>(
      'SELECT sum(credit)::text AS credit, sum(debit)::text AS debit FROM settle.alipay_footer_ok',
    );
    expect(sums.rows[0]).toEqual({ credit: '1234.50', debit: '321.40' });
    const loaded = ws.events().find((e) => e.event === 'loaded')!;
    expect(loaded.details.totals).toEqual(doc.files[0]!.totals);
  });

  it.each([
    [
      'its count',
      (bill: string) => bill.replace('#共11笔记录', '#共13笔记录'),
      'line 18, statement: stated_rows says 13 rows, the file has 11',
    ],
    [
      'its total',
      (bill: string) => bill.replace('#支出合计：6笔，321.40元', '#支出合计：6笔，312.40元'),
      'line 20, statement: stated_expense "312.40" (line 20) says the debit total 312.40, the rows add up to 321.40',
    ],
  ])('rejects the file whose footer disagrees with %s: nothing loaded, the file in rejected/, exit 1', async (_what, change, reason) => {
    const table = `alipay_footer_${_what.replace(/\W/g, '_')}`;
    const { ws, config } = await alipayWorkspace(table);
    const bad = change(await text(NAME));
    await ws.put(NAME, bad);
    const ran = await ws.run(['--config', config]);
    expect(ran.status).toBe(1);
    expect(parseSummary(ran.stdout)).toMatchObject({ loaded: 0, rejected: 1, rows: 0 });
    expect(await ws.files('rejected')).toEqual([NAME]);
    expect(await ws.files('intake')).toEqual([]);
    expect((await ws.read('rejected', NAME)).toString()).toBe(bad);
    expect(await count(table)).toBe(0);
    expect(ws.ledgerFile(NAME)!.state).toBe('rejected');
    expect(ws.events().find((e) => e.event === 'rejected')!.details.reason).toContain(reason);
    const marker = await db.client.query('SELECT 1 FROM settle.file_loads WHERE target_table = $1', [table]);
    expect(marker.rowCount).toBe(0);
  });

  it('leaves a file cut before its footer in the intake as not ready, then rejects it as incomplete naming what it expected, nothing loaded', async () => {
    const { ws, config } = await alipayWorkspace('alipay_footer_cut');
    const bill = await text(NAME);
    const cut = bill.slice(0, bill.indexOf(FOOTER_START));
    await ws.put(NAME, cut);
    const first = await ws.run(['--config', config, '--max-waiting-runs', '1', '--json']);
    const firstDoc = JSON.parse(first.stdout) as { not_ready: number; files: { outcome: string; reason?: string; error?: string }[] };
    expect(firstDoc.not_ready).toBe(1);
    expect(JSON.stringify(firstDoc.files[0])).toContain('no footer (a line after the rows matching /^#-+账务明细列表结束/) yet');
    expect(await ws.files('intake')).toEqual([NAME]);
    expect(ws.ledgerFile(NAME)).toBeUndefined();
    const second = await ws.run(['--config', config, '--max-waiting-runs', '1', '--json']);
    expect(second.status).toBe(1);
    const file = (JSON.parse(second.stdout) as { files: { outcome: string; error: string }[] }).files[0]!;
    expect(file.outcome).toBe('rejected');
    expect(file.error).toBe(
      'the file ends at line 16 without its footer (a line after the rows matching /^#-+账务明细列表结束/): it is incomplete',
    );
    expect(await ws.files('rejected')).toEqual([NAME]);
    expect(await count('alipay_footer_cut')).toBe(0);
    // check says so at once, in the same words
    const checked = await ws.cli(['check', '--config', config, join(ws.root, 'rejected', NAME)]);
    expect(checked.status).toBe(1);
    expect(checked.stdout).toContain(`rejected: ${file.error}`);
  });

  it('waits for a footer cut before its totals too: the footer is there, the figures it must state are not yet', async () => {
    const { ws, config } = await alipayWorkspace('alipay_footer_half');
    // bytes of its own: the same content loaded by another test is a resend
    const bill = (await text(NAME)).replace('用户：示例商户', '用户：半途商户');
    await ws.put(NAME, bill.slice(0, bill.indexOf('#收入合计')));
    const first = await ws.run(['--config', config, '--max-waiting-runs', '1']);
    expect(parseSummary(first.stdout)).toMatchObject({ not_ready: 1, rejected: 0 });
    await ws.put(NAME, bill);
    const whole = await ws.run(['--config', config, '--max-waiting-runs', '1']);
    expect(whole.status).toBe(0);
    expect(parseSummary(whole.stdout)).toMatchObject({ loaded: 1, rows: 11 });
    expect(await count('alipay_footer_half')).toBe(11);
  });

  it('loads a GB18030 export by its footer, and rejects one whose footer total disagrees, nothing loaded', async () => {
    const { ws, config } = await alipayWorkspace('alipay_footer_gb', { encoding: 'gb18030' });
    const good = await bytes('alipay_gb18030_20261201-20261231.csv');
    // the figures are ASCII in GB18030 as in UTF-8: changed byte for byte
    const bad = Buffer.from(good.toString('latin1').replace('1234.50', '1234.60'), 'latin1');
    expect(bad.equals(good)).toBe(false);
    await ws.put('alipay_gb_bad.csv', bad);
    const refused = await ws.run(['--config', config]);
    expect(refused.status).toBe(1);
    expect(await ws.files('rejected')).toEqual(['alipay_gb_bad.csv']);
    expect(await count('alipay_footer_gb')).toBe(0);
    expect(ws.events().find((e) => e.event === 'rejected')!.details.reason).toContain(
      'stated_income "1234.60" (line 19) says the credit total 1234.60, the rows add up to 1234.50',
    );
    await ws.put('alipay_gb_good.csv', good);
    const loaded = await ws.run(['--config', config]);
    expect(loaded.status).toBe(0);
    expect(parseSummary(loaded.stdout)).toMatchObject({ loaded: 1, rows: 11 });
    const items = await db.client.query<{ item: string }>('SELECT item FROM settle.alipay_footer_gb ORDER BY source_line LIMIT 2');
    expect(items.rows.map((r) => r.item)).toEqual(['会员费', '服务费']);
  });

  it('loads a bank statement whose last line is its footer (its opening balance), bridged to the closing balance above the rows', async () => {
    const layout = { ...(await layoutOf('releve-footer.config.json')), table: 'releve_footer' };
    const { ws, config } = await Workspace.forLayout(db.url, layout, 'releve_*.csv');
    const releve = await text('releve_2026-12.csv');
    await ws.put('releve_2026-11.csv', releve.replace('500,00', '499,00'));
    const refused = await ws.run(['--config', config]);
    expect(refused.status).toBe(1);
    expect(await count('releve_footer')).toBe(0);
    await ws.put('releve_2026-12.csv', releve);
    const loaded = await ws.run(['--config', config]);
    expect(loaded.status).toBe(0);
    expect(parseSummary(loaded.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    const labels = await db.client.query<{ label: string }>('SELECT label FROM settle.releve_footer ORDER BY source_line');
    expect(labels.rows.map((r) => r.label)).toEqual(['VIREMENT RECU', 'PAIEMENT CB', 'RETRAIT DAB']);
  });
});
