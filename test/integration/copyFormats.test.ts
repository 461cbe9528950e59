import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RejectError } from '../../src/errors.js';
import { copyRows, endLoad } from '../../src/finance/copyRows.js';
import { createTableSql } from '../../src/finance/layoutTable.js';
import type { CopyFormat, FinanceTarget } from '../../src/finance/target.js';
import { PROVENANCE_COLUMNS, type Layout } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { PRESETS } from '../../src/layout/model/presets.js';
import { generatedFile } from '../support/layoutFiles.js';
import { financeDatabase, type FinanceDatabase } from '../support/workspace.js';

const { escapeIdentifier: id } = pg;
const SCHEMA = 'settle';

let db: FinanceDatabase;
let dir: string;
beforeAll(async () => {
  db = await financeDatabase();
  dir = await mkdtemp(join(tmpdir(), 'settle-copy-formats-'));
});
afterAll(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Layouts that use every feature of the layout language between them, beside the shipped presets. */
const CUSTOM: Record<string, unknown> = {
  // semicolons, a decimal comma with dots between thousands, a preamble, patterns, zones, a trailer, skipped rows
  european: {
    delimiter: ';',
    decimalMark: ',',
    groupSeparator: '.',
    skipLines: 2,
    columns: [
      { name: 'id', type: 'text' },
      { name: 'kind', type: 'text' },
      { name: 'amount', type: 'decimal', scale: 2 },
      { name: 'rate', type: 'decimal', scale: 12, required: false },
      { name: 'whole', type: 'decimal', scale: 0, required: false },
      { name: 'booked', type: 'date', format: 'dd/MM/yyyy' },
      { name: 'valued', type: 'date', format: 'd.M.yyyy', required: false },
      { name: 'stamped', type: 'timestamp', format: "yyyy-MM-dd'T'HH:mm:ss.SSSXXX" },
      { name: 'local', type: 'timestamp', format: 'dd.MM.yyyy HH:mm', timeZone: 'Europe/Amsterdam' },
      { name: 'eastern', type: 'timestamp', format: 'yyyy-MM-dd H:mm:ss', timeZone: 'America/New_York', required: false },
      { name: 'kathmandu', type: 'timestamp', timeZone: '+05:45', required: false },
      { name: 'ccy', type: 'currency' },
      { name: 'count', type: 'integer', required: false },
      { name: 'note', type: 'text', required: false },
    ],
    naturalKey: 'id',
    skipRows: [{ column: 'kind', values: ['Payout', 'Summary'] }],
    trailer: { firstField: 'Total', rowCountField: 2 },
  },
  // tabs, spaces between thousands, each row's zone in a column of its own, a key of two columns
  tabbed: {
    delimiter: '\t',
    decimalMark: ',',
    groupSeparator: ' ',
    columns: [
      { name: 'ref', type: 'text', from: 'Reference' },
      { name: 'zone', type: 'text', from: 'Time Zone' },
      { name: 'at', type: 'timestamp', from: 'Booked At', format: 'yyyy-MM-dd HH:mm:ss.SSS', timeZoneFrom: 'zone' },
      { name: 'net', type: 'decimal', scale: 4, from: 'Net' },
      { name: 'fee', type: 'decimal', scale: 4, required: false, from: 'Fee' },
      { name: 'ccy', type: 'currency', from: 'Currency' },
      { name: 'batch', type: 'integer', from: 'Batch' },
    ],
    naturalKey: ['ref', 'batch'],
  },
  // pipes, commas between thousands, unknown columns refused, a date key
  piped: {
    delimiter: '|',
    groupSeparator: ',',
    extraColumns: 'reject',
    columns: [
      { name: 'payout_id', type: 'text' },
      { name: 'day', type: 'date' },
      { name: 'gross', type: 'decimal', scale: 3 },
      { name: 'utc', type: 'timestamp', timeZone: 'UTC', format: 'yyyy-MM-dd HH:mm' },
      { name: 'memo', type: 'text', required: false },
    ],
    naturalKey: ['payout_id', 'day'],
  },
  // no header: each column at its field; amounts in minor units signed by a column beside them, a rate as written
  headerless: {
    header: false,
    columns: [
      { name: 'ref', type: 'text', position: 1 },
      { name: 'booked', type: 'date', position: 2 },
      { name: 'direction', type: 'text', position: 4 },
      { name: 'amount', type: 'decimal', minorUnits: 2, position: 3, sign: { from: 'direction', negative: ['D'], positive: ['C'] } },
      { name: 'rate', type: 'decimal', scale: 'asWritten', position: 6, required: false },
      { name: 'ccy', type: 'currency', position: 7 },
    ],
    naturalKey: 'ref',
  },
};

const withoutTotals = ({ totals: _, ...layout }: Layout): Layout => layout;

const LAYOUTS: [string, Layout][] = [
  // the presets' rows as the COPY formats carry them; their control totals (which a generated
  // file of random rows does not state) are proved by test/unit/totals.test.ts and totals.test.ts
  ...[...PRESETS.values()].map((l): [string, Layout] => [l.name, withoutTotals(l)]),
  ...Object.entries(CUSTOM).map(([name, raw]): [string, Layout] => [name, parseLayout(raw, `layout ${name}`)]),
];

/** The layout with its own table, created from scratch (the finance database's own, cloned per test file). */
async function tableFor(layout: Layout, table: string): Promise<FinanceTarget> {
  const target = { client: db.client, schema: SCHEMA, layout: { ...layout, table } };
  await db.client.query(`DROP TABLE IF EXISTS ${id(SCHEMA)}.${id(table)}`);
  for (const sql of createTableSql(SCHEMA, target.layout)) await db.client.query(sql);
  return target;
}

async function load(target: FinanceTarget, path: string, format: CopyFormat) {
  return copyRows(target, { stagedPath: path, sha256: randomBytes(32).toString('hex'), name: 'file.csv', runId: 'r-formats', format });
}

/**
 * Rows of the two tables that differ, matched by line: by value (IS NOT DISTINCT FROM) and by
 * their text too, so that a numeric's scale or a time's instant that differs shows as well.
 */
async function differences(layout: Layout, a: string, b: string): Promise<Record<string, unknown>[]> {
  const columns = layout.columns.map((c) => id(c.name));
  const both = (side: string, cast = '') => `(${columns.map((c) => `${side}.${c}${cast}`).join(', ')})`;
  const r = await db.client.query(
    `SELECT coalesce(a.source_line, b.source_line) AS line, ${columns.map((c) => `a.${c}::text AS ${id(`text_${c}`)}, b.${c}::text AS ${id(`binary_${c}`)}`).join(', ')}
       FROM ${id(SCHEMA)}.${id(a)} a FULL JOIN ${id(SCHEMA)}.${id(b)} b ON a.source_line = b.source_line
      WHERE a.source_line IS NULL OR b.source_line IS NULL
         OR NOT (ROW${both('a')} IS NOT DISTINCT FROM ROW${both('b')})
         OR NOT (ROW${both('a', '::text')} IS NOT DISTINCT FROM ROW${both('b', '::text')})
      ORDER BY 1 LIMIT 5`,
  );
  return r.rows;
}

describe('COPY in binary loads exactly the rows COPY in text does', () => {
  for (const [name, layout] of LAYOUTS) {
    it(`for ${name}: every generated row alike, value by value and as text`, async () => {
      const file = generatedFile(layout, { rows: 1500, seed: name.length * 7919 + 13, eol: name === 'tabbed' ? '\r\n' : '\n' });
      const path = join(dir, `${name}.csv`);
      await writeFile(path, file.text);
      const base = `formats_${name.replaceAll('-', '_')}`.slice(0, 40);
      const asText = await tableFor(layout, `${base}_text`);
      const asBinary = await tableFor(layout, `${base}_binary`);
      const text = await load(asText, path, 'text');
      const binary = await load(asBinary, path, 'binary');
      expect(text).toMatchObject({ outcome: 'loaded', rows: file.rows, format: 'text' });
      expect(binary).toMatchObject({ outcome: 'loaded', rows: file.rows, format: 'binary' });
      expect(await differences(layout, asText.layout.table, asBinary.layout.table)).toEqual([]);
      // the provenance too: each row's line, and the load it belongs to
      const lines = await db.client.query(
        `SELECT count(DISTINCT source_line)::int AS lines, count(DISTINCT load_id)::int AS loads FROM ${id(SCHEMA)}.${id(asBinary.layout.table)}`,
      );
      expect(lines.rows[0]).toEqual({ lines: file.rows, loads: 1 });
    });
  }

  it('for the values at the edges of each type, written out one by one', async () => {
    const layout = parseLayout(
      {
        columns: [
          { name: 'k', type: 'text' },
          { name: 'amount', type: 'decimal', scale: 12, required: false },
          { name: 'day', type: 'date', required: false },
          { name: 'at', type: 'timestamp', format: 'yyyy-MM-dd HH:mm:ss.SSSXXX', required: false },
          { name: 'big', type: 'integer', required: false },
          { name: 'words', type: 'text', required: false },
        ],
        naturalKey: 'k',
      },
      'edges',
    );
    const rows = [
      ['0', '0001-01-01', '0001-01-01 00:00:00.000001+15:59', '0', ''],
      ['-0.00', '9999-12-31', '9999-12-31 23:59:59.999999-15:59', '-0', 'ascii'],
      ['-0', '1900-02-28', '1900-03-01 00:00:00.5Z', '999999999999999999', '€uro'],
      ['9999999999999999.999999999999', '2000-02-29', '2000-01-01 00:00:00.0+00:00', '-999999999999999999', '𝄞 clef'],
      ['-9999999999999999.999999999999', '2100-12-31', '1999-12-31 23:59:59.999999+00:00', '9007199254740993', '""'],
      ['0.000000000001', '1999-12-31', '1969-12-31 23:59:59.9-00:01', '4294967296', 'a,b'],
      ['-0.000000000001', '2000-01-01', '2038-01-19 03:14:08.000Z', '-4294967297', '\\N'],
      ['10000', '2000-01-02', '2026-03-29 02:30:00.25+01:00', '65536', 'NULL'],
      ['100000000', '1970-01-01', '2026-10-25 02:30:00.123456+02:00', '-1', ' '],
      ['0.0001', '1582-10-10', '1582-10-10 12:00:00.1+00:00', '1', '\u00a0nbsp'],
      ['00000000000000.10', '1752-09-05', '1901-12-13 20:45:52.000001+00:00', '007', 'tab\tin'],
      ['12.5', '2024-02-29', '2024-02-29 12:34:56.7+05:45', '42', 'line\nbreak'],
      ['', '', '', '', ''],
    ];
    const text =
      'k,amount,day,at,big,words\n' +
      rows.map((r, i) => [`edge-${i}`, ...r].map((v) => (/[",\n\t]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v)).join(',')).join('\n') +
      '\n';
    const path = join(dir, 'edges.csv');
    await writeFile(path, text);
    const asText = await tableFor(layout, 'formats_edges_text');
    const asBinary = await tableFor(layout, 'formats_edges_binary');
    expect(await load(asText, path, 'text')).toMatchObject({ rows: rows.length, format: 'text' });
    expect(await load(asBinary, path, 'binary')).toMatchObject({ rows: rows.length, format: 'binary' });
    expect(await differences(layout, 'formats_edges_text', 'formats_edges_binary')).toEqual([]);
    const stored = await db.client.query(
      `SELECT amount::text, day::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US BC') AS utc, big::text FROM settle.formats_edges_binary ORDER BY source_line LIMIT 4`,
    );
    expect(stored.rows).toEqual([
      { amount: '0.000000000000', day: '0001-01-01', utc: '0001-12-31 08:01:00.000001 BC', big: '0' },
      { amount: '0.000000000000', day: '9999-12-31', utc: '10000-01-01 15:58:59.999999 AD', big: '0' },
      { amount: '0.000000000000', day: '1900-02-28', utc: '1900-03-01 00:00:00.500000 AD', big: '999999999999999999' },
      { amount: '9999999999999999.999999999999', day: '2000-02-29', utc: '2000-01-01 00:00:00.000000 AD', big: '-999999999999999999' },
    ]);
  });
});

describe('COPY in binary refuses what COPY in text refuses', () => {
  it('an offset beyond ±15:59, in the value or as the column’s zone: the file is rejected either way, nothing loaded', async () => {
    const inValue = parseLayout(
      {
        columns: [
          { name: 'k', type: 'text' },
          { name: 'at', type: 'timestamp', format: 'yyyy-MM-dd HH:mm:ssXXX' },
        ],
        naturalKey: 'k',
      },
      'offsets',
    );
    const asZone = parseLayout(
      {
        columns: [
          { name: 'k', type: 'text' },
          { name: 'at', type: 'timestamp', timeZone: '+17:00' },
        ],
        naturalKey: 'k',
      },
      'zone',
    );
    const cases: [Layout, string][] = [
      [inValue, 'k,at\na,2026-03-14 10:00:00+01:00\nb,2026-03-14 10:00:00+16:00\n'],
      [inValue, 'k,at\na,2026-03-14 10:00:00-15:60\n'],
      [asZone, 'k,at\na,2026-03-14 10:00:00\n'],
    ];
    for (const [n, [layout, text]] of cases.entries()) {
      const path = join(dir, `offsets-${n}.csv`);
      await writeFile(path, text);
      for (const format of ['text', 'binary'] as const) {
        const target = await tableFor(layout, `formats_offsets_${format}`);
        await expect(load(target, path, format), `${format}, case ${n}`).rejects.toBeInstanceOf(RejectError);
        const count = await db.client.query(`SELECT count(*)::int AS n FROM settle.formats_offsets_${format}`);
        expect(count.rows[0]).toEqual({ n: 0 });
      }
    }
  });
});

describe('the table decides whether binary can be used', () => {
  const layout = PRESETS.get('default')!;

  it('a column changed to text by hand takes the value as text, in binary too', async () => {
    const file = generatedFile(layout, { rows: 300, seed: 5 });
    const path = join(dir, 'text-column.csv');
    await writeFile(path, file.text);
    const asText = await tableFor(layout, 'formats_textcol_text');
    const asBinary = await tableFor(layout, 'formats_textcol_binary');
    for (const t of ['formats_textcol_text', 'formats_textcol_binary'])
      await db.client.query(`ALTER TABLE settle.${t} ALTER COLUMN gross_amount TYPE text, ALTER COLUMN settlement_date TYPE text`);
    expect(await load(asText, path, 'text')).toMatchObject({ rows: file.rows, format: 'text' });
    expect(await load(asBinary, path, 'binary')).toMatchObject({ rows: file.rows, format: 'binary' });
    expect(await differences(layout, 'formats_textcol_text', 'formats_textcol_binary')).toEqual([]);
  });

  it('a column of a type binary does not write (varchar here) sends the file as text', async () => {
    const file = generatedFile(layout, { rows: 50, seed: 6 });
    const path = join(dir, 'varchar-column.csv');
    await writeFile(path, file.text);
    const target = await tableFor(layout, 'formats_varchar');
    await db.client.query(`ALTER TABLE settle.formats_varchar ALTER COLUMN merchant_id TYPE varchar(100)`);
    expect(await load(target, path, 'binary')).toMatchObject({ outcome: 'loaded', rows: file.rows, format: 'text' });
    const provenance = await db.client.query(
      `SELECT count(*)::int AS n FROM settle.formats_varchar WHERE ${PROVENANCE_COLUMNS.join(' > 0 AND ')} > 0`,
    );
    expect(provenance.rows[0]).toEqual({ n: file.rows });
  });
});

describe('the end of a load', () => {
  it('counts the rows on its load and file marker, or fails before its COMMIT: nothing of the transaction stays', async () => {
    const target = { client: db.client, schema: SCHEMA, layout: PRESETS.get('default')! };
    const [ours, theirs] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')];
    const req = { stagedPath: '/nonexistent', sha256: ours, name: 'uncounted.csv', runId: 'r-uncounted' };
    await db.client.query('BEGIN');
    try {
      await db.client.query(
        `INSERT INTO settle.file_loads (sha256, file_name, run_id, row_count, target_table)
         VALUES ($1, 'uncounted.csv', 'r-uncounted', 0, 'settlement_rows'), ($2, 'other.csv', 'r-other', 0, 'settlement_rows')`,
        [ours, theirs],
      );
      // a load of the other content: this marker's rows cannot be counted on it
      const other = await db.client.query<{ load_id: number }>(
        `INSERT INTO settle.loads (sha256, run_id) VALUES ($1, 'r-other') RETURNING load_id`,
        [theirs],
      );
      await expect(endLoad(target, req, other.rows[0]!.load_id, 5, 'COMMIT')).rejects.toThrow(/could not be counted on its marker/);
    } finally {
      await db.client.query('ROLLBACK');
    }
    const markers = await db.client.query('SELECT 1 FROM settle.file_loads WHERE sha256 IN ($1, $2)', [ours, theirs]);
    expect(markers.rows).toEqual([]);
  });
});
