import { DatabaseUnresponsiveError } from '../load/statementWatch.js';

/**
 * Whether an error means the finance database connection is unusable (server gone,
 * network cut, administrator shutdown, a server that answers nothing), as opposed to a
 * problem with one file.
 */
export function isConnectionLost(err: unknown): boolean {
  if (err instanceof DatabaseUnresponsiveError) return true;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|Client has encountered a connection error|not queryable/i.test(message);
}
