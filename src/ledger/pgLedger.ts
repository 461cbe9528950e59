import pg from 'pg';
import { SettleError, TransientError, errorMessage } from '../errors.js';
import { connectPostgres, endPostgres } from '../db/pgConnect.js';
import { PG_UNIQUE_VIOLATION, pgCode } from '../db/pgErrors.js';
import { assertPgCurrent, migratePg } from '../db/pgMigrate.js';
import { redactSecrets } from '../redactSecrets.js';
import { SqlLedger } from './sqlLedger.js';
import { CLOCK_SHIFT_MS } from '../clock.js';
import { numberPlaceholders, pgClockSql, type Durability, type SqlPort, type SqlRow } from './sqlPort.js';

/** The ledger's tables live in their own schema, in whatever database the URL names. */
export const LEDGER_SCHEMA = 'settle_ledger';

/** The PostgreSQL store behind the ledger's port, for several hosts sharing one ledger. */
class PgPort implements SqlPort {
  readonly sharedAcrossHosts = true;
  /** each statement as the server runs it: numbered placeholders, the server's clock */
  private readonly texts = new Map<string, string>();

  constructor(
    readonly location: string,
    private readonly client: pg.Client,
  ) {}

  private async query(sql: string, params: unknown[]): Promise<pg.QueryResult> {
    try {
      let text = this.texts.get(sql);
      if (text === undefined) this.texts.set(sql, (text = numberPlaceholders(pgClockSql(sql, CLOCK_SHIFT_MS))));
      return await this.client.query(text, params);
    } catch (err) {
      if (err instanceof SettleError || this.isUniqueViolation(err)) throw err;
      throw new TransientError(`ledger ${this.location}: ${errorMessage(err)}`, { cause: err });
    }
  }

  async all(sql: string, params: unknown[] = []): Promise<SqlRow[]> {
    return (await this.query(sql, params)).rows as SqlRow[];
  }

  async run(sql: string, params: unknown[] = []): Promise<number> {
    return (await this.query(sql, params)).rowCount ?? 0;
  }

  /** An unsynced commit is PostgreSQL's asynchronous commit for that one transaction (SET LOCAL). */
  async transaction<T>(fn: () => Promise<T>, durability: Durability = 'synced'): Promise<T> {
    await this.all('BEGIN');
    try {
      if (durability === 'unsynced') await this.all('SET LOCAL synchronous_commit = off');
      const result = await fn();
      await this.all('COMMIT');
      return result;
    } catch (err) {
      await this.client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  isUniqueViolation(err: unknown): boolean {
    return pgCode(err) === PG_UNIQUE_VIOLATION;
  }

  /** Ends the connection; the server's own close of it is not waited for (endPostgres). */
  close(): Promise<void> {
    return endPostgres(this.client);
  }
}

/** Connects, and creates or upgrades the schema (`create`) or checks that it is current. */
export async function openPgLedger(url: string, opts: { create: boolean; readOnly?: boolean; busyTimeoutMs?: number }): Promise<SqlLedger> {
  const location = redactSecrets(url);
  const client = await connectPostgres(url, {
    what: 'ledger',
    applicationName: 'settle-ingest ledger',
    connectTimeoutMs: 15_000,
    onError: () => undefined, // a dropped idle connection surfaces on the next query
  });
  try {
    const label = `ledger ${location}: schema "${LEDGER_SCHEMA}"`;
    if (opts.create) await migratePg(client, LEDGER_SCHEMA, 'ledger-pg', label);
    else await assertPgCurrent(client, LEDGER_SCHEMA, 'ledger-pg', label);
    await client.query(`SET search_path TO ${pg.escapeIdentifier(LEDGER_SCHEMA)}`);
    // status and the reports: a role with SELECT alone reads it, and nothing here could write
    if (opts.readOnly) await client.query('SET default_transaction_read_only = on');
    // like SQLite's busy timeout: a ledger locked or hung past --ledger-timeout is an error (exit 1), never a hang
    const waitMs = Math.max(1000, Math.round(opts.busyTimeoutMs ?? 15_000));
    await client.query(`SET lock_timeout = ${waitMs}`);
    await client.query(`SET statement_timeout = ${Math.max(waitMs, 60_000)}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return new SqlLedger(new PgPort(location, client));
}
