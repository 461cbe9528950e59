import type { Socket } from 'node:net';
import pg from 'pg';
import { SettleError, TransientError, errorMessage } from '../errors.js';
import { pgClientConfig } from './pgConnect.js';
import { PG_LOCK_NOT_AVAILABLE, PG_QUERY_CANCELED, pgCode } from './pgErrors.js';
import { assertPgInternals, backendPid, clientSocket, onReadyForQuery, sendCancelRequest, statementInFlight } from './pgInternals.js';

export interface WaitLimits {
  /** --db-timeout, in milliseconds */
  timeoutMs: number;
  /** a stop request (SIGTERM): a statement that is stuck then is cancelled without waiting out the timeout */
  stop?: AbortSignal;
}

/** The watchdog closed the connection: the server answered nothing, not even a cancel request. */
export class DatabaseUnresponsiveError extends TransientError {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseUnresponsiveError';
  }
}

/** After a stop request: a COPY whose data the server has not taken for this long is stuck. */
const STOP_STALL_MS = 10_000;
/** After a stop request: a statement silent this long is checked for a wait on another session's lock. */
const STOP_LOCK_CHECK_MS = 1_000;
/** Waiting for a lock that another session holds ('extend', a table growing, passes by itself). */
const LOCK_WAIT_SQL = `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event <> 'extend'`;

const watches = new WeakMap<pg.ClientBase, StatementWatch>();

/**
 * Keeps every statement on the finance connection from waiting forever. The server's own
 * lock_timeout and statement_timeout come first; this watch covers what they cannot: a COPY
 * (statement_timeout is off for it, since a large file may stream for longer) whose data the
 * server stops accepting, a backend that answers nothing at all (frozen: its kernel still
 * acknowledges, so TCP keepalive never fires), and a stop request, which cancels a statement
 * waiting on another session's lock at once. It measures progress as bytes moved on the
 * socket, cancels with a protocol cancel request, and closes the connection when even that is
 * not answered. A statement busy on the server, or a COPY we are slow to feed, is left alone.
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
  private side: Promise<pg.Client> | undefined;
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
    const timeoutMs = this.limits.timeoutMs;
    const grace = Math.min(timeoutMs, 10_000);
    if (this.cancelledAt !== undefined) {
      if (quiet >= grace) this.closeConnection(now - this.stalledSince);
      return;
    }
    // Data waiting in our socket buffer that the server does not take: a COPY the server stopped reading.
    if (this.socket.writableLength > 0 && quiet >= timeoutMs) {
      this.cancel(`the finance database accepted no data for ${seconds(quiet)}s (--db-timeout ${seconds(timeoutMs)}): statement cancelled`);
    } else if (quiet >= timeoutMs + grace) {
      // the server's own timeouts should have ended the statement by now
      this.cancel(`the finance database did not answer for ${seconds(quiet)}s (--db-timeout ${seconds(timeoutMs)}): statement cancelled`);
    } else if (this.limits.stop?.aborted) {
      const asked = `asked to stop (${String(this.limits.stop.reason ?? 'signal')})`;
      if (this.socket.writableLength > 0 && quiet >= Math.min(STOP_STALL_MS, timeoutMs)) {
        this.cancel(`${asked} while the finance database took no data for ${seconds(quiet)}s: statement cancelled`);
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
      this.side ??= this.openSide();
      const waiting = (await (await this.side).query(LOCK_WAIT_SQL, [pid])).rowCount === 1;
      if (waiting && statement === this.statementsEnded && this.cancelledAt === undefined) this.cancel(reason);
    } catch {
      this.closeSide(); // the other rules still apply; the next tick asks on a new session
    } finally {
      this.lockCheckRunning = false;
    }
  }

  private async openSide(): Promise<pg.Client> {
    const t = this.limits.timeoutMs;
    const side = new pg.Client({
      ...pgClientConfig(this.url, { applicationName: 'settle-ingest watch', connectTimeoutMs: t }),
      query_timeout: t,
    });
    side.on('error', () => undefined);
    await side.connect();
    return side;
  }

  private closeSide(): void {
    const side = this.side;
    this.side = undefined;
    void side?.then((c) => c.end()).catch(() => undefined);
  }

  private cancel(reason: string): void {
    this.cancelReason = reason;
    this.stalledSince = this.quietSince;
    this.cancelledAt = this.quietSince = Date.now();
    sendCancelRequest(this.client);
  }

  private closeConnection(waitedMs: number): void {
    const t = seconds(this.limits.timeoutMs);
    const err = new DatabaseUnresponsiveError(
      `the finance database answered nothing for ${seconds(waitedMs)}s, not even a cancel (--db-timeout ${t}): connection closed`,
    );
    // every pending query fails with this error, and the run stops as for a lost connection
    this.socket.destroy(err);
  }

  explain(err: unknown): unknown {
    if (err instanceof SettleError) return err;
    const code = pgCode(err);
    const timeoutSeconds = seconds(this.limits.timeoutMs);
    if (code === PG_QUERY_CANCELED && this.cancelReason !== undefined) {
      const reason = this.cancelReason;
      this.cancelReason = undefined;
      return new TransientError(reason, { cause: err });
    }
    if (code === PG_LOCK_NOT_AVAILABLE) {
      return new TransientError(
        `waited over ${timeoutSeconds}s for a lock in the finance database (--db-timeout ${timeoutSeconds}): ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
    if (code === PG_QUERY_CANCELED) {
      return new TransientError(
        `a finance database statement was cancelled (--db-timeout ${timeoutSeconds} limits each): ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
    return err;
  }
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/** Watches the finance connection's statements until it ends (see StatementWatch). */
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
