import { DatabaseUnresponsiveError } from '../db/statementWatch.js';
import { LedgerUnavailableError } from '../ledger/sqlPort.js';
import { PG_ADMIN_SHUTDOWN, PG_CANNOT_CONNECT_NOW, PG_CONNECTION_EXCEPTION_CLASS, PG_CRASH_SHUTDOWN } from '../db/pgErrors.js';

const SERVER_GONE = [PG_ADMIN_SHUTDOWN, PG_CRASH_SHUTDOWN, PG_CANNOT_CONNECT_NOW];

/**
 * Whether an error means the finance database connection is unusable (server gone,
 * network cut, administrator shutdown, a server that answers nothing), as opposed to a
 * problem with one file. A PostgreSQL ledger's lost connection is not this: its error ends the run.
 */
export function isConnectionLost(err: unknown): boolean {
  if (err instanceof LedgerUnavailableError) return false;
  if (err instanceof DatabaseUnresponsiveError) return err.what === 'finance database';
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith(PG_CONNECTION_EXCEPTION_CLASS) || SERVER_GONE.includes(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|Client has encountered a connection error|not queryable/i.test(message);
}
