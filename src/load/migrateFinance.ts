import pg from 'pg';
import { readMigrations } from '../migrationFiles.js';
import { UsageError } from '../errors.js';
import { PG_UNDEFINED_TABLE, pgCode } from './pgErrors.js';

const { escapeIdentifier } = pg;

/** Same key in every process, so concurrent migrators queue instead of half-applying. */
const MIGRATION_LOCK_KEY = 0x5e771e;

export interface FinanceMigrationResult {
  applied: number[];
  current: number;
}

/**
 * Applies the pending finance migrations, one transaction each. Each transaction takes an
 * advisory lock and records its own version first, so two migrators never both apply one.
 */
export async function migrateFinance(client: pg.ClientBase, schema: string): Promise<FinanceMigrationResult> {
  const s = escapeIdentifier(schema);
  const applied: number[] = [];
  for (const m of readMigrations('finance')) {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const inserted = await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
        m.version,
        m.name,
      ]);
      if (inserted.rowCount === 1) {
        await client.query(`SET LOCAL search_path TO ${s}`);
        await client.query(m.sql);
        applied.push(m.version);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
  return { applied, current: await financeSchemaVersion(client, schema) };
}

/** The highest applied finance migration, 0 when the schema is not there yet. */
export async function financeSchemaVersion(client: pg.ClientBase, schema: string): Promise<number> {
  try {
    const r = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${escapeIdentifier(schema)}.schema_migrations`);
    return r.rows[0]?.v ?? 0;
  } catch (err) {
    if (pgCode(err) === PG_UNDEFINED_TABLE) return 0;
    throw err;
  }
}

/** `run` refuses to start on an old schema rather than half-working against it. */
export async function assertFinanceCurrent(client: pg.ClientBase, schema: string): Promise<void> {
  const latest = Math.max(...readMigrations('finance').map((m) => m.version));
  const current = await financeSchemaVersion(client, schema);
  if (current < latest) {
    throw new UsageError(
      `finance schema "${schema}" is at version ${current}, this release needs ${latest}: run \`settle-ingest migrate\` first`,
    );
  }
  if (current > latest) {
    throw new UsageError(
      `finance schema "${schema}" is at version ${current}, newer than this release knows (${latest}): upgrade settle-ingest`,
    );
  }
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
      `the layout names column(s) ${missing.join(', ')} that ${schema}.settlement_rows does not have: add them with a migration`,
    );
  }
}
