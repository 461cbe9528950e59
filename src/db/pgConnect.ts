import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import pg from 'pg';
import pgpass from 'pgpass';
import { SettleError, TransientError, UsageError, errorMessage } from '../errors.js';
import { PG_INVALID_AUTHORIZATION, PG_INVALID_CATALOG_NAME, PG_INVALID_PASSWORD, pgCode } from './pgErrors.js';
import { redactSecrets } from '../redactSecrets.js';
import { socketIfAny } from './pgInternals.js';

/** libpq's variables that name a server by themselves, without a URL. */
const LIBPQ_TARGET = ['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE'] as const;

/** Whether the environment names a server the libpq way (PGHOST, PGDATABASE, …). */
export function libpqTargetSet(env: NodeJS.ProcessEnv = process.env): boolean {
  return LIBPQ_TARGET.some((k) => env[k]);
}

/** A URL as given, or where the libpq variables point, for messages. */
export function describeTarget(url: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (url) return redactSecrets(url);
  return `${env.PGUSER ?? ''}${env.PGUSER ? '@' : ''}${env.PGHOST ?? 'localhost'}:${env.PGPORT ?? '5432'}/${env.PGDATABASE ?? env.PGUSER ?? ''} (from PG* variables)`;
}

/**
 * Asked only when the server wants a password that the URL did not give: PGPASSWORD, else the
 * password file's (~/.pgpass or PGPASSFILE, as libpq orders them), else a configuration error
 * that says where to put one. (node-postgres's own lookup would print a deprecation notice on
 * every run.)
 */
function passwordFromEnvironment(params: { host: string; port: number; database: string; user: string }): Promise<string> {
  if (process.env.PGPASSWORD) return Promise.resolve(process.env.PGPASSWORD);
  return new Promise((resolve, reject) =>
    pgpass(params, (pass) => {
      if (pass !== undefined) resolve(pass);
      else {
        const file = process.env.PGPASSFILE ?? '~/.pgpass';
        reject(
          new UsageError(
            `no password for user "${params.user}" on ${params.host}:${params.port}: add a line to ${file} (mode 0600), or set PGPASSWORD (e.g. in the systemd EnvironmentFile)`,
          ),
        );
      }
    }),
  );
}

/**
 * Every connection asks `passwordFromEnvironment`, whatever names the server. The option
 * `password` alone does not reach a connection made from a URL: node-postgres merges the
 * URL's fields over the options, and a URL without a password brings an empty one, so pg
 * then fell back to its own password-file lookup and its deprecation warning on every login
 * through ~/.pgpass. An empty password falls to PGPASSWORD, then to pg's defaults: the
 * default set here is where both kinds of connection meet. (A password in the URL still wins.)
 */
pg.defaults.password = passwordFromEnvironment as unknown as () => Promise<string>;

/** A URL this tool can use: the postgres scheme (else pg reads "not a url" as a host name). */
function assertPostgresUrl(url: string, what: string): void {
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new UsageError(
      `${what} "${redactSecrets(url)}" is not a postgres:// URL: write postgres://USER@HOST[:PORT]/DATABASE, or leave it unset and use the PG* variables`,
    );
  }
}

/** PGSSLROOTCERT, which node-postgres does not read, for PGSSLMODE=verify-ca/verify-full without a URL setting. */
function sslFromEnvironment(url: string | undefined): pg.ClientConfig['ssl'] | undefined {
  const mode = process.env.PGSSLMODE;
  const root = process.env.PGSSLROOTCERT;
  if (!root || (mode !== 'verify-ca' && mode !== 'verify-full') || (url && /[?&]ssl/i.test(url))) return undefined;
  let ca: string;
  try {
    ca = readFileSync(root, 'utf8');
  } catch (err) {
    throw new UsageError(`PGSSLROOTCERT ${root} cannot be read: ${errorMessage(err)}`, { cause: err });
  }
  return mode === 'verify-ca' ? { ca, checkServerIdentity: () => undefined } : { ca };
}

/**
 * node-postgres 8 checks `sslmode=prefer`, `require` and `verify-ca` in a URL as `verify-full`
 * (the server's certificate against a CA known here, and its host name), and prints a
 * "SECURITY WARNING" of its own about what its next major version will do instead. The modes are
 * handed to it as the `verify-full` they are checked as, so nothing is printed; the mode as
 * written is named where it matters, when a server's certificate is refused. A URL that asks
 * for libpq's meaning (`uselibpqcompat=true`) is left as it is.
 */
function sslModeAsChecked(url: string | undefined): { url: string | undefined; aliased: string | null } {
  const m = url === undefined || /[?&]uselibpqcompat=/i.test(url) ? null : /([?&]sslmode=)(prefer|require|verify-ca)(?=&|#|$)/i.exec(url);
  if (!m || url === undefined) return { url, aliased: null };
  return { url: url.slice(0, m.index) + m[1] + 'verify-full' + url.slice(m.index + m[0].length), aliased: m[2]! };
}

/** TLS refusals (an unknown CA, a name not in the certificate) are configuration, not an outage. */
function isTlsRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (
    (typeof code === 'string' && (/^ERR_TLS_/.test(code) || /CERT|SIGNATURE|ISSUER/.test(code))) ||
    /does not support SSL/i.test(errorMessage(err))
  );
}

/**
 * Silence after which the kernel starts probing a connection. Node 20 sets only this (TCP_KEEPIDLE);
 * probe interval and count stay the kernel's, so a vanished peer is noticed minutes later, not never.
 */
const KEEPALIVE_IDLE_MS = 10_000;

/**
 * After a stop request (SIGTERM), how long a wait on a database may still last: a connection being
 * opened, or a statement that answers nothing (statementWatch.ts). A healthy server answers in
 * milliseconds; a run asked to stop must end within seconds whatever its timeouts say.
 */
export const STOP_SILENT_MS = 5_000;

export interface PgConnectOptions {
  /** how messages name the database: "finance database", "ledger" */
  what: string;
  applicationName: string;
  connectTimeoutMs: number;
  /** the option that sets `connectTimeoutMs`, named when it runs out */
  timeoutOption?: string;
  /** a connection that breaks while idle emits 'error'; without a listener it would end the process */
  onError: (err: Error) => void;
  /** a stop request: connecting then may take STOP_SILENT_MS more, no longer */
  stop?: AbortSignal;
}

/**
 * The node-postgres options of every connection this tool opens. `connectionTimeoutMillis`
 * bounds TCP connect, TLS and login together. Server-side timeouts are not set here: node-postgres
 * would send them as startup parameters, which connection poolers such as PgBouncer refuse.
 */
export function pgClientConfig(
  url: string | undefined,
  pick: Pick<PgConnectOptions, 'applicationName' | 'connectTimeoutMs'>,
): pg.ClientConfig {
  const ssl = sslFromEnvironment(url);
  return {
    connectionString: sslModeAsChecked(url).url,
    // no password here: a URL's wins, else PGPASSWORD, else pg.defaults.password above, asked only when the server wants one
    ...(ssl ? { ssl } : {}),
    application_name: pick.applicationName,
    connectionTimeoutMillis: pick.connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
  };
}

/**
 * Connects. An unreachable or silent server is transient (exit 1, try again next run); an
 * unusable URL, a refused login or a missing database is configuration (exit 2). Messages
 * carry the URL without its secrets.
 */
export async function connectPostgres(url: string | undefined, pgConnectOptions: PgConnectOptions): Promise<pg.Client> {
  const where = `${pgConnectOptions.what} ${describeTarget(url)}`;
  if (url !== undefined) assertPostgresUrl(url, pgConnectOptions.what);
  let client: pg.Client;
  try {
    client = new pg.Client(pgClientConfig(url, pgConnectOptions));
  } catch (err) {
    if (err instanceof SettleError) throw err;
    throw new UsageError(`${where} cannot be used: ${redactSecrets(errorMessage(err))}`, { cause: err });
  }
  client.on('error', pgConnectOptions.onError);
  const stopWatch = boundConnectOnStop(client, pgConnectOptions.stop);
  try {
    await client.connect();
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    const code = pgCode(err);
    const why = redactSecrets(errorMessage(err));
    if (err instanceof SettleError) throw new UsageError(`${where}: ${why}`, { cause: err });
    if (isTlsRefusal(err)) {
      const aliased = sslModeAsChecked(url).aliased;
      const mode = aliased
        ? `; sslmode=${aliased} is checked as verify-full: the certificate must be signed by the CA of sslrootcert and name the host`
        : '';
      throw new UsageError(`${where} refused its TLS certificate: ${why} (check the host name, sslrootcert or PGSSLROOTCERT${mode})`, {
        cause: err,
      });
    }
    if (code === PG_INVALID_PASSWORD || code === PG_INVALID_AUTHORIZATION || code === PG_INVALID_CATALOG_NAME) {
      throw new UsageError(`${where} refused the connection: ${why}`, { cause: err });
    }
    // node-postgres ends a connect that outlives connectionTimeoutMillis with exactly this error
    const timedOut = why === 'timeout expired';
    const seconds = pgConnectOptions.connectTimeoutMs / 1000;
    const silent = `no answer within ${seconds}s${pgConnectOptions.timeoutOption ? ` (${pgConnectOptions.timeoutOption} ${seconds})` : ''}`;
    throw new TransientError(`${where} is unreachable: ${timedOut ? silent : why || code}`, { cause: err });
  } finally {
    stopWatch();
  }
}

/**
 * Once `stop` is aborted (already, or while connecting), the connection attempt is given
 * STOP_SILENT_MS more and then its socket is destroyed, as node-postgres's own connect timeout
 * does. Returns the disposer, called when the attempt has ended either way.
 */
function boundConnectOnStop(client: pg.Client, stop: AbortSignal | undefined): () => void {
  if (!stop) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      const why = `asked to stop (${String(stop.reason ?? 'signal')}): no answer within ${STOP_SILENT_MS / 1000}s`;
      socketIfAny(client)?.destroy(new Error(why));
    }, STOP_SILENT_MS);
    timer.unref();
  };
  if (stop.aborted) arm();
  else stop.addEventListener('abort', arm, { once: true });
  return () => {
    clearTimeout(timer);
    stop.removeEventListener('abort', arm);
  };
}

/**
 * Ends a connection without waiting for the server to close its side: Terminate is written and
 * the socket shut for writing, and then this returns. The server's close is its backend exiting,
 * 8 to 13 ms on a fast server at every command's end (bench/DIARY.md, 2026-12-06); by the time
 * a command closes a connection every statement on it has been answered, so nothing is owed. A
 * connection that is broken or never opened ends as node-postgres ends it.
 */
export async function endPostgres(client: pg.Client): Promise<void> {
  const ended = client.end().catch(() => undefined);
  const socket = socketIfAny(client);
  if (!socket) return ended;
  await Promise.race([ended, shutForWriting(socket)]);
}

/** Once `socket` has flushed what was written and sent its end (or is gone). */
function shutForWriting(socket: Socket): Promise<void> {
  if (socket.writableFinished || socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.removeListener('finish', done);
      socket.removeListener('close', done);
      resolve();
    };
    socket.once('finish', done);
    socket.once('close', done);
  });
}
