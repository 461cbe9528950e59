import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/db/migrationFiles.js';
import { openPgLedger, LEDGER_SCHEMA } from '../../src/ledger/pgLedger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { financeDatabase, type FinanceDatabase } from '../support/workspace.js';

let db: FinanceDatabase | undefined;
afterAll(async () => db?.close());

/**
 * What both stores must agree on, whatever their dialects: per table its columns, primary key,
 * unique constraints, foreign keys, the columns that carry a CHECK (with the values an `IN` list
 * allows), its indexes (unique or not, their columns, and a partial index's condition reduced to
 * its words and literals), and the statements a trigger refuses.
 */
interface TableShape {
  columns: string[];
  primaryKey: string[];
  unique: string[][];
  foreignKeys: string[];
  checks: string[];
  indexes: string[];
  refuses: string[];
}
type Shape = Record<string, TableShape>;

/** A partial index's condition as its identifiers, operators and literals, dialect spelling taken off. */
function conditionWords(sql: string): string {
  return sql
    .toLowerCase()
    .replace(/::[a-z ]+/g, '') // PostgreSQL casts
    .replace(/'(-?\d+)'/g, '$1') // and the quotes it puts around a cast number
    .replace(/[()]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .join(' ');
}

/** `col IN ('a', 'b')` (SQLite's text, and PostgreSQL's `= ANY (ARRAY['a', 'b'])`) as `col in a,b`; any other check as `col`. */
function checkShape(column: string, sql: string): string {
  const values = [...sql.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
  return /\bIN\s*\(|= ANY/i.test(sql) ? `${column} in ${values.sort().join(',')}` : column;
}

const sorted = <T>(xs: T[]) => [...xs].sort();

/** Every `CHECK (…)` expression in a CREATE TABLE statement, its parentheses balanced. */
function checkExpressions(sql: string): string[] {
  const found: string[] = [];
  for (const m of sql.matchAll(/\bCHECK\s*\(/gi)) {
    let depth = 1;
    let i = m.index + m[0].length;
    const start = i;
    for (; i < sql.length && depth > 0; i++) depth += sql[i] === '(' ? 1 : sql[i] === ')' ? -1 : 0;
    found.push(sql.slice(start, i - 1));
  }
  return found;
}

function sqliteShape(path: string): Shape {
  const lite = new Database(path, { readonly: true });
  const shape: Shape = {};
  const tables = lite.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
    name: string;
    sql: string;
  }[];
  for (const { name, sql } of tables) {
    const info = lite.prepare(`SELECT name, pk FROM pragma_table_info(?)`).all(name) as { name: string; pk: number }[];
    const indexes = lite.prepare(`SELECT name, "unique", origin, partial FROM pragma_index_list(?)`).all(name) as {
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }[];
    const columnsOf = (index: string) =>
      (lite.prepare(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`).all(index) as { name: string }[]).map((c) => c.name);
    const columns = info.map((c) => c.name);
    const checks = checkExpressions(sql).map((expr) => checkShape(columns.find((c) => new RegExp(`\\b${c}\\b`).test(expr)) ?? '?', expr));
    const triggers = lite.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?`).all(name) as { sql: string }[];
    shape[name] = {
      columns: sorted(info.map((c) => c.name)),
      primaryKey: info
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name),
      unique: sorted(indexes.filter((i) => i.origin === 'u').map((i) => columnsOf(i.name))),
      foreignKeys: sorted(
        (
          lite.prepare(`SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)`).all(name) as {
            from: string;
            table: string;
            to: string;
          }[]
        ).map((f) => `${f.from} -> ${f.table}(${f.to})`),
      ),
      checks: sorted(checks),
      indexes: sorted(
        indexes
          .filter((i) => i.origin === 'c')
          .map((i) => {
            const def = (lite.prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`).get(i.name) as { sql: string })
              .sql;
            const where = /\bWHERE\b([\s\S]*)$/i.exec(def)?.[1];
            return `${i.name} ${i.unique ? 'unique ' : ''}(${columnsOf(i.name).join(', ')})${where ? ` where ${conditionWords(where)}` : ''}`;
          }),
      ),
      refuses: sorted(triggers.flatMap((t) => [...t.sql.matchAll(/BEFORE\s+(UPDATE|DELETE)/gi)].map((m) => m[1]!.toUpperCase()))),
    };
  }
  lite.close();
  return shape;
}

async function pgShape(client: FinanceDatabase['client']): Promise<Shape> {
  const q = async <R extends Record<string, unknown>>(sql: string) => (await client.query<R>(sql, [LEDGER_SCHEMA])).rows;
  const shape: Shape = {};
  const table = (name: string) =>
    (shape[name] ??= { columns: [], primaryKey: [], unique: [], foreignKeys: [], checks: [], indexes: [], refuses: [] });
  for (const c of await q<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1`,
  )) {
    table(c.table_name).columns.push(c.column_name);
  }
  const constraints = await q<{ tab: string; contype: string; cols: string[]; def: string; ftab: string | null; fcols: string[] | null }>(
    `SELECT c.conrelid::regclass::text AS tab, c.contype,
            ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o) AS cols,
            pg_get_constraintdef(c.oid) AS def,
            CASE WHEN c.contype = 'f' THEN c.confrelid::regclass::text END AS ftab,
            CASE WHEN c.contype = 'f' THEN ARRAY(SELECT a.attname::text FROM unnest(c.confkey) k(n) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n) END AS fcols
       FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1`,
  );
  const bare = (t: string) => t.replace(/^.*\./, '');
  for (const c of constraints) {
    const t = table(bare(c.tab));
    if (c.contype === 'p') t.primaryKey = c.cols;
    else if (c.contype === 'u') t.unique.push(c.cols);
    else if (c.contype === 'f') t.foreignKeys.push(`${c.cols[0]} -> ${bare(c.ftab!)}(${c.fcols![0]})`);
    else if (c.contype === 'c') t.checks.push(checkShape(c.cols[0]!, c.def));
  }
  const indexes = await q<{ tab: string; name: string; unique: boolean; cols: string[]; pred: string | null }>(
    `SELECT t.relname AS tab, i.relname AS name, x.indisunique AS unique,
            ARRAY(SELECT a.attname::text FROM unnest(x.indkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n ORDER BY k.o) AS cols,
            pg_get_expr(x.indpred, x.indrelid) AS pred
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
  );
  for (const i of indexes) {
    table(i.tab).indexes.push(
      `${i.name} ${i.unique ? 'unique ' : ''}(${i.cols.join(', ')})${i.pred ? ` where ${conditionWords(i.pred)}` : ''}`,
    );
  }
  for (const t of await q<{ tab: string; op: string }>(
    `SELECT event_object_table AS tab, event_manipulation AS op FROM information_schema.triggers WHERE trigger_schema = $1 AND action_timing = 'BEFORE'`,
  )) {
    table(t.tab).refuses.push(t.op);
  }
  for (const t of Object.values(shape)) {
    t.columns.sort();
    t.unique.sort();
    t.foreignKeys.sort();
    t.checks.sort();
    t.indexes.sort();
    t.refuses.sort();
  }
  return shape;
}

describe('the two ledger stores', () => {
  it('agree after every migration on tables, columns, keys, constraints, checks, indexes (partial ones with their condition) and triggers', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite');
    await openSqliteLedger(path, { create: true }).close();
    const sqlite = sqliteShape(path);

    db = await financeDatabase();
    await (await openPgLedger(db.url, { create: true })).close();
    const pg = await pgShape(db.client);
    delete pg.schema_migrations;
    delete sqlite.schema_migrations;

    expect(Object.keys(sqlite).sort()).toEqual(Object.keys(pg).sort());
    for (const t of Object.keys(pg)) {
      // PostgreSQL spells a partial index's IN as = ANY (ARRAY[...]): compared as words, the two must name the same states
      expect({ table: t, ...sqlite[t] }).toEqual({ table: t, ...pg[t] });
    }
  });

  it('number each migration alike in both sets from 000008 on', () => {
    const byVersion = (set: 'ledger' | 'ledger-pg') =>
      new Map(
        readMigrations(set)
          .filter((m) => m.version >= 8)
          .map((m) => [m.version, m.name]),
      );
    expect([...byVersion('ledger-pg')]).toEqual([...byVersion('ledger')]);
  });
});
