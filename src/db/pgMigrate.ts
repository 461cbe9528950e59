import pg from 'pg';
import { UsageError } from '../errors.js';
import { readMigrations, type MigrationSet } from './migrationFiles.js';
import { PG_UNDEFINED_TABLE, pgCode } from './pgErrors.js';

const { escapeIdentifier } = pg;

/** Same key in every process, so concurrent migrators queue instead of half-applying. */
const MIGRATION_LOCK_KEY = 0x5e771e;

export interface PgMigrationResult {
  applied: number[];
  current: number;
}

/** The oldest PostgreSQL release the schemas are written and tested for (server_version_num). */
export const OLDEST_POSTGRESQL = 140000;

/** `migrate` on an older server: refused before anything is created, the server named. */
export function refuseUnsupportedServer(versionNum: number, version: string): void {
  if (versionNum >= OLDEST_POSTGRESQL) return;
  throw new UsageError(
    `PostgreSQL ${version} is older than ${OLDEST_POSTGRESQL / 10000}, the oldest release settle-ingest supports: upgrade the server`,
  );
}

/**
 * Applies a set's pending migrations to `schema`, one transaction each. Each transaction
 * takes an advisory lock and records its own version first, so two migrators never both
 * apply one.
 */
export async function migratePg(client: pg.ClientBase, schema: string, set: MigrationSet): Promise<PgMigrationResult> {
  const server = await client.query<{ num: string; version: string }>(
    `SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version`,
  );
  refuseUnsupportedServer(Number(server.rows[0]!.num), server.rows[0]!.version);
  const s = escapeIdentifier(schema);
  const latest = Math.max(...readMigrations(set).map((m) => m.version));
  const before = await pgSchemaVersion(client, schema);
  if (before > latest) {
    throw new UsageError(`schema "${schema}" is at version ${before}, newer than this release knows (${latest}): upgrade settle-ingest`);
  }
  const applied: number[] = [];
  for (const m of readMigrations(set)) {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema exists: a
      // migration role that owns its schema and nothing else must be able to migrate
      const known = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (known.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`);
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
  return { applied, current: await pgSchemaVersion(client, schema) };
}

/** Runs `fn` in one transaction holding the migration lock: beside the numbered migrations, a layout's table. */
export async function withMigrationLock<T>(client: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** The highest applied migration in `schema`, 0 when the schema is not there yet. */
export async function pgSchemaVersion(client: pg.ClientBase, schema: string): Promise<number> {
  try {
    const r = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${escapeIdentifier(schema)}.schema_migrations`);
    return r.rows[0]?.v ?? 0;
  } catch (err) {
    if (pgCode(err) === PG_UNDEFINED_TABLE) return 0;
    throw err;
  }
}

/** Refuses to work on an old (or newer) schema rather than half-working against it. */
export async function assertPgCurrent(client: pg.ClientBase, schema: string, set: MigrationSet, what: string): Promise<void> {
  const latest = Math.max(...readMigrations(set).map((m) => m.version));
  const current = await pgSchemaVersion(client, schema);
  if (current < latest) {
    throw new UsageError(`${what} "${schema}" is at version ${current}, this release needs ${latest}: run \`settle-ingest migrate\` first`);
  }
  if (current > latest) {
    throw new UsageError(`${what} "${schema}" is at version ${current}, newer than this release knows (${latest}): upgrade settle-ingest`);
  }
}
