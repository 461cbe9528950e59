import type { MigrationResult } from '../db/migrator.js';
import type { Ledger } from './ledger.js';
import { openPgLedger, pgLedgerMigrationSql } from './pgLedger.js';
import { openSqliteLedger, sqliteMigrationSql } from './sqliteLedger.js';

export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//.test(location);

/**
 * The ledger at `location`: a SQLite file (one host), or a PostgreSQL URL when several hosts
 * share it. `create` (for `migrate`) creates or upgrades it (`migrated` hears what it applied); everything else needs it current.
 */
export async function openLedger(
  location: string,
  opts: { create: boolean; readOnly?: boolean; busyTimeoutMs: number; migrated?: (result: MigrationResult) => void },
): Promise<Ledger> {
  if (isPostgresUrl(location)) return openPgLedger(location, opts);
  return openSqliteLedger(location, opts);
}

/** What `migrate` would run on the ledger at `location` (its pending migrations), changing nothing. */
export async function ledgerMigrationSql(location: string, busyTimeoutMs: number): Promise<string> {
  if (isPostgresUrl(location)) return pgLedgerMigrationSql(location);
  return sqliteMigrationSql(location, busyTimeoutMs);
}
