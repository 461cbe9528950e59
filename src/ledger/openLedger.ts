import type { Ledger } from './ledger.js';
import { openPgLedger } from './pgLedger.js';
import { openSqliteLedger } from './sqliteLedger.js';

export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//.test(location);

/**
 * The ledger at `location`: a SQLite file (one host), or a PostgreSQL URL when several hosts
 * share it. `create` (for `migrate`) creates or upgrades it; everything else needs it current.
 */
export async function openLedger(location: string, opts: { create: boolean; readOnly?: boolean; busyTimeoutMs: number }): Promise<Ledger> {
  if (isPostgresUrl(location)) return openPgLedger(location, opts);
  return openSqliteLedger(location, opts);
}
