import { connect, type Socket } from 'node:net';
import type pg from 'pg';
// joined into the bundle at build time: the version of the pg the bundle carries, read with no file at run time
import pgPackage from 'pg/package.json' with { type: 'json' };
import { UsageError } from '../errors.js';

/**
 * The one place that reaches into node-postgres beyond its declared API. The statement watch
 * (statementWatch.ts) needs four things pg keeps on a client without declaring them: whether a
 * statement is in flight (`readyForQuery`), the backend's key for a cancel request
 * (`processID`, `secretKey`), the socket (to measure progress in bytes) and the ReadyForQuery
 * message (to tell one statement from the next). They were read from pg 8; `assertPgInternals`
 * refuses a client that lacks them, and test/integration/pgInternals.test.ts fails loudly when a
 * pg upgrade changes any of them. One more thing about pg must happen before it loads, so it is
 * in bin/settle-ingest.js: the global Response is hidden while pg checks for Cloudflare Workers
 * (a check that would load Node.js's fetch implementation); the same test file holds it.
 */

/** The pg major version these internals were read from. */
export const PG_MAJOR_READ = 8;

export const PG_VERSION: string = pgPackage.version;

/** node-postgres keeps these on the client without declaring them in its types. */
interface ClientInternals {
  readyForQuery?: unknown;
  processID?: unknown;
  secretKey?: unknown;
  connection?: { stream?: unknown; on?: unknown };
}

const internals = (client: pg.Client) => client as unknown as ClientInternals;

/**
 * Refuses (exit 2, before any work) a pg release other than the one these internals were read
 * from, or a connected client that lacks them: better a clear refusal than a watch that silently
 * never fires.
 */
export function assertPgInternals(client: pg.Client): void {
  const major = Number(PG_VERSION.split('.')[0]);
  const c = internals(client);
  const missing = [
    major !== PG_MAJOR_READ ? `pg ${PG_VERSION} (read from ${PG_MAJOR_READ}.x)` : null,
    typeof c.readyForQuery !== 'boolean' ? 'client.readyForQuery' : null,
    typeof c.processID !== 'number' ? 'client.processID' : null,
    typeof c.secretKey !== 'number' ? 'client.secretKey' : null,
    typeof (c.connection?.stream as Socket | undefined)?.bytesRead !== 'number' ? 'client.connection.stream' : null,
    typeof c.connection?.on !== 'function' ? 'client.connection.on' : null,
  ].filter((x) => x !== null);
  if (missing.length > 0) {
    throw new UsageError(
      `this build of settle-ingest does not fit the installed node-postgres: ${missing.join(', ')} (see src/db/pgInternals.ts)`,
    );
  }
}

/** Whether the client has a statement in flight. */
export function statementInFlight(client: pg.Client): boolean {
  return internals(client).readyForQuery === false;
}

/** The connection's socket where the client has one (a client of any connection, asserted or not): endPostgres shuts it. */
export function socketIfAny(client: pg.Client): Socket | undefined {
  const stream = internals(client).connection?.stream as Socket | undefined;
  return typeof stream?.once === 'function' ? stream : undefined;
}

/** The connection's socket of an asserted client, to measure progress as bytes moved. */
export function clientSocket(client: pg.Client): Socket {
  return socketIfAny(client)!;
}

/** Calls `listener` at each ReadyForQuery message: a statement in hand has ended. */
export function onReadyForQuery(client: pg.Client, listener: () => void): void {
  (internals(client).connection as { on(event: string, l: () => void): void }).on('readyForQuery', listener);
}

/** The backend's process id, to ask the server about it (pg_stat_activity). */
export function backendPid(client: pg.Client): number | null {
  const pid = internals(client).processID;
  return typeof pid === 'number' ? pid : null;
}

const CANCEL_REQUEST_CODE = 80877102;

/**
 * PostgreSQL's cancel request, sent on a connection of its own: it needs no login, so it
 * works when no more sessions are allowed, and through a pooler. Best effort: when it never
 * lands, the watch closes the connection instead. (pg's own `cancel` takes a query object and
 * reuses the client's connection settings through more undeclared fields; the protocol message is
 * sixteen bytes.)
 */
export function sendCancelRequest(client: pg.Client): void {
  const { processID, secretKey } = internals(client);
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  packet.writeInt32BE(processID, 8);
  packet.writeInt32BE(secretKey, 12);
  const socket = client.host.startsWith('/') ? connect(`${client.host}/.s.PGSQL.${client.port}`) : connect(client.port, client.host);
  socket.on('error', () => undefined);
  socket.setTimeout(10_000, () => socket.destroy());
  socket.on('connect', () => socket.end(packet));
  socket.unref();
}
