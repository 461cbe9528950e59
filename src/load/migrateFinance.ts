import pg from 'pg';
import { UsageError } from '../errors.js';
import { assertPgCurrent, migratePg, type PgMigrationResult } from '../db/pgMigrate.js';

/** Creates or upgrades the finance schema (sql/finance/). */
export function migrateFinance(client: pg.ClientBase, schema: string): Promise<PgMigrationResult> {
  return migratePg(client, schema, 'finance');
}

/** `run` refuses to start on an old finance schema rather than half-working against it. */
export function assertFinanceCurrent(client: pg.ClientBase, schema: string): Promise<void> {
  return assertPgCurrent(client, schema, 'finance', 'finance schema');
}

/** The configured layout's columns must exist in the table the rows go to. */
export async function assertLayoutFitsTable(client: pg.ClientBase, schema: string, columns: string[]): Promise<void> {
  const r = await client.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'settlement_rows'`,
    [schema],
  );
  const have = new Set(r.rows.map((row) => row.column_name));
  const missing = columns.filter((c) => !have.has(c));
  if (missing.length > 0) {
    throw new UsageError(
      `the layout names column(s) ${missing.join(', ')} that ${schema}.settlement_rows does not have: \`settle-ingest migrate\` creates a layout's table but does not change an existing one; add the column(s) with ALTER TABLE as the migration role, or fix the layout's column names`,
    );
  }
}
