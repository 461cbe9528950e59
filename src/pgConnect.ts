import pg from 'pg';
import { TransientError, UsageError, errorMessage } from './errors.js';
import { PG_INVALID_AUTHORIZATION, PG_INVALID_CATALOG_NAME, PG_INVALID_PASSWORD, pgCode } from './pgErrors.js';
import { redactSecrets } from './redactSecrets.js';

/**
 * Silence after which the kernel starts probing a connection. Node 20 sets only this (TCP_KEEPIDLE);
 * probe interval and count stay the kernel's, so a vanished peer is noticed minutes later, not never.
 */
const KEEPALIVE_IDLE_MS = 10_000;

export interface PgConnectOptions {
  /** how messages name the database: "finance database", "ledger" */
  what: string;
  applicationName: string;
  connectTimeoutMs: number;
  /** the option that sets `connectTimeoutMs`, named when it runs out */
  timeoutOption?: string;
  /** a connection that breaks while idle emits 'error'; without a listener it would end the process */
  onError: (err: Error) => void;
}

/**
 * The node-postgres options of every connection this tool opens. `connectionTimeoutMillis`
 * bounds TCP connect, TLS and login together. Server-side timeouts are not set here: node-postgres
 * would send them as startup parameters, which connection poolers such as PgBouncer refuse.
 */
export function pgClientConfig(url: string, o: Pick<PgConnectOptions, 'applicationName' | 'connectTimeoutMs'>): pg.ClientConfig {
  return {
    connectionString: url,
    application_name: o.applicationName,
    connectionTimeoutMillis: o.connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
  };
}

/**
 * Connects. An unreachable or silent server is transient (exit 1, try again next run); an
 * unusable URL, a refused login or a missing database is configuration (exit 2). Messages
 * carry the URL without its secrets.
 */
export async function connectPostgres(url: string, o: PgConnectOptions): Promise<pg.Client> {
  const where = `${o.what} ${redactSecrets(url)}`;
  let client: pg.Client;
  try {
    client = new pg.Client(pgClientConfig(url, o));
  } catch (err) {
    throw new UsageError(`${where} cannot be used: ${redactSecrets(errorMessage(err))}`, { cause: err });
  }
  client.on('error', o.onError);
  try {
    await client.connect();
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    const code = pgCode(err);
    const why = redactSecrets(errorMessage(err));
    if (code === PG_INVALID_PASSWORD || code === PG_INVALID_AUTHORIZATION || code === PG_INVALID_CATALOG_NAME) {
      throw new UsageError(`${where} refused the connection: ${why}`, { cause: err });
    }
    // node-postgres ends a connect that outlives connectionTimeoutMillis with exactly this error
    const timedOut = why === 'timeout expired';
    const seconds = o.connectTimeoutMs / 1000;
    const silent = `no answer within ${seconds}s${o.timeoutOption ? ` (${o.timeoutOption} ${seconds})` : ''}`;
    throw new TransientError(`${where} is unreachable: ${timedOut ? silent : why || code}`, { cause: err });
  }
}
