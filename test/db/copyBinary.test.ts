import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_MAX_RECORD_BYTES, LAYOUT_DEFAULTS, type ColumnSpec, type Layout } from '../../src/layout/model/layout.js';
import { closeFinanceFixture, FINANCE_SCHEMA as SCHEMA, openFinanceFixture, type FinanceFixture } from '../support/dbDatabase.js';
import { sha256Hex } from '../support/settlementFiles.js';

/**
 * The binary COPY encoder (src/finance/copyBinary.ts) against the server's own text input: one
 * file loaded both ways, into two tables alike, must read back the same, value for value.
 */

const column = (name: string, type: ColumnSpec['type'], extra: Partial<ColumnSpec> = {}): ColumnSpec => ({
  name,
  from: name,
  type,
  required: false,
  ...extra,
});

/** every type the encoder writes, each optional (an empty field is NULL) but the key */
const COLUMNS: ColumnSpec[] = [
  column('id', 'integer', { required: true }),
  column('label', 'text'),
  column('exact', 'decimal', { scale: 'asWritten' }),
  column('amount', 'decimal', { scale: 2 }),
  column('day', 'date'),
  column('stamped', 'timestamp', { format: 'yyyy-MM-dd HH:mm:ss.SSSXXX' }),
  column('local_time', 'timestamp', { format: 'yyyy-MM-dd HH:mm:ss', timeZone: 'Asia/Kolkata' }),
  column('count', 'integer'),
  column('currency', 'currency'),
];
const HEADER = `${COLUMNS.map((spec) => spec.name).join(',')}\n`;

function wideLayout(table: string): Layout {
  return {
    ...LAYOUT_DEFAULTS,
    skipRows: [],
    name: 'custom',
    table,
    columns: COLUMNS,
    naturalKey: ['id'],
    maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  };
}

/** the edges of each wire form: signs, zeros, base-10000 groups, epochs, leap days, offsets, the 18 digits of an integer, UTF-8 */
const EDGE_ROWS = [
  '1,plain,0,0,2000-01-01,2000-01-01 00:00:00.0+00:00,2000-01-01 05:30:00,0,EUR',
  '2,café ☕ 𝄞 ünïcödé,-0.00,-0.00,1999-12-31,1999-12-31 23:59:59.999999-00:30,1970-01-01 00:00:00,-999999999999999999,USD',
  '3,,0.0001,0.01,2000-02-29,2000-02-29 12:00:00.5+15:59,2024-02-29 23:59:59,999999999999999999,JPY',
  '4,"quoted, with comma",10000,10000.00,1970-01-01,1970-01-01 00:00:00.000001-15:59,2099-12-31 12:00:00,1,GBP',
  '5,x,1234567890123456.123456789012,9999999999999999.99,9999-12-31,9999-12-31 23:59:59.123456+14:00,1900-03-01 01:02:03,-1,CHF',
  '6,y,-99990000.00010000,-1.5,0001-01-01,0001-01-01 00:00:00.1+00:00,1582-10-15 00:00:00,42,EUR',
  '7,,,,,,,,',
  '8,z,100000000,123.4,2100-03-01,2026-03-29 02:30:00.25+02:00,2026-10-25 02:30:00,100000000000000000,SEK',
  '9,w,-0.000000000001,0.10,2026-06-01,2026-06-01 10:00:00.123+05:45,2026-06-01 10:00:00,-100000000000000000,EUR',
  '10,v,7,-7,2026-06-01,2026-06-01 10:00:00.654321-03:30,2026-06-01 10:00:01,7,EUR',
];

let database: FinanceFixture['database'];
let dir: string;
let finance: FinanceDb;
let reader: pg.Client;
let files = 0;

beforeAll(async () => {
  ({ database, dir, finance, reader } = await openFinanceFixture('binary'));
});
afterAll(() => closeFinanceFixture({ database, dir, finance, reader }));

/** A new table for the wide layout, migrated; `alter` runs on it after (a column changed by hand). */
async function wideTable(table: string, alter?: string): Promise<FinanceDb> {
  const target = finance.forLayout(wideLayout(table));
  await target.migrate();
  if (alter) await reader.query(`ALTER TABLE ${SCHEMA}.${table} ${alter}`);
  return target;
}

async function load(target: FinanceDb, content: string, format: 'text' | 'binary') {
  const name = `file${++files}.csv`;
  const path = join(dir, name);
  await writeFile(path, content);
  return target.load({ stagedPath: path, sha256: sha256Hex(`${name}\n${content}`), name, runId: `run-${files}`, format });
}

/** The table's rows as the server writes each value in text, by id, the provenance left out. */
async function rowsOf(table: string): Promise<Record<string, string | null>[]> {
  const list = COLUMNS.map((spec) => `${spec.name}::text AS ${spec.name}`).join(', ');
  // one zone for reading timestamptz back, whatever the server's default
  await reader.query(`SET TIME ZONE 'UTC'`);
  return (await reader.query(`SELECT ${list} FROM ${SCHEMA}.${table} AS loaded ORDER BY loaded.id`)).rows as Record<
    string,
    string | null
  >[];
}

describe('the binary COPY encoder', () => {
  it('loads every type, null and numeric edge exactly as the server reads the same values in text', async () => {
    const content = HEADER + EDGE_ROWS.join('\n') + '\n';
    const asText = await wideTable('edges_text');
    const asBinary = await wideTable('edges_binary');
    expect(await load(asText, content, 'text')).toMatchObject({ outcome: 'loaded', rows: EDGE_ROWS.length, format: 'text' });
    expect(await load(asBinary, content, 'binary')).toMatchObject({ outcome: 'loaded', rows: EDGE_ROWS.length, format: 'binary' });
    const binaryRows = await rowsOf('edges_binary');
    expect(binaryRows).toEqual(await rowsOf('edges_text'));
    // and a few read back by hand, so that the two paths cannot agree on a wrong value
    expect(binaryRows[1]).toMatchObject({ label: 'café ☕ 𝄞 ünïcödé', exact: '0.00', amount: '0.00', count: '-999999999999999999' });
    expect(binaryRows[2]).toMatchObject({ label: null, exact: '0.0001', stamped: '2000-02-28 20:01:00.5+00' });
    expect(binaryRows[4]).toMatchObject({ exact: '1234567890123456.123456789012', day: '9999-12-31' });
    expect(binaryRows[5]).toMatchObject({ exact: '-99990000.00010000', day: '0001-01-01' });
    expect(binaryRows[6]).toEqual({ id: '7', ...Object.fromEntries(COLUMNS.slice(1).map((spec) => [spec.name, null])) });
    expect(binaryRows[8]).toMatchObject({ exact: '-0.000000000001', amount: '0.10' });
  });

  it('keeps distinct integers past its cache of ten thousand, each one right', async () => {
    const ids = Array.from({ length: 10_050 }, (_, index) => index + 1);
    const content = HEADER + ids.map((id) => `${id},,,,,,,${id * 1_000_003 - 5_000_000},`).join('\n') + '\n';
    const asText = await wideTable('many_text');
    const asBinary = await wideTable('many_binary');
    await load(asText, content, 'text');
    expect(await load(asBinary, content, 'binary')).toMatchObject({ rows: ids.length, format: 'binary' });
    const sums = async (table: string) =>
      (await reader.query(`SELECT count(DISTINCT count)::int AS distinct, sum(count)::text AS total FROM ${SCHEMA}.${table}`)).rows[0];
    expect(await sums('many_binary')).toEqual(await sums('many_text'));
    expect(await sums('many_binary')).toMatchObject({ distinct: ids.length });
  });

  it('writes a typed layout column kept in a text column as the reader wrote it', async () => {
    const content = HEADER + EDGE_ROWS.join('\n') + '\n';
    const heldAsText = 'ALTER COLUMN exact TYPE text, ALTER COLUMN day TYPE text, ALTER COLUMN count TYPE text';
    const asText = await wideTable('held_text', heldAsText);
    const asBinary = await wideTable('held_binary', heldAsText);
    await load(asText, content, 'text');
    expect(await load(asBinary, content, 'binary')).toMatchObject({ format: 'binary' });
    const binaryRows = await rowsOf('held_binary');
    expect(binaryRows).toEqual(await rowsOf('held_text'));
    // as written, with the sign of -0.00 the numeric column would have dropped
    expect(binaryRows[1]).toMatchObject({ exact: '-0.00', count: '-999999999999999999' });
  });

  it.each([
    ['a column of a type it does not write', 'ALTER COLUMN label TYPE varchar(100)'],
    ['a provenance column that is not integer', 'ALTER COLUMN source_line TYPE bigint'],
  ])('sends the file as text when the table has %s, and it loads all the same', async (_what, alter) => {
    const table = `changed_${files}`;
    const target = await wideTable(table, alter);
    const content = HEADER + EDGE_ROWS.slice(0, 3).join('\n') + '\n';
    expect(await load(target, content, 'binary')).toMatchObject({ outcome: 'loaded', rows: 3, format: 'text' });
    expect((await rowsOf(table)).map((row) => row.id)).toEqual(['1', '2', '3']);
  });

  it('refuses an offset beyond ±15:59, naming the line and field, and loads nothing of the file', async () => {
    const asBinary = await wideTable('offsets_binary');
    for (const offset of ['+16:00', '-16:30']) {
      const content = `${HEADER}${EDGE_ROWS[0]}\n20,late,1,1,2026-06-01,2026-06-01 10:00:00.0${offset},,,\n`;
      await expect(load(asBinary, content, 'binary')).rejects.toThrow(/line 3, field stamped: .* beyond ±15:59, which PostgreSQL refuses/);
    }
    expect(await rowsOf('offsets_binary')).toEqual([]);
  });
});
