import pg from 'pg';
import { UsageError, errorMessage } from '../errors.js';
import { PG_INSUFFICIENT_PRIVILEGE, pgCode } from '../db/pgErrors.js';
import { SEE_ROLES as SEE } from '../db/pgMigrate.js';
import type { FinanceTarget } from './target.js';

/** A table's privileges a command needs, by the table's name in the finance schema. */
export type TableNeeds = Record<string, readonly ('SELECT' | 'INSERT' | 'UPDATE' | 'DELETE')[]>;

/** What one ingest run does in the finance schema (docs/OPERATING.md, "Database roles": the ingest role), loading into `table`. */
export function runNeeds(table: string): TableNeeds {
  return {
    schema_migrations: ['SELECT'],
    file_loads: ['SELECT', 'INSERT', 'UPDATE'],
    loads: ['SELECT', 'INSERT', 'UPDATE'],
    [table]: ['SELECT', 'INSERT'],
  };
}

/** Reprocessing replaces a content's rows: a run's privileges, and DELETE on the table. */
export function reprocessNeeds(table: string): TableNeeds {
  return { ...runNeeds(table), [table]: ['SELECT', 'INSERT', 'DELETE'] };
}

/** `audit` and `adopt` only read. */
export function readNeeds(table: string): TableNeeds {
  return { schema_migrations: ['SELECT'], file_loads: ['SELECT'], loads: ['SELECT'], [table]: ['SELECT'] };
}

/**
 * Refuses to start (exit 2) when the connected role lacks a privilege the command needs, naming
 * each one, instead of failing file by file half-way through. A table not there yet is left to
 * the schema-version check, which says to migrate.
 */
export async function assertPrivileges({ client, schema }: FinanceTarget, needs: TableNeeds): Promise<void> {
  const head = await client.query<{ role: string; usage: boolean | null }>(
    `SELECT current_user AS role, (SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = $1) AS usage`,
    [schema],
  );
  const { role, usage } = head.rows[0]!;
  if (usage === null) return; // no schema yet: the schema-version check says to migrate
  if (!usage) {
    throw new UsageError(`database role "${role}" lacks USAGE on schema ${schema}: GRANT USAGE ON SCHEMA ${schema} TO ${role} (${SEE})`);
  }
  const queryResult = await client.query<{ missing: string[] | null }>(
    `SELECT array_agg(format('%s on table %I.%I', p.priv, $1::text, t.tab) ORDER BY t.tab, p.priv) AS missing
       FROM jsonb_each($2::jsonb) AS t(tab, privs)
            CROSS JOIN LATERAL jsonb_array_elements_text(t.privs) AS p(priv)
      WHERE to_regclass(format('%I.%I', $1::text, t.tab)) IS NOT NULL
        AND NOT has_table_privilege(format('%I.%I', $1::text, t.tab), p.priv)`,
    [schema, JSON.stringify(needs)],
  );
  const missing = queryResult.rows[0]?.missing;
  if (missing && missing.length > 0) {
    throw new UsageError(`database role "${role}" lacks ${missing.join(', ')}: grant as the schema's owner (${SEE})`);
  }
}

/**
 * A layout whose rows are staged (numbered repeats, rows seen before: stagedLoad.ts) makes a
 * temporary table in each load's transaction: the role needs TEMPORARY on the database (PUBLIC has
 * it unless it was revoked).
 */
export async function assertCanStage({ client }: FinanceTarget): Promise<void> {
  const r = await client.query<{ role: string; db: string; temp: boolean }>(
    `SELECT current_user AS role, current_database() AS db, has_database_privilege(current_database(), 'TEMPORARY') AS temp`,
  );
  const { role, db, temp } = r.rows[0]!;
  if (!temp)
    throw new UsageError(
      `database role "${role}" lacks TEMPORARY on database ${db}, which a layout with "occurrence" or "seenBefore" needs for each load's staging table: GRANT TEMPORARY ON DATABASE ${pg.escapeIdentifier(db)} TO ${pg.escapeIdentifier(role)} (${SEE})`,
    );
}

/** A privilege error from anywhere (a grant revoked mid-run): configuration, exit 2, one line. */
export function privilegeError(err: unknown): UsageError | undefined {
  if (pgCode(err) !== PG_INSUFFICIENT_PRIVILEGE) return undefined;
  return new UsageError(`the database role lacks a privilege: ${errorMessage(err)} (${SEE})`, { cause: err });
}
