import pg from 'pg';
import { TransientError, UsageError } from '../errors.js';
import { redactUrl } from '../redactUrl.js';
import { PG_INVALID_AUTHORIZATION, PG_INVALID_CATALOG_NAME, PG_INVALID_PASSWORD, pgCode } from '../pgErrors.js';

/**
 * Connects to the finance database once per run. An unreachable server is transient
 * (exit 1, try again next run); a refused login or missing database is configuration (exit 2).
 */
export async function connectFinance(url: string | undefined, onLost: (err: Error) => void): Promise<pg.Client> {
  if (!url) throw new UsageError('no finance database: set --database-url or DATABASE_URL');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 15_000, application_name: 'settle-ingest' });
  // An idle connection that drops emits 'error'; without a listener it would kill the process.
  client.on('error', onLost);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    const code = pgCode(err);
    const where = redactUrl(url);
    if (code === PG_INVALID_PASSWORD || code === PG_INVALID_AUTHORIZATION || code === PG_INVALID_CATALOG_NAME) {
      throw new UsageError(`finance database ${where} refused the connection: ${(err as Error).message}`, { cause: err });
    }
    throw new TransientError(`finance database ${where} is unreachable: ${(err as Error).message || code}`, { cause: err });
  }
  return client;
}
