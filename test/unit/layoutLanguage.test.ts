import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import type { Layout } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { PRESETS } from '../../src/layout/model/presets.js';
import { findBadRows, readSettlement } from '../../src/layout/reader/readSettlement.js';
import { MissingTrailerError } from '../../src/layout/reader/trailer.js';
import { zoneInFileName } from '../../src/layout/values/timeZones.js';

/** A synthetic partner file under the given name (the name may carry a zone). */
function file(text: string, name = 'partner.csv'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-layout-')), name);
  writeFileSync(path, text);
  return path;
}

const layout = (raw: unknown) => parseLayout(raw, 'test');

async function values(path: string, l: Layout, fileName?: string) {
  const out: (string | null)[][] = [];
  for await (const row of readSettlement(path, l, fileName !== undefined ? { fileName } : {})) out.push(row.values);
  return out;
}

async function problem(path: string, l: Layout, fileName?: string): Promise<string> {
  const { error } = await findBadRows(path, l, fileName !== undefined ? { fileName } : {});
  if (!error) throw new Error('expected the file to be refused');
  return error.message;
}

const usage = (raw: unknown) => {
  try {
    layout(raw);
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error('expected a usage error');
};

describe('a layout that extends a preset', () => {
  it('changes only what it says: a zone for the report, a column changed, one dropped, a skip rule added', () => {
    const base = PRESETS.get('stripe-itemized-payout-reconciliation')!;
    const l = layout({
      extends: 'stripe-itemized-payout-reconciliation',
      timeZone: 'Europe/Paris',
      columns: { description: { required: true }, charge_id: null, invoice_id: { type: 'text', required: false } },
      skipRows: [{ column: 'reporting_category', values: ['payout'] }],
    });
    expect(l.name).toBe('stripe-itemized-payout-reconciliation (extended)');
    expect([l.table, l.timeZone, l.naturalKey]).toEqual([base.table, 'Europe/Paris', base.naturalKey]);
    expect(l.columns.find((c) => c.name === 'description')?.required).toBe(true);
    expect(l.columns.map((c) => c.name)).not.toContain('charge_id');
    expect(l.columns.at(-1)).toMatchObject({ name: 'invoice_id', from: 'invoice_id', required: false });
    expect(l.columns.find((c) => c.name === 'created_utc')).toEqual(base.columns.find((c) => c.name === 'created_utc'));
    expect(l.skipRows).toEqual([{ column: 'reporting_category', values: ['payout'] }]);
  });

  it('removes a key of the preset set to null: a PayPal fragment cut before its FF trailer reads without it', async () => {
    const base = PRESETS.get('paypal-settlement-report')!;
    expect(base.trailer).toBeDefined();
    const l = layout({ extends: 'paypal-settlement-report', trailer: null });
    expect(l.trailer).toBeUndefined();
    expect([l.table, l.naturalKey, l.columns]).toEqual([base.table, base.naturalKey, base.columns]);
    // the preset itself still refuses the fragment: it waits for the trailer that never comes
    // the shipped sample, cut before its closing FF line as a partner's fragment is
    const sample = readFileSync(new URL('../../fixtures/STL-20260314.01.009.csv', import.meta.url), 'utf8');
    const fragment = file(sample.replace(/FF,3\r?\n?$/, ''));
    expect((await findBadRows(fragment, base)).error).toBeInstanceOf(MissingTrailerError);
    expect((await findBadRows(fragment, l)).error).toBeNull();
  });

  it('names the mistake: an unknown preset, dropping a column the preset lacks', () => {
    expect(usage({ extends: 'stripe' })).toMatch(/^test: layout "stripe" is not a preset \(presets: default, adyen-settlement-details/);
    expect(usage({ extends: 'default', columns: { nothing: null } })).toBe(
      'test: layout columns: "nothing" is not a column of the preset, so it cannot be dropped',
    );
  });
});

describe('a file without a header', () => {
  const l = () =>
    layout({
      header: false,
      columns: [
        { name: 'id', position: 2, type: 'text' },
        { name: 'amount', position: 4, type: 'decimal' },
      ],
      naturalKey: 'id',
    });

  it('takes each column at its position, every row as wide as the first', async () => {
    expect(await values(file('x,A-1,y,10.50\nx,A-2,y,-3.00\n'), l())).toEqual([
      ['A-1', '10.50'],
      ['A-2', '-3.00'],
    ]);
    expect(await problem(file('x,A-1,y,10.50\nx,A-2,y,-3.00,extra\n'), l())).toBe('line 2: expected 4 fields, found 5');
    expect(await problem(file('x,A-1\n'), l())).toBe('line 1: expected at least 4 fields, found 2');
  });

  it("needs every column's position", () => {
    expect(usage({ header: false, columns: [{ name: 'id', type: 'text' }], naturalKey: 'id' })).toMatch(
      /column "id": a layout with "header": false needs each column's "position"/,
    );
  });
});

describe('a file of several record types', () => {
  const stl = () => PRESETS.get('paypal-settlement-report')!;
  const head =
    'CH,Transaction ID,Transaction Event Code,Transaction Initiation Date,Transaction Debit or Credit,Gross Transaction Amount,Gross Transaction Currency,Fee Debit or Credit,Fee Amount';
  const body = (id: string, dc: string, amount: string, fee = 'DR,35') =>
    `SB,${id},T0006,2026/03/14 08:02:11 -0700,${dc},${amount},USD,${fee}`;
  const text = (...lines: string[]) => `\uFEFFRH,2026/03/15 04:10:07 -0700,A,ACCT,009\nSH,x\n${head}\n${lines.join('\n')}\n`;

  it('loads the body records by the header record, signed minor units, info records passed, counts checked', async () => {
    const path = file(
      text(body('T1', 'CR', '12500'), body('T2', 'DR', '7', ','), 'SF,USD,12500,7,0,35', 'SC,2', 'RF,USD,12500,7,0,35', 'RC,2', 'FF,2'),
    );
    const rows = await values(path, stl());
    const at = (name: string) => stl().columns.findIndex((c) => c.name === name);
    expect(rows.map((r) => [r[at('transaction_id')], r[at('gross_amount')], r[at('fee_amount')], r[at('initiated_at')]])).toEqual([
      ['T1', '125.00', '-0.35', '2026-03-14 08:02:11-07:00'],
      ['T2', '-0.07', null, '2026-03-14 08:02:11-07:00'],
    ]);
  });

  it('refuses a count that disagrees, a type it does not know, a body before its header, and an amount without its sign', async () => {
    expect(await problem(file(text(body('T1', 'CR', '1'), 'SC,2', 'FF,1')), stl())).toBe(
      'line 5, SC: says 2 data records, the file has 1 before it',
    );
    expect(await problem(file(text(body('T1', 'CR', '1'), 'ZZ,1', 'FF,1')), stl())).toMatch(
      /^line 5: "ZZ" is not a record type of the layout \(RH, FH, SH, CH, SB/,
    );
    expect(await problem(file(`${body('T1', 'CR', '1')}\nFF,1\n`), stl())).toBe('line 1: a data record (SB) before the header record (CH)');
    expect(await problem(file(text(body('T1', 'XX', '1'), 'FF,1')), stl())).toBe(
      'line 4, field gross_amount: "1" has no sign: transaction_debit_or_credit is "XX", not "DR" or "CR"',
    );
  });

  it('is incomplete without its closing count record: a trailer', async () => {
    const { error } = await findBadRows(file(text(body('T1', 'CR', '1'), 'SC,1')), stl());
    expect(error).toBeInstanceOf(MissingTrailerError);
  });

  it('counts the records of a "skip" type as left out, and reads a file without a header by position', async () => {
    const l = layout({
      header: false,
      recordTypes: { H: 'info', I: 'data', F: 'skip' },
      columns: [
        { name: 'id', position: 2, type: 'text' },
        { name: 'at', position: 3, type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ss.SSSX" },
      ],
      naturalKey: 'id',
    });
    const stats = { skipped: 0 };
    const rows = [];
    for await (const r of readSettlement(file('H,v1\nI,A,2026-03-14T05:50:00.120Z\nI,B,2026-03-14T23:59:59.000Z\nF,payout,1\n'), l, {
      stats,
    }))
      rows.push(r.values);
    expect(rows).toEqual([
      ['A', '2026-03-14 05:50:00.120+00:00'],
      ['B', '2026-03-14 23:59:59.000+00:00'],
    ]);
    expect(stats.skipped).toBe(1);
  });
});

describe('values as partners write them', () => {
  const cols = (columns: unknown[], more: Record<string, unknown> = {}) =>
    layout({ columns: [{ name: 'id', type: 'text' }, ...columns], naturalKey: 'id', ...more });

  it('reads a decimal comma quoted in a comma-separated file, and refuses one unquoted by its width', async () => {
    const l = cols([{ name: 'amount', from: 'Amount', type: 'decimal' }], { decimalMark: ',' });
    expect(await values(file('id,Amount\nA,"-1058,09"\nB,"12,5"\n'), l)).toEqual([
      ['A', '-1058.09'],
      ['B', '12.5'],
    ]);
    expect(await problem(file('id,Amount\nA,-1058,09\n'), l)).toBe(
      'line 2: expected 2 fields, found 3: field 3, past the header\'s, holds "09"',
    );
  });

  it('reads "1,058.09" grouped by the delimiter itself when it is quoted', async () => {
    const l = cols([{ name: 'amount', type: 'decimal' }], { groupSeparator: ',' });
    expect(await values(file('id,amount\nA,"-1,058.09"\n'), l)).toEqual([['A', '-1058.09']]);
  });

  it('reads a leading decimal mark without a zero, and spaces around an amount', async () => {
    const l = cols([{ name: 'amount', type: 'decimal', scale: 4 }]);
    expect(await values(file('id,amount\nA,.11\nB,-.5\nC, 396.00 \n'), l)).toEqual([
      ['A', '0.11'],
      ['B', '-0.5'],
      ['C', '396.00'],
    ]);
    expect(await problem(file('id,amount\nA,5.\n'), l)).toMatch(/"5\." is not a decimal amount/);
  });

  it('keeps a rate with as many places as written', async () => {
    const l = cols([{ name: 'rate', type: 'decimal', scale: 'asWritten' }]);
    expect(await values(file('id,rate\nA,0.006733333333333\nB,1.000000000000000\n'), l)).toEqual([
      ['A', '0.006733333333333'],
      ['B', '1.000000000000000'],
    ]);
  });

  it('reads two-digit years with the POSIX pivot and offsets written as -0800, -08 and Z', async () => {
    const l = cols([
      { name: 'd', type: 'date', format: 'dd/MM/yy' },
      { name: 't', type: 'timestamp', format: 'yyyy/MM/dd HH:mm:ss XX' },
      { name: 'u', type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ssX" },
    ]);
    expect(
      await values(
        file(
          'id,d,t,u\nA,01/04/20,2026/01/06 03:12:28 -0800,2026-01-06T03:12:28Z\nB,31/12/69,2026/07/06 03:12:28 +0530,2026-07-06T03:12:28-08\n',
        ),
        l,
      ),
    ).toEqual([
      ['A', '2020-04-01', '2026-01-06 03:12:28-08:00', '2026-01-06 03:12:28+00:00'],
      ['B', '1969-12-31', '2026-07-06 03:12:28+05:30', '2026-07-06 03:12:28-08:00'],
    ]);
  });

  it('joins a date and a time written apart, in the zone a third column names', async () => {
    const l = cols([
      { name: 'at', from: 'Date', type: 'timestamp', format: 'M/d/yyyy HH:mm:ss', timeFrom: 'time', timeZoneFrom: 'zone' },
      { name: 'time', from: 'Time', type: 'text' },
      { name: 'zone', from: 'Time Zone', type: 'text' },
    ]);
    const rows = await values(
      file(
        'id,Date,Time,Time Zone\nA,3/7/2026,22:40:00,America/Los_Angeles\nB,3/8/2026,03:15:00,America/Los_Angeles\nC,3/9/2026,09:00:00,CET\n',
      ),
      l,
    );
    expect(rows.map((r) => r[1])).toEqual(['2026-03-07 22:40:00-08:00', '2026-03-08 03:15:00-07:00', '2026-03-09 09:00:00+01:00']);
  });

  it('takes the occurrence a layout names of a header text given twice, and refuses to guess', async () => {
    const second = cols([{ name: 'currency', from: 'Settlement Currency', occurrence: 2, type: 'currency' }]);
    expect(await values(file('id,Settlement Currency,x,Settlement Currency\nA,EUR,,usd\n'), second)).toEqual([['A', 'USD']]);
    const unsaid = cols([{ name: 'currency', from: 'Settlement Currency', type: 'currency' }]);
    expect(await problem(file('id,Settlement Currency,Settlement Currency\nA,EUR,USD\n'), unsaid)).toBe(
      'line 1: header names "Settlement Currency" twice (columns 2 and 3): say which with the column\'s "occurrence"',
    );
  });

  it('keeps an empty optional key part as an empty string, never NULL', async () => {
    const l = layout({
      columns: [
        { name: 'psp', type: 'text' },
        { name: 'modification', type: 'text', required: false },
      ],
      naturalKey: ['psp', 'modification'],
    });
    expect(await values(file('psp,modification\nP1,\nP1,M1\n'), l)).toEqual([
      ['P1', ''],
      ['P1', 'M1'],
    ]);
  });
});

describe('skip rules', () => {
  const bank = () =>
    layout({
      columns: [
        { name: 'booked', from: 'Date', type: 'date', format: 'dd/MM/yyyy' },
        { name: 'reference', from: 'Ref', type: 'text' },
        { name: 'amount', from: 'Amount', type: 'decimal' },
      ],
      naturalKey: 'reference',
      skipRows: [
        { column: 'booked', values: ['Closing balance'] },
        { column: 'reference', values: [''] },
      ],
    });

  it('count a short summary line told by its label before its width is looked at', async () => {
    const { rows, skippedRows, error } = await findBadRows(file('Date,Ref,Amount\n01/03/2026,R1,5.00\nClosing balance,5.00\n'), bank());
    expect([rows, skippedRows, error]).toEqual([1, 1, null]);
  });

  it('never take a short line for a summary by an empty field: a line cut short stays a reject', async () => {
    expect(await problem(file('Date,Ref,Amount\n01/03/2026,R1,5.00\n01/03/2026,\n'), bank())).toBe('line 3: expected 3 fields, found 2');
  });
});

describe("a report's own time zone", () => {
  const stripe = () => PRESETS.get('stripe-itemized-balance-change')!;
  const dashboard =
    'balance_transaction_id,created,currency,gross,fee,net,reporting_category\ntxn_1,2026-03-08 01:59:59,usd,10.00,0.59,9.41,charge\ntxn_2,2026-03-08 03:00:00,usd,10.00,0.59,9.41,charge\n';

  it('is the zone the file name ends with, converted across a daylight-saving change', async () => {
    const name = 'Itemized_balance_change_2026-03-08_America-Chicago.csv';
    const rows = await values(file(dashboard, name), stripe(), name);
    expect(rows.map((r) => r[1])).toEqual(['2026-03-08 01:59:59-06:00', '2026-03-08 03:00:00-05:00']);
  });

  it("is the layout's timeZone before the file name's", async () => {
    const l = layout({ extends: 'stripe-itemized-balance-change', timeZone: 'UTC' });
    expect((await values(file(dashboard), l, 'x_America-Chicago.csv'))[0]![1]).toBe('2026-03-08 01:59:59+00:00');
  });

  it('is refused, naming what is missing, when neither gives one; a UTC column needs none', async () => {
    expect(await problem(file(dashboard), stripe(), 'payments_activity.csv')).toBe(
      'line 1: header column "created" (created_utc) is in the report\'s own time zone, and neither the layout\'s "timeZone" nor the file name "payments_activity.csv" (like …_America-Chicago.csv) says which',
    );
    const api = dashboard.replace('created', 'created_utc');
    expect((await values(file(api), stripe(), 'payments_activity.csv'))[0]![1]).toBe('2026-03-08 01:59:59+00:00');
  });

  it('is read from names whose zones hold underscores and dashes, compressed or not', () => {
    expect(zoneInFileName('report_America-New_York.csv.gz')).toBe('America/New_York');
    expect(zoneInFileName('x_America-Argentina-Buenos_Aires.csv')).toBe('America/Argentina/Buenos_Aires');
    expect(zoneInFileName('x_America-Port-au-Prince.csv')).toBe('America/Port-au-Prince');
    expect(zoneInFileName('payments_activity.csv')).toBeUndefined();
  });
});
