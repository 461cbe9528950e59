import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPgLedger, LEDGER_SCHEMA } from '../../src/ledger/pgLedger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { financeDatabase, type FinanceDatabase } from '../support/workspace.js';

let db: FinanceDatabase | undefined;
afterAll(async () => db?.close());

/** table → its columns, sorted: what both stores must agree on whatever their types. */
type Shape = Record<string, string[]>;

describe('the two ledger stores', () => {
  it('have the same tables and columns after every migration', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite');
    await openSqliteLedger(path, { create: true }).close();
    const lite = new Database(path, { readonly: true });
    const sqlite: Shape = {};
    const tables = lite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
      name: string;
    }[];
    for (const { name } of tables) {
      sqlite[name] = (lite.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[]).map((c) => c.name).sort();
    }
    lite.close();

    db = await financeDatabase();
    await (await openPgLedger(db.url, { create: true })).close();
    const cols = await db.client.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1`,
      [LEDGER_SCHEMA],
    );
    const pg: Shape = {};
    for (const c of cols.rows) (pg[c.table_name] ??= []).push(c.column_name);
    for (const t of Object.keys(pg)) pg[t]!.sort();

    expect(Object.keys(sqlite).sort()).toEqual(Object.keys(pg).sort());
    for (const t of Object.keys(pg)) expect({ table: t, columns: sqlite[t] }).toEqual({ table: t, columns: pg[t] });
  });
});
