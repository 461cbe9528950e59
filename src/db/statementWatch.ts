import type { Socket } from 'node:net';
import pg from 'pg';
import { SettleError, TransientError, errorMessage } from '../errors.js';
import { connectPostgres, describeTarget, pgClientConfig, STOP_SILENT_MS, type PgConnectOptions } from './pgConnect.js';
import { PG_LOCK_NOT_AVAILABLE, PG_QUERY_CANCELED, pgCode } from './pgErrors.js';
import {
  assertPgInternals,
  backendPid,
  clientSocket,
  onReadyForQuery,
  sendCancelRequest,
  socketIfAny,
  statementInFlight,
} from './pgInternals.js';

export interface WaitLimits {
  /** how messages name the database: "finance database", "ledger" */
  what: string;
  /** the option that sets `timeoutMs`, named in messages: "--db-timeout", "--ledger-timeout" */
  option: string;
  /** the option's value, in milliseconds */
  timeoutMs: number;
  /** a stop request (SIGTERM): a statement that is stuck then is cancelled without waiting out the timeout */
  stop?: AbortSignal;
}

/** The watchdog closed the connection: the server answered nothing, not even a cancel request. */
export class DatabaseUnresponsiveError extends TransientError {
  constructor(
    message: string,
    /** which database: "finance database", "ledger" */
    readonly what: string,
  ) {
    super(message);
    this.name = 'DatabaseUnresponsiveError';
  }
}

/** After a stop request, a cancelled statement not answered for this long has its connection closed. */
const STOP_CANCEL_GRACE_MS = 2_000;
/** After a stop request: a statement silent this long is checked for a wait on another session's lock. */
const STOP_LOCK_CHECK_MS = 1_000;
/** Waiting for a lock that another session holds ('extend', a table growing, passes by itself). */
const LOCK_WAIT_SQL = `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event <> 'extend'`;

const watches = new WeakMap<pg.ClientBase, StatementWatch>();

/**
 * Keeps every statement on a connection (the finance database's, a PostgreSQL ledger's) from
 * waiting forever. The server's own lock_timeout and statement_timeout come first; this watch
 * covers what they cannot: a COPY (statement_timeout is off for it, since a large file may stream
 * for longer) whose data the server stops accepting, a backend that answers nothing at all
 * (frozen, or a network path that went silent: the kernel still acknowledges, so TCP keepalive
 * never fires), and a stop request, which cancels a statement waiting on another session's lock
 * at once and any statement silent for a few seconds (STOP_SILENT_MS). It measures progress as
 * bytes moved on the socket, cancels with a protocol cancel request, and closes the connection
 * when even that is not answered. Without a stop request, a statement busy on the server, or a
 * COPY we are slow to feed, is left alone until the option's time has passed.
 */
class StatementWatch {
  private readonly timer: NodeJS.Timeout;
  private readonly socket: Socket;
  /** ReadyForQuery messages seen: a new count means the statement in hand has ended */
  private statementsEnded = 0;
  private seenEnded = -1;
  private moved = -1;
  private quietSince = Date.now();
  private cancelledAt: number | undefined;
  private stalledSince = 0;
  /** why the watch cancelled a statement, for the error that statement ends with */
  private cancelReason: string | undefined;
  /** a second session, opened after a stop request, that asks the server about lock waits */
  private side: { client: pg.Client; connected: Promise<void> } | undefined;
  private lockCheckRunning = false;

  constructor(
    private readonly client: pg.Client,
    private readonly url: string | undefined,
    private readonly limits: WaitLimits,
  ) {
    this.socket = clientSocket(client);
    onReadyForQuery(client, () => this.statementsEnded++);
    this.timer = setInterval(() => this.tick(), Math.max(100, Math.min(1000, limits.timeoutMs / 4))).unref();
    client.once('end', () => {
      clearInterval(this.timer);
      this.closeSide();
    });
  }

  private tick(): void {
    const now = Date.now();
    const busy = statementInFlight(this.client);
    const moved = this.socket.bytesRead + this.socket.bytesWritten - this.socket.writableLength;
    const sameStatement = busy && this.statementsEnded === this.seenEnded;
    if (!sameStatement) this.cancelledAt = undefined;
    if (!sameStatement || moved !== this.moved) {
      this.seenEnded = this.statementsEnded;
      this.moved = moved;
      this.quietSince = now;
      return;
    }
    const quiet = now - this.quietSince;
    const { what, option, timeoutMs } = this.limits;
    const limit = `${option} ${seconds(timeoutMs)}`;
    const grace = Math.min(timeoutMs, 10_000);
    const stopAsked = this.limits.stop?.aborted === true;
    if (this.cancelledAt !== undefined) {
      // a cancel is answered in milliseconds by a server that answers at all
      if (quiet >= (stopAsked ? Math.min(grace, STOP_CANCEL_GRACE_MS) : grace)) this.closeConnection(now - this.stalledSince);
      return;
    }
    // Data waiting in our socket buffer that the server does not take: a COPY the server stopped reading.
    if (this.socket.writableLength > 0 && quiet >= timeoutMs) {
      this.cancel(`the ${what} accepted no data for ${seconds(quiet)}s (${limit}): statement cancelled`);
    } else if (quiet >= timeoutMs + grace) {
      // the server's own timeouts should have ended the statement by now
      this.cancel(`the ${what} did not answer for ${seconds(quiet)}s (${limit}): statement cancelled`);
    } else if (stopAsked) {
      const asked = `asked to stop (${String(this.limits.stop!.reason ?? 'signal')})`;
      if (quiet >= Math.min(STOP_SILENT_MS, timeoutMs)) {
        const silent = this.socket.writableLength > 0 ? 'took no data' : 'answered nothing';
        this.cancel(`${asked} while the ${what} ${silent} for ${seconds(quiet)}s: statement cancelled`);
      } else if (quiet >= STOP_LOCK_CHECK_MS) {
        void this.cancelIfWaitingOnLock(`${asked} while waiting for a lock another session holds: statement cancelled`);
      }
    }
  }

  private async cancelIfWaitingOnLock(reason: string): Promise<void> {
    const pid = backendPid(this.client);
    if (this.lockCheckRunning || pid == null) return;
    this.lockCheckRunning = true;
    const statement = this.statementsEnded;
    try {
      const side = (this.side ??= this.openSide());
      await side.connected;
      const waiting = (await side.client.query(LOCK_WAIT_SQL, [pid])).rowCount === 1;
      if (waiting && statement === this.statementsEnded && this.cancelledAt === undefined) this.cancel(reason);
    } catch {
      this.closeSide(); // the other rules still apply; the next tick asks on a new session
    } finally {
      this.lockCheckRunning = false;
    }
  }

  /** Only ever opened after a stop request: it may take as long to answer as the stop allows, no longer. */
  private openSide(): { client: pg.Client; connected: Promise<void> } {
    const waitMs = Math.min(this.limits.timeoutMs, STOP_SILENT_MS);
    const client = new pg.Client({
      ...pgClientConfig(this.url, { applicationName: 'settle-ingest watch', connectTimeoutMs: waitMs }),
      query_timeout: waitMs,
    });
    client.on('error', () => undefined);
    return { client, connected: client.connect().then(() => undefined) };
  }

  /** Ends the side session, also while it is still connecting: nothing of the watch outlives its connection. */
  private closeSide(): void {
    const side = this.side;
    this.side = undefined;
    if (!side) return;
    socketIfAny(side.client)?.destroy();
    void side.client.end().catch(() => undefined);
    side.connected.catch(() => undefined);
  }

  private cancel(reason: string): void {
    this.cancelReason = reason;
    this.stalledSince = this.quietSince;
    this.cancelledAt = this.quietSince = Date.now();
    sendCancelRequest(this.client);
  }

  private closeConnection(waitedMs: number): void {
    const { what, option, timeoutMs } = this.limits;
    const stop = this.limits.stop?.aborted ? `asked to stop (${String(this.limits.stop.reason ?? 'signal')}) and ` : '';
    const err = new DatabaseUnresponsiveError(
      `${stop}the ${what} answered nothing for ${seconds(waitedMs)}s, not even a cancel (${option} ${seconds(timeoutMs)}): connection closed`,
      what,
    );
    // every pending query fails with this error, and the run stops as for a lost connection
    this.socket.destroy(err);
  }

  explain(err: unknown): unknown {
    if (err instanceof SettleError) return err;
    const code = pgCode(err);
    const { what, option } = this.limits;
    const timeoutSeconds = seconds(this.limits.timeoutMs);
    if (code === PG_QUERY_CANCELED && this.cancelReason !== undefined) {
      const reason = this.cancelReason;
      this.cancelReason = undefined;
      return new TransientError(reason, { cause: err });
    }
    if (code === PG_LOCK_NOT_AVAILABLE) {
      return new TransientError(
        `waited over ${timeoutSeconds}s for a lock in the ${what} (${option} ${timeoutSeconds}): ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
    if (code === PG_QUERY_CANCELED) {
      return new TransientError(`a ${what} statement was cancelled (${option} ${timeoutSeconds} limits each): ${errorMessage(err)}`, {
        cause: err,
      });
    }
    return err;
  }
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** Watches a connection's statements until it ends (see StatementWatch). */
export function watchStatements(client: pg.Client, url: string | undefined, limits: WaitLimits): void {
  assertPgInternals(client);
  watches.set(client, new StatementWatch(client, url, limits));
}

/**
 * A statement's failure as one clear line when a timeout or the watch ended it: which wait,
 * how long, and the option that sets it. Any other error is returned as it was.
 */
export function explainDbWait(client: pg.ClientBase, err: unknown): unknown {
  return watches.get(client)?.explain(err) ?? err;
}

/** statement_timeout is this much above lock_timeout, so that a statement ended waiting on a lock says so. */
const LOCK_TOLD_FIRST_MS = 1_000;

export interface WatchedConnectOptions extends Omit<PgConnectOptions, 'connectTimeoutMs' | 'timeoutOption'> {
  /** the option that bounds every wait on the connection, and its value */
  option: string;
  timeoutMs: number;
  stop?: AbortSignal;
}

/**
 * A connection on which no wait is unbounded: connecting within `timeoutMs` (and within a few
 * seconds of a stop request), then every lock wait under the server's own lock_timeout of
 * `timeoutMs` and every statement under its statement_timeout (a second more), with the watch
 * above for what the server cannot enforce. The finance database and a PostgreSQL ledger are both opened here.
 */
export async function connectWatched(url: string | undefined, opts: WatchedConnectOptions): Promise<pg.Client> {
  const { option, timeoutMs, stop, ...connect } = opts;
  const client = await connectPostgres(url, { ...connect, connectTimeoutMs: timeoutMs, timeoutOption: option, stop });
  try {
    watchStatements(client, url, { what: opts.what, option, timeoutMs, stop });
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  try {
    // the statement's own timer starts before its lock wait's: a second more lets a lock wait be told as one
    await client.query(`SET lock_timeout = ${timeoutMs}; SET statement_timeout = ${timeoutMs + LOCK_TOLD_FIRST_MS}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    const why = errorMessage(explainDbWait(client, err));
    throw new TransientError(`${opts.what} ${describeTarget(url)}: cannot set its timeouts: ${why}`, { cause: err });
  }
  return client;
}
