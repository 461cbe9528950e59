import type { MigrationResult } from '../db/migrator.js';
import type { Ledger } from './ledger.js';
import { openPgLedger, pgLedgerMigrationSql } from './pgLedger.js';
import { openSqliteLedger, sqliteMigrationSql } from './sqliteLedger.js';

export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//.test(location);

/**
 * The ledger at `location`: a SQLite file (one host), or a PostgreSQL URL when several hosts
 * share it. `create` (for `migrate`) creates or upgrades it (`migrated` hears what it applied);
 * everything else needs it current. `timeoutMs` (--ledger-timeout) bounds every wait on it:
 * SQLite's busy wait for another process's write; on PostgreSQL connecting, each lock wait,
 * statement and commit. `stop` (SIGTERM) cuts a PostgreSQL wait short (a SQLite wait is bounded
 * by the busy timeout alone).
 */
export async function openLedger(
  location: string,
  opts: { create: boolean; readOnly?: boolean; timeoutMs: number; stop?: AbortSignal; migrated?: (result: MigrationResult) => void },
): Promise<Ledger> {
  if (isPostgresUrl(location)) return openPgLedger(location, opts);
  return openSqliteLedger(location, {
    create: opts.create,
    readOnly: opts.readOnly,
    busyTimeoutMs: opts.timeoutMs,
    ...(opts.migrated ? { migrated: opts.migrated } : {}),
  });
}

/** What `migrate` would run on the ledger at `location` (its pending migrations), changing nothing. */
export async function ledgerMigrationSql(location: string, busyTimeoutMs: number): Promise<string> {
  if (isPostgresUrl(location)) return pgLedgerMigrationSql(location);
  return sqliteMigrationSql(location, busyTimeoutMs);
}
