import pg from 'pg';
import { UsageError } from '../errors.js';
import type { Migration, MigrationSet } from './migrationFiles.js';
import { applyMigrationsInTurn, assertCurrent, pendingMigrations, type MigrationResult } from './migrator.js';
import { PG_UNDEFINED_TABLE, pgCode } from './pgErrors.js';

const { escapeIdentifier } = pg;

/** Same key in every process, so concurrent migrators queue instead of half-applying. */
const MIGRATION_LOCK_KEY = 0x5e771e;

/** The oldest PostgreSQL release the schemas are written and tested for (server_version_num). */
export const OLDEST_POSTGRESQL = 140000;

/** `migrate` on an older server: refused before anything is created, the server named. */
export function refuseUnsupportedServer(versionNum: number, version: string): void {
  if (versionNum >= OLDEST_POSTGRESQL) return;
  throw new UsageError(
    `PostgreSQL ${version} is older than ${OLDEST_POSTGRESQL / 10000}, the oldest release settle-ingest supports: upgrade the server`,
  );
}

/** A name as a person types it into psql: bare when it needs no quotes. */
const sqlName = (name: string): string => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : escapeIdentifier(name));

/** Where every message about a role's privileges sends the reader. */
export const SEE_ROLES = `see docs/OPERATING.md, "Database roles"`;

/**
 * `migrate` creates the schema (CREATE on the database) or, once it exists, creates tables in it
 * (CREATE on the schema, which its owner has): said before any migration starts, naming the
 * privilege, the database or schema, and the grant (where PostgreSQL's own refusal names only
 * the database: "permission denied for database finance").
 */
export async function assertCanMigrate(client: pg.ClientBase, schema: string): Promise<void> {
  const r = await client.query<{ role: string; db: string; exists: boolean; can: boolean }>(
    `SELECT current_user AS role, current_database() AS db,
            EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists,
            CASE WHEN EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)
                 THEN has_schema_privilege($1, 'CREATE')
                 ELSE has_database_privilege(current_database(), 'CREATE') END AS can`,
    [schema],
  );
  const { role, db, exists, can } = r.rows[0]!;
  if (can) return;
  throw new UsageError(
    exists
      ? `database role "${role}" lacks CREATE on schema ${schema}: run migrate as the schema's owner (the migration role; ${SEE_ROLES})`
      : `database role "${role}" lacks CREATE on database ${db}: as the database's owner, CREATE SCHEMA ${sqlName(schema)} AUTHORIZATION ${sqlName(role)}, or GRANT CREATE ON DATABASE ${sqlName(db)} TO ${sqlName(role)} (${SEE_ROLES})`,
  );
}

/**
 * The PostgreSQL side of the migrator (`migrator.ts`): each migration in one transaction that
 * takes the advisory lock, then creates the schema and `schema_migrations` if missing and records
 * the migration's version before running it. `label` names the schema in the messages. A role
 * that could not make the schema or its tables is refused first, naming the privilege it lacks.
 */
export async function migratePg(client: pg.ClientBase, schema: string, set: MigrationSet, label: string): Promise<MigrationResult> {
  const server = await client.query<{ num: string; version: string }>(
    `SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version`,
  );
  refuseUnsupportedServer(Number(server.rows[0]!.num), server.rows[0]!.version);
  const before = await pgSchemaVersion(client, schema);
  if (pendingMigrations({ label, set }, before).length > 0) await assertCanMigrate(client, schema);
  const quoted = escapeIdentifier(schema);
  const applyOne = (migration: Migration) =>
    withMigrationLock(client, async () => {
      // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema exists: a
      // migration role that owns its schema and nothing else must be able to migrate
      const known = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (known.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const inserted = await client.query(
        `INSERT INTO ${quoted}.schema_migrations (version, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [migration.version, migration.name],
      );
      if (inserted.rowCount !== 1) return false;
      await client.query(`SET LOCAL search_path TO ${quoted}`);
      await client.query(migration.sql);
      return true;
    });
  const applied = await applyMigrationsInTurn({ label, set }, before, applyOne);
  return { applied, current: await pgSchemaVersion(client, schema) };
}

/** Runs `work` in one transaction holding the migration lock: beside the numbered migrations, a layout's table. */
export async function withMigrationLock<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const result = await work();
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
    const result = await client.query<{ version: number | null }>(
      `SELECT max(version) AS version FROM ${escapeIdentifier(schema)}.schema_migrations`,
    );
    return result.rows[0]?.version ?? 0;
  } catch (err) {
    if (pgCode(err) === PG_UNDEFINED_TABLE) return 0;
    throw err;
  }
}

/** Refuses to work on an old (or newer) schema rather than half-working against it. */
export async function assertPgCurrent(client: pg.ClientBase, schema: string, set: MigrationSet, label: string): Promise<void> {
  assertCurrent({ label, set }, await pgSchemaVersion(client, schema));
}
