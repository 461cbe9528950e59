import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyPresence } from '../../src/finance/keyPresence.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/**
 * A card processor's monthly charges in the shapes of the second corpus (never its bytes): a
 * charge id that repeats every month, so the key is the id AND the time it was created; the
 * time written with a German month name, kept as a timestamp and, read from the same header,
 * as the text the file wrote; the id padded with spaces of several kinds; an optional note
 * that is sometimes only spaces.
 */
const LAYOUT = {
  table: 'monthly_charges',
  delimiter: ';',
  decimalMark: ',',
  locale: 'de',
  columns: [
    { name: 'charge_id', from: 'Charge', type: 'text', trim: true },
    { name: 'created', from: 'Erstellt', type: 'timestamp', format: 'dd. MMM yyyy HH:mm', timeZone: 'Europe/Berlin' },
    { name: 'created_written', from: 'Erstellt', type: 'text' },
    { name: 'booked', from: 'Gebucht', type: 'date', format: 'd. MMMM yyyy' },
    { name: 'amount', from: 'Betrag', type: 'decimal' },
    { name: 'note', from: 'Notiz', type: 'text', required: false },
  ],
  naturalKey: ['charge_id', 'created'],
};

const HEADER = 'Charge;Erstellt;Gebucht;Betrag;Notiz\n';
const CHARGES =
  HEADER +
  ' ch_1 ;03. Feb. 2021 13:12;4. Februar 2021;25,00;erste\n' +
  'ch_1\u00a0;03. März 2021 13:12;4. März 2021;25,00;   \n' +
  '\tch_2;03. Mär 2021 13:12;4. März 2021;7,50;\n' +
  'ch_2\u202f;31. Okt. 2021 12:30;1. November 2021;-7,50;Rückbuchung\n';

async function chargesWorkspace() {
  const ws = await Workspace.create(db.url);
  const config = join(ws.root, 'partner.json');
  await writeFile(config, JSON.stringify({ layout: LAYOUT, pattern: 'charges_*.csv' }));
  const m = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
  expect(m.stderr).toBe('');
  expect(m.status).toBe(0);
  const run = async () => {
    const r = await ws.run(['--config', config, '--json']);
    return {
      status: r.status,
      json: JSON.parse(r.stdout) as Record<string, unknown> & { files: { name: string; outcome: string; error?: string }[] },
    };
  };
  const reprocess = async (name: string) => {
    const r = await ws.reprocess(config, name, 'test', ['--json']);
    return { status: r.status, json: JSON.parse(r.stdout) as Record<string, unknown> };
  };
  return { ws, run, reprocess };
}

describe('month names, padded keys and a timestamp in the natural key, loaded into PostgreSQL', () => {
  it('loads the rows trimmed and typed, keyed by id and instant, and loads nothing twice', async () => {
    await db.client.query('DROP TABLE IF EXISTS settle.monthly_charges');
    const { ws, run, reprocess } = await chargesWorkspace();

    // the table's UNIQUE key holds the timestamptz itself, not a text of it
    const key = await db.client.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_constraint c
         CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
        WHERE c.conrelid = 'settle.monthly_charges'::regclass AND c.contype = 'u'
        ORDER BY k.ord`,
    );
    expect(key.rows).toEqual([
      { name: 'charge_id', type: 'text' },
      { name: 'created', type: 'timestamp with time zone' },
    ]);

    await ws.put('charges_2021.csv', CHARGES);
    const first = await run();
    expect(first.status).toBe(0);
    expect(first.json).toMatchObject({ loaded: 1, rejected: 0, rows: 4 });
    const rows = await db.client.query(
      `SELECT charge_id, to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS utc, created_written, booked::text,
              amount::text, note
         FROM settle.monthly_charges ORDER BY source_line`,
    );
    expect(rows.rows).toEqual([
      {
        charge_id: 'ch_1',
        utc: '2021-02-03 12:12',
        created_written: '03. Feb. 2021 13:12',
        booked: '2021-02-04',
        amount: '25.00',
        note: 'erste',
      },
      // the same id a month later is another row; a note of spaces only is no note
      {
        charge_id: 'ch_1',
        utc: '2021-03-03 12:12',
        created_written: '03. März 2021 13:12',
        booked: '2021-03-04',
        amount: '25.00',
        note: null,
      },
      {
        charge_id: 'ch_2',
        utc: '2021-03-03 12:12',
        created_written: '03. Mär 2021 13:12',
        booked: '2021-03-04',
        amount: '7.50',
        note: null,
      },
      // 31 October is in winter time again (UTC+1)
      {
        charge_id: 'ch_2',
        utc: '2021-10-31 11:30',
        created_written: '31. Okt. 2021 12:30',
        booked: '2021-11-01',
        amount: '-7.50',
        note: 'Rückbuchung',
      },
    ]);

    // reprocessed, its rows are replaced by the same keys: none clashes with the rows it replaces
    const replaced = await reprocess('charges_2021.csv');
    expect(replaced.status).toBe(0);
    expect(replaced.json).toMatchObject({ reprocessed: 1, rejected: 0, rows: 4 });

    // the same bytes again under another name: a duplicate, nothing loaded
    await ws.put('charges_2021_again.csv', CHARGES);
    const again = await run();
    expect(again.status).toBe(0);
    expect(again.json).toMatchObject({ loaded: 0, rows: 0 });
    expect(await ws.files('duplicates')).toEqual(['charges_2021_again.csv']);

    // other bytes repeating a key already loaded (the same charge at the same instant): refused, named
    await ws.put(
      'charges_2021_corrected.csv',
      HEADER + 'ch_9;01. Jan. 2021 10:00;2. Januar 2021;1,00;\nch_1;03. Feb. 2021 13:12;4. Februar 2021;26,00;\n',
    );
    const clash = await run();
    expect(clash.status).toBe(1);
    expect(clash.json).toMatchObject({ loaded: 0, rejected: 1, rows: 0 });
    expect(clash.json.files.find((f) => f.name === 'charges_2021_corrected.csv')?.error).toMatch(
      /^field \(charge_id, created\): 1 value\(s\) already used: line 3: "ch_1" "2021-02-03 13:12:00\+01:00" already loaded from charges_2021\.csv/,
    );
    expect(await ws.files('rejected')).toEqual(['charges_2021_corrected.csv']);
    const count = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.monthly_charges');
    expect(count.rows[0]!.n).toBe('4');
  });

  it('finds a key whose time another file writes with another offset: the instant, not the text, is compared', async () => {
    await db.client.query('DROP TABLE IF EXISTS settle.monthly_charges');
    const { ws, run } = await chargesWorkspace();
    // other bytes than the test above loaded (a content loads once, whatever its table)
    await ws.put('charges_2021_b.csv', CHARGES.replace('erste', 'first'));
    expect((await run()).json).toMatchObject({ loaded: 1, rows: 4 });
    // a layout that reads the same table from files writing each instant in UTC, with its offset
    const utc = parseLayout(
      {
        ...LAYOUT,
        columns: LAYOUT.columns.map((c) =>
          c.name === 'created' ? { name: 'created', from: 'Erstellt', type: 'timestamp', format: 'dd. MMM yyyy HH:mmXXX' } : c,
        ),
      },
      'test',
    );
    const folder = await mkdtemp(join(tmpdir(), 'settle-values-'));
    const path = join(folder, 'charges_utc.csv');
    await writeFile(
      path,
      HEADER +
        'ch_1;03. Feb. 2021 12:12Z;4. Februar 2021;25,00;\n' +
        'ch_2;31. Okt. 2021 11:30+00:00;1. November 2021;-7,50;\n' +
        'ch_2;31. Okt. 2021 12:30+00:00;1. November 2021;-7,50;\n',
    );
    const presence = await keyPresence({ client: db.client, schema: 'settle', layout: utc }, path, 'charges_utc.csv');
    // 12:30 UTC is 13:30 in Berlin, which no row holds
    expect(presence).toEqual({ rows: 3, present: 2, firstMissing: { line: 4, key: '"ch_2" "2021-10-31 12:30:00+00:00"' } });
  });
});
