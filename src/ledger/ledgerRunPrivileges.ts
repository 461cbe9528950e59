import pg from 'pg';
import { connectPostgres, endPostgres } from '../db/pgConnect.js';
import { redactSecrets } from '../redactSecrets.js';
import { LEDGER_SCHEMA } from './pgLedger.js';

/**
 * What a run (and `watch`) writes to a PostgreSQL ledger, table by table: its runs, files,
 * events, moves and their intents, ignored names and partner leases; the migrations are read
 * only. The statements are sqlLedger.ts', partnerLeases.ts' and ignoredNames.ts'.
 */
export const RUN_LEDGER_NEEDS: Readonly<Record<string, readonly string[]>> = {
  schema_migrations: ['SELECT'],
  runs: ['SELECT', 'INSERT', 'UPDATE'],
  processed_files: ['SELECT', 'INSERT', 'UPDATE'],
  ledger_events: ['SELECT', 'INSERT'],
  moves: ['SELECT', 'INSERT', 'UPDATE'],
  move_intents: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  ignored_names: ['SELECT', 'INSERT', 'UPDATE'],
  partner_leases: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
};

/**
 * The privileges the ledger's role lacks for a run's writes, each as the GRANT that gives it:
 * on the tables above, and USAGE on every sequence of the schema (an INSERT takes its id from
 * one: "permission denied for sequence processed_files_id_seq" otherwise). Empty when it has all.
 */
export async function missingRunLedgerGrants(url: string): Promise<{ role: string; grants: string[] }> {
  const client = await connectPostgres(url, {
    what: 'ledger',
    applicationName: 'settle-ingest doctor',
    connectTimeoutMs: 15_000,
    onError: () => undefined,
  });
  try {
    const role = (await client.query<{ role: string }>('SELECT current_user AS role')).rows[0]!.role;
    const grants: string[] = [];
    const schema = pg.escapeIdentifier(LEDGER_SCHEMA);
    const who = pg.escapeIdentifier(role);
    for (const [table, privileges] of Object.entries(RUN_LEDGER_NEEDS)) {
      const qualified = `${LEDGER_SCHEMA}.${table}`;
      const missing: string[] = [];
      for (const privilege of privileges) {
        const held = await client.query<{ ok: boolean }>('SELECT has_table_privilege($1, $2) AS ok', [qualified, privilege]);
        if (!held.rows[0]!.ok) missing.push(privilege);
      }
      if (missing.length > 0) grants.push(`GRANT ${missing.join(', ')} ON ${schema}.${pg.escapeIdentifier(table)} TO ${who}`);
    }
    const sequences = await client.query<{ name: string; ok: boolean }>(
      `SELECT c.relname AS name, has_sequence_privilege(c.oid, 'USAGE') AS ok
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'S' AND n.nspname = $1 ORDER BY c.relname`,
      [LEDGER_SCHEMA],
    );
    const unusable = sequences.rows.filter((s) => !s.ok).map((s) => `${schema}.${pg.escapeIdentifier(s.name)}`);
    if (unusable.length > 0) grants.push(`GRANT USAGE ON SEQUENCE ${unusable.join(', ')} TO ${who}`);
    // a role whose transactions are read-only (a replica, or default_transaction_read_only) writes nothing at all
    const readOnly = (await client.query<{ on: string }>('SELECT current_setting($1) AS on', ['default_transaction_read_only'])).rows[0]!
      .on;
    if (readOnly === 'on') grants.push(`ALTER ROLE ${who} SET default_transaction_read_only = off`);
    return { role, grants };
  } catch (err) {
    throw new Error(`ledger ${redactSecrets(url)}: ${(err as Error).message}`, { cause: err });
  } finally {
    await endPostgres(client);
  }
}
