import pg from 'pg';
import { UsageError } from '../errors.js';
import { MAX_INTEGER_DIGITS } from '../layout/reader/columnValues.js';
import { AS_WRITTEN, tableKey, type ColumnSpec, type Layout } from '../layout/model/layout.js';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier: id } = pg;

/** The column type a layout column gets: amounts exact, times with their zone, codes fixed. */
export function sqlType(columnSpec: ColumnSpec): string {
  switch (columnSpec.type) {
    case 'text':
      return 'text';
    case 'decimal':
      // kept with the places the file wrote (an exchange rate): numeric without a scale
      if (columnSpec.scale === AS_WRITTEN) return 'numeric';
      return `numeric(${MAX_INTEGER_DIGITS + (columnSpec.scale ?? 2)}, ${columnSpec.scale ?? 2})`;
    case 'date':
      return 'date';
    case 'timestamp':
      return 'timestamp with time zone';
    case 'currency':
      return 'character(3)';
    case 'integer':
      return 'bigint';
  }
}

/** `format_type`'s spelling of the same types, to compare with an existing table (tableColumnsSql). */
export function describedType(columnSpec: ColumnSpec): string {
  return columnSpec.type === 'decimal' && columnSpec.scale !== AS_WRITTEN
    ? `numeric(${MAX_INTEGER_DIGITS + (columnSpec.scale ?? 2)},${columnSpec.scale ?? 2})`
    : sqlType(columnSpec);
}

export const constraintName = (layout: Layout) => `${layout.table}_natural_key`;

/**
 * A layout's table from scratch: its columns, a UNIQUE natural key (with the occurrence column
 * of a layout that numbers repeated keys), and compact provenance (the load, an integer naming
 * file and run through `loads`, and the line), indexed by load.
 */
export function createTableSql(schema: string, layout: Layout): string[] {
  const t = `${id(schema)}.${id(layout.table)}`;
  // a key part is never NULL (UNIQUE would not compare it): an empty optional one is ''
  const keys = new Set(layout.naturalKey);
  const columns = layout.columns.map((c) => `  ${id(c.name)} ${sqlType(c)}${c.required || keys.has(c.name) ? ' NOT NULL' : ''}`);
  if (layout.occurrence !== undefined) columns.push(`  ${id(layout.occurrence)} integer NOT NULL`);
  return [
    [
      `CREATE TABLE ${t} (`,
      [
        ...columns,
        '  load_id integer NOT NULL',
        '  source_line integer NOT NULL',
        `  CONSTRAINT ${id(constraintName(layout))} UNIQUE (${tableKey(layout).map(id).join(', ')})`,
      ].join(',\n'),
      ')',
    ].join('\n'),
    `CREATE INDEX ${id(`${layout.table}_by_load`)} ON ${t} (load_id)`,
  ];
}

interface Existing {
  columns: Map<string, { type: string; nullable: boolean }>;
  key: string[] | null;
}

/**
 * The SELECT of a table's columns (`name`, `type` as `format_type` spells it, `nullable`), for
 * `relation`, an SQL expression of its regclass: the one look at a table's columns, here and
 * before a binary COPY (copyBinary.ts). The catalog itself, not information_schema.columns,
 * whose view cost each run's start about 17 ms of the server's planning (docs/BENCHMARKS.md).
 */
export function tableColumnsSql(relation: string): string {
  return `SELECT attname AS name, format_type(atttypid, atttypmod) AS type, NOT attnotnull AS nullable
            FROM pg_attribute WHERE attrelid = ${relation} AND attnum > 0 AND NOT attisdropped`;
}

async function existingTable(client: pg.ClientBase, schema: string, layout: Layout): Promise<Existing | null> {
  const relation = `to_regclass(format('%I.%I', $1::text, $2::text))`;
  // one round trip: the columns, each row also carrying the natural key's columns
  const cols = await client.query<{ name: string; type: string; nullable: boolean; key: string[] | null }>(
    `WITH columns AS (${tableColumnsSql(relation)})
     SELECT columns.*, (SELECT array_agg(a.attname::text ORDER BY k.ord)
                          FROM pg_constraint c
                          CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
                         WHERE c.conrelid = ${relation} AND c.conname = $3) AS key
       FROM columns`,
    [schema, layout.table, constraintName(layout)],
  );
  if (cols.rowCount === 0) return null;
  return {
    columns: new Map(cols.rows.map((r) => [r.name, { type: r.type, nullable: r.nullable }])),
    key: cols.rows[0]!.key,
  };
}

/**
 * What `migrate` must do for a layout's table: create it, or add the columns the layout gained
 * (nullable: the rows already there have no value; the reader still requires new rows to have
 * one), let a column the layout now allows empty be NULL, and widen a decimal the layout now
 * keeps as written to `numeric` (both change no loaded row). A column whose type changed
 * otherwise, or a different natural key, is refused with the statement to run by hand: migrate
 * never rewrites loaded rows.
 */
export async function layoutTableChanges({ client, schema, layout }: FinanceTarget): Promise<string[]> {
  const have = await existingTable(client, schema, layout);
  if (!have) return createTableSql(schema, layout);
  const quotedTable = `${id(schema)}.${id(layout.table)}`;
  const problems: string[] = [];
  const changes: string[] = [];
  const keys = new Set(layout.naturalKey);
  for (const columnSpec of layout.columns) {
    const now = have.columns.get(columnSpec.name);
    if (!now) {
      changes.push(`ALTER TABLE ${quotedTable} ADD COLUMN ${id(columnSpec.name)} ${sqlType(columnSpec)}`);
      continue;
    }
    const wanted = describedType(columnSpec);
    if (now.type !== wanted) {
      // numeric(p,s) to numeric keeps every value as it is: no row is rewritten
      if (wanted === 'numeric' && now.type.startsWith('numeric('))
        changes.push(`ALTER TABLE ${quotedTable} ALTER COLUMN ${id(columnSpec.name)} TYPE numeric`);
      // a text column holds any value exactly as the reader wrote it: only another type could round or refuse
      else if (now.type !== 'text') problems.push(`column ${columnSpec.name} is ${now.type}, the layout says ${wanted}`);
    }
    if (!now.nullable && !columnSpec.required && !keys.has(columnSpec.name))
      changes.push(`ALTER TABLE ${quotedTable} ALTER COLUMN ${id(columnSpec.name)} DROP NOT NULL`);
  }
  for (const provenanceColumn of ['load_id', 'source_line'])
    if (!have.columns.has(provenanceColumn)) problems.push(`it lacks the provenance column ${provenanceColumn}`);
  const key = tableKey(layout);
  if (layout.occurrence !== undefined && have.columns.get(layout.occurrence)?.type !== 'integer')
    problems.push(`it lacks the occurrence column ${layout.occurrence} (integer)`);
  if (have.key === null || have.key.join(',') !== key.join(',')) {
    problems.push(
      `its natural key ${constraintName(layout)} is (${have.key?.join(', ') ?? 'missing'}), the layout says (${key.join(', ')})`,
    );
  }
  if (problems.length > 0) {
    throw new UsageError(
      `table ${schema}.${layout.table} does not fit the layout "${layout.name}": ${problems.join('; ')}. Change it by hand as the migration role, or give the layout another "table"`,
    );
  }
  return changes;
}

/** `run` refuses to start when the layout's table is missing or lacks a column: `migrate` first. */
export async function assertLayoutFitsTable(financeTarget: FinanceTarget): Promise<void> {
  const { schema, layout } = financeTarget;
  const changes = await layoutTableChanges(financeTarget);
  if (changes.length > 0) {
    throw new UsageError(
      `table ${schema}.${layout.table} of layout "${layout.name}" is missing or lacks columns: run \`settle-ingest migrate\` with this layout first (\`migrate --print-sql\` shows what it does)`,
    );
  }
}
