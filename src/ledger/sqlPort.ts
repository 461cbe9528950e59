/**
 * What the ledger's rules need from a SQL store, and nothing more: the SQLite file and the
 * shared PostgreSQL schema each implement this small port, and src/ledger/sqlLedger.ts
 * writes every rule once on top of it.
 *
 * SQL is written with `?` placeholders; a store that numbers them ($1, $2) rewrites them.
 * Rows come back as the driver gives them (snake_case columns; a timestamp may be a Date or
 * an ISO string, a count a number or a string, JSON an object or text): sqlLedger decodes.
 *
 * The ledger's clock is written in the SQL, never passed in: `ledger_now()` is the time every
 * row records (a run's start and end, an event, a claim, a lease, a move), `ledger_after(?)` that
 * time plus `?` seconds (a lease's end). Each store gives them: SQLite, one host's file, as
 * functions of its connection that read this host's clock (src/clock.ts); PostgreSQL, shared by
 * several hosts, as its server's `now()` in the very statement (pgClockSql), so that no host's
 * clock, however wrong, decides a time another host compares.
 */
import { TransientError } from '../errors.js';

export type SqlRow = Record<string, unknown>;

/**
 * A ledger statement that could not be done: the store is away, answers nothing, or a wait on it
 * ran past --ledger-timeout. Exit 1, try again next run; never mistaken for the finance database's
 * connection being lost (pipeline/connectionLost.ts), whatever the driver's words.
 */
export class LedgerUnavailableError extends TransientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LedgerUnavailableError';
  }
}

/** `synced` (the default): on the disk when the commit returns; `unsynced`: see SqlPort.transaction. */
export type Durability = 'synced' | 'unsynced';

export interface SqlPort {
  /** where the ledger lives, for messages (a path, or a URL without its password) */
  readonly location: string;
  /** several hosts share this store (PostgreSQL): partners are leased to one run at a time (partnerLeases.ts) */
  readonly sharedAcrossHosts: boolean;
  /** the rows of a statement (a SELECT, or a write with RETURNING) */
  all(sql: string, params?: unknown[]): Promise<SqlRow[]>;
  /**
   * The rows of a SELECT as arrays of its columns' values, in the SELECT's order, as the driver
   * gives them: for a read of millions of rows, where the driver's object per row (a key per
   * column) was most of the read's CPU. The caller names its columns, never `*`.
   */
  arrays(sql: string, params?: unknown[]): Promise<unknown[][]>;
  /** a write without RETURNING: the number of rows it changed */
  run(sql: string, params?: unknown[]): Promise<number>;
  /**
   * `task` in one write transaction: its state changes and events commit together or not at all.
   * `unsynced`: the commit need not reach the disk before it returns (a record the next run
   * rebuilds from the ledger when a power loss drops it); it reaches the disk with the next
   * synced commit, which never overtakes it.
   */
  transaction<T>(task: () => Promise<T>, durability?: Durability): Promise<T>;
  /** the statement broke a UNIQUE constraint (another claimant won at the same instant) */
  isUniqueViolation(err: unknown): boolean;
  close(): Promise<void>;
}

/** `?` → `$1`, `$2`, …: our SQL never has a question mark inside a literal. */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * `ledger_now()` and `ledger_after(?)` as PostgreSQL's own clock: the server's `now()`, cut to
 * milliseconds (JavaScript's precision, so that a time read back and written again compares
 * equal), moved by `shiftMs` (the test build's SETTLE_TEST_NOW; 0 otherwise).
 */
export function pgClockSql(sql: string, shiftMs: number): string {
  const now =
    shiftMs === 0
      ? "date_trunc('milliseconds', now())"
      : `date_trunc('milliseconds', now() + interval '${Math.round(shiftMs)} milliseconds')`;
  return sql.replace(/ledger_now\(\)/g, now).replace(/ledger_after\(\?\)/g, `(${now} + make_interval(secs => ?))`);
}
