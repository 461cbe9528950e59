import type { Ledger } from './ledger.js';
import { openPgLedger } from './pgLedger.js';
import { openSqliteLedger } from './sqliteLedger.js';

export const isPostgresUrl = (location: string) => /^postgres(ql)?:\/\//.test(location);

/**
 * The ledger at `location`: a SQLite file (one host), or a PostgreSQL URL when several hosts
 * share it. `create` (for `migrate`) creates or upgrades it; everything else needs it current.
 * `timeoutMs` (--ledger-timeout) bounds every wait on it: SQLite's busy wait for another process's
 * write; on PostgreSQL connecting, each lock wait, statement and commit. `stop` (SIGTERM) cuts a
 * PostgreSQL wait short (a SQLite wait is bounded by the busy timeout alone).
 */
export async function openLedger(
  location: string,
  opts: { create: boolean; readOnly?: boolean; timeoutMs: number; stop?: AbortSignal },
): Promise<Ledger> {
  if (isPostgresUrl(location)) return openPgLedger(location, opts);
  return openSqliteLedger(location, { create: opts.create, readOnly: opts.readOnly, busyTimeoutMs: opts.timeoutMs });
}
