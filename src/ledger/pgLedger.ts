import pg from 'pg';
import { errorMessage } from '../errors.js';
import { endPostgres } from '../db/pgConnect.js';
import { PG_UNIQUE_VIOLATION, pgCode } from '../db/pgErrors.js';
import { pendingMigrationsSql, type MigrationResult } from '../db/migrator.js';
import { assertPgCurrent, migratePg, pgSchemaVersion } from '../db/pgMigrate.js';
import { connectWatched, explainDbWait } from '../db/statementWatch.js';
import { redactSecrets } from '../redactSecrets.js';
import { SqlLedger } from './sqlLedger.js';
import { CLOCK_SHIFT_MS } from '../clock.js';
import { LedgerUnavailableError, numberPlaceholders, pgClockSql, type Durability, type SqlPort, type SqlRow } from './sqlPort.js';

/** The ledger's tables live in their own schema, in whatever database the URL names. */
export const LEDGER_SCHEMA = 'settle_ledger';

/** The PostgreSQL store behind the ledger's port, for several hosts sharing one ledger. */
class PgPort implements SqlPort {
  readonly sharedAcrossHosts = true;
  /** each statement as the server runs it: numbered placeholders, the server's clock; and with its `?` left for values inlined */
  private readonly texts = new Map<string, { numbered: string; clocked: string }>();
  /** a transaction's BEGIN (and its SET LOCAL), not yet sent: it goes with the transaction's first statement */
  private pendingBegin: string | undefined;

  constructor(
    readonly location: string,
    private readonly client: pg.Client,
  ) {}

  /** `rowMode: 'array'`: each row an array of its columns' values (SqlPort.arrays) */
  private async query(sql: string, params: unknown[], rowMode?: 'array'): Promise<pg.QueryResult> {
    try {
      let text = this.texts.get(sql);
      if (text === undefined) {
        const clocked = pgClockSql(sql, CLOCK_SHIFT_MS);
        this.texts.set(sql, (text = { numbered: numberPlaceholders(clocked), clocked }));
      }
      const begin = this.pendingBegin;
      if (begin !== undefined) {
        this.pendingBegin = undefined;
        // one round trip for BEGIN and the first statement, as a text batch (its values as literals)
        const inlined = rowMode === undefined ? inlineValues(text.clocked, params) : undefined;
        if (inlined !== undefined) {
          const results = (await this.client.query(`${begin};\n${inlined}`)) as unknown as pg.QueryResult[];
          return results[results.length - 1]!;
        }
        await this.client.query(begin);
      }
      if (rowMode !== undefined) return await this.client.query({ text: text.numbered, values: params, rowMode });
      return await this.client.query(text.numbered, params);
    } catch (err) {
      if (this.isUniqueViolation(err)) throw err;
      // a wait the server's timeouts or the statement watch ended says which, how long, and --ledger-timeout
      const explained = explainDbWait(this.client, err);
      throw new LedgerUnavailableError(`ledger ${this.location}: ${errorMessage(explained)}`, { cause: explained });
    }
  }

  async all(sql: string, params: unknown[] = []): Promise<SqlRow[]> {
    return (await this.query(sql, params)).rows as SqlRow[];
  }

  async arrays(sql: string, params: unknown[] = []): Promise<unknown[][]> {
    return (await this.query(sql, params, 'array')).rows as unknown[][];
  }

  async run(sql: string, params: unknown[] = []): Promise<number> {
    return (await this.query(sql, params)).rowCount ?? 0;
  }

  /**
   * An unsynced commit is PostgreSQL's asynchronous commit for that one transaction (SET LOCAL).
   * BEGIN waits for the transaction's first statement and goes in its round trip (a file's
   * ledger writes are a few short transactions, each mostly waiting on its round trips:
   * docs/SCALING.md); a transaction that sent nothing sends neither BEGIN nor COMMIT.
   */
  async transaction<T>(fn: () => Promise<T>, durability: Durability = 'synced'): Promise<T> {
    this.pendingBegin = durability === 'unsynced' ? 'BEGIN; SET LOCAL synchronous_commit = off' : 'BEGIN';
    try {
      const result = await fn();
      if (this.pendingBegin !== undefined) this.pendingBegin = undefined;
      else await this.all('COMMIT');
      return result;
    } catch (err) {
      const begun = this.pendingBegin === undefined;
      this.pendingBegin = undefined;
      if (begun) await this.client.query('ROLLBACK').catch(() => undefined);
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

/**
 * `sql` with each `?` replaced by its value as a quoted literal, the very text node-postgres
 * would send as the parameter (a literal, like an untyped parameter, takes its type from where
 * it stands): strings, numbers, booleans and NULL. Undefined when a value is anything else (a
 * Date, a Buffer, an object), or the count differs: the statement is then sent with parameters.
 */
export function inlineValues(sql: string, params: unknown[]): string | undefined {
  const literals: string[] = [];
  for (const value of params) {
    if (value === null || value === undefined) literals.push('NULL');
    else if (typeof value === 'string') literals.push(pg.escapeLiteral(value));
    else if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
      literals.push(pg.escapeLiteral(String(value)));
    } else return undefined;
  }
  let n = 0;
  const text = sql.replace(/\?/g, () => literals[n++] ?? '?');
  return n === literals.length ? text : undefined;
}

/**
 * The ledger's connection, for the store and for what reads its schema (--print-sql, ledger copy).
 * No wait on the ledger is unbounded, as none on the finance database is: connecting, every lock
 * wait, statement and commit (the migrations' too) end after `timeoutMs` (--ledger-timeout), under
 * the server's own timeouts and the statement watch (src/db/statementWatch.ts) for a server that
 * answers nothing; after a stop request (`stop`: SIGTERM), within seconds.
 */
export function connectPgLedger(url: string, opts: { timeoutMs?: number; stop?: AbortSignal } = {}): Promise<pg.Client> {
  return connectWatched(url, {
    what: 'ledger',
    applicationName: 'settle-ingest ledger',
    option: '--ledger-timeout',
    // at least a second: 0 would turn the server's timeouts off
    timeoutMs: Math.max(1000, Math.round(opts.timeoutMs ?? DEFAULT_LEDGER_TIMEOUT_MS)),
    onError: () => undefined, // a dropped idle connection surfaces on the next query
    stop: opts.stop,
  });
}

/** What every message about the schema names: `ledger postgres://…: schema "settle_ledger"`. */
export const pgLedgerLabel = (url: string): string => `ledger ${redactSecrets(url)}: schema "${LEDGER_SCHEMA}"`;

/** What `migrate --print-sql` shows of a PostgreSQL ledger: its pending migrations, changing nothing. */
export async function pgLedgerMigrationSql(url: string): Promise<string> {
  const client = await connectPgLedger(url);
  try {
    const current = await pgSchemaVersion(client, LEDGER_SCHEMA);
    const first = current === 0 ? `-- schema ${LEDGER_SCHEMA} and its schema_migrations are created first\n` : '';
    const store = { label: pgLedgerLabel(url), set: 'ledger-pg' as const };
    return first + pendingMigrationsSql(store, current, 'ledger', `with search_path ${LEDGER_SCHEMA}`);
  } finally {
    await endPostgres(client);
  }
}

/**
 * Connects, and creates or upgrades the schema (`create`, telling `migrated` what it applied) or
 * checks that it is current; every wait bounded as connectPgLedger says.
 */
export async function openPgLedger(
  url: string,
  opts: { create: boolean; readOnly?: boolean; timeoutMs?: number; stop?: AbortSignal; migrated?: (result: MigrationResult) => void },
): Promise<SqlLedger> {
  const location = redactSecrets(url);
  const client = await connectPgLedger(url, opts);
  try {
    const label = pgLedgerLabel(url);
    if (opts.create) {
      const result = await migratePg(client, LEDGER_SCHEMA, 'ledger-pg', label);
      opts.migrated?.(result);
    } else await assertPgCurrent(client, LEDGER_SCHEMA, 'ledger-pg', label);
    await client.query(`SET search_path TO ${pg.escapeIdentifier(LEDGER_SCHEMA)}`);
    // status and the reports: a role with SELECT alone reads it, and nothing here could write
    if (opts.readOnly) await client.query('SET default_transaction_read_only = on');
  } catch (err) {
    await client.end().catch(() => undefined);
    const explained = explainDbWait(client, err);
    if (explained === err) throw err;
    throw new LedgerUnavailableError(`ledger ${location}: ${errorMessage(explained)}`, { cause: explained });
  }
  return new SqlLedger(new PgPort(location, client));
}

const DEFAULT_LEDGER_TIMEOUT_MS = 15_000;
