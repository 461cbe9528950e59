import pg from 'pg';
import { pendingMigrations, pendingMigrationsSql, type MigrationResult } from '../db/migrator.js';
import { assertPgCurrent, migratePg, pgSchemaVersion, withMigrationLock } from '../db/pgMigrate.js';
import { layoutTableChanges } from './layoutTable.js';
import type { FinanceTarget } from './target.js';

export interface FinanceMigration extends MigrationResult {
  /** the layout's table, and the statements run on it (none when it fit already) */
  table: string;
  tableChanges: string[];
}

/** Creates or upgrades the finance schema (sql/finance/), then the layout's table. */
export async function migrateFinance(financeTarget: FinanceTarget): Promise<FinanceMigration> {
  const { client, schema, layout } = financeTarget;
  const result = await migratePg(client, schema, 'finance', financeSchemaLabel(schema));
  const tableChanges = await withMigrationLock(client, async () => {
    const changes = await layoutTableChanges(financeTarget);
    for (const statement of changes) await client.query(statement);
    return changes;
  });
  return { ...result, table: `${schema}.${layout.table}`, tableChanges };
}

/** What `migrate` would run, without running it: pending migrations, then the layout's table. */
export async function financeMigrationSql(financeTarget: FinanceTarget): Promise<string> {
  const { client, schema, layout } = financeTarget;
  const current = await pgSchemaVersion(client, schema);
  const store = { label: financeSchemaLabel(schema), set: 'finance' as const };
  const pending = pendingMigrations(store, current);
  const parts =
    pending.length > 0 ? [pendingMigrationsSql(store, current, 'finance', `with search_path ${pg.escapeIdentifier(schema)}`)] : [];
  // the numbered migrations make and convert settlement_rows: it can be compared with the layout only after them
  if (pending.length > 0 && layout.table === 'settlement_rows') {
    parts.push(`-- then table ${schema}.settlement_rows is compared with layout "${layout.name}" and given any column it lacks`);
  } else {
    const changes = await layoutTableChanges(financeTarget);
    if (changes.length > 0) parts.push(`-- the table of layout "${layout.name}"\n${changes.map((c) => `${c};`).join('\n')}`);
  }
  return parts.length > 0 ? parts.join('\n\n') : `-- finance schema ${schema} and table ${schema}.${layout.table} are up to date`;
}

/** `run` refuses to start on an old finance schema rather than half-working against it. */
export function assertFinanceCurrent({ client, schema }: FinanceTarget): Promise<void> {
  return assertPgCurrent(client, schema, 'finance', financeSchemaLabel(schema));
}

function financeSchemaLabel(schema: string): string {
  return `finance schema "${schema}"`;
}
