import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Settings } from '../config/settings.js';
import { UsageError, errorMessage } from '../errors.js';
import { redactSecrets } from '../redactSecrets.js';
import type { ServedMetrics } from '../report/metricsFile.js';
import type { WakeReason } from '../pipeline/watchLoop.js';
import { withResources } from './resources.js';

/** Where `watch --listen` serves: an address of this host (never "every interface" unless said) and a port. */
export interface ListenAddress {
  host: string;
  port: number;
}

const LISTEN_EXAMPLES = '127.0.0.1:9475 (this host only), or 0.0.0.0:9475 or [::]:9475 (every interface, as a pod needs)';

/**
 * `ADDRESS:PORT` as the operator gives it: an IPv4 address, an IPv6 address in brackets, or
 * `localhost`, and a port from 1 to 65535. A bare `:PORT` is refused: which interfaces hear the
 * service is said, never assumed.
 */
export function parseListen(value: string): ListenAddress {
  const match = /^(?:\[([^\]]*)\]|([^[\]]*)):(\d{1,5})$/.exec(value);
  const host = match?.[1] ?? match?.[2] ?? '';
  const port = Number(match?.[3]);
  const refuse = (why: string) => new UsageError(`--listen ${JSON.stringify(value)}: ${why}; for example ${LISTEN_EXAMPLES}`);
  if (!match) throw refuse('expected ADDRESS:PORT');
  if (host === '') throw refuse('name the address to listen on');
  if (match[1] !== undefined ? isIP(host) !== 6 : isIP(host) !== 4 && host !== 'localhost') {
    throw refuse(
      match[1] !== undefined
        ? 'not an IPv6 address'
        : host.includes(':')
          ? 'an IPv6 address goes in brackets'
          : 'not an IPv4 address or localhost',
    );
  }
  if (!(port >= 1 && port <= 65_535)) throw refuse('the port must be from 1 to 65535');
  return { host, port };
}

/** The watch loop's wait between cycles (WatchPorts.wait). */
type LoopWait = (durationMs: number) => Promise<WakeReason>;

/** How long a wait between cycles may overrun its end before the loop counts as stuck. */
const LATE_MS = 60_000;

/**
 * Whether the watch loop turns, for `/healthz`: between cycles it waits with a known end, and a
 * wait that overran its end by more than a minute means the loop no longer wakes. A cycle in
 * hand counts as turning however long its loads take (every wait in a cycle is bounded by the
 * timeouts), so a probe never kills a long load; a cycle that never ends is the
 * SettleIngestWatchStalled alert's. Read on the monotonic clock.
 */
export class LoopPulse {
  private waitEndsAt: number | undefined;
  private cycleSince: number;
  private ended = false;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.cycleSince = now();
  }

  /** The loop's wait, watched: its end is known while it lasts. */
  waiting(wait: LoopWait): LoopWait {
    return async (durationMs) => {
      this.waitEndsAt = this.now() + durationMs;
      try {
        return await wait(durationMs);
      } finally {
        this.waitEndsAt = undefined;
        this.cycleSince = this.now();
      }
    };
  }

  /** The loop has returned: nothing turns any more. */
  end(): void {
    this.ended = true;
  }

  live(): { ok: boolean; reason: string } {
    const now = this.now();
    if (this.ended) return { ok: false, reason: 'the watch loop has ended' };
    if (this.waitEndsAt === undefined) return { ok: true, reason: `a cycle in hand for ${seconds(now - this.cycleSince)}` };
    const late = now - this.waitEndsAt;
    if (late > LATE_MS) return { ok: false, reason: `the next cycle is ${seconds(late)} overdue: the loop no longer wakes` };
    return { ok: true, reason: `waiting for the next cycle, due in ${seconds(Math.max(0, -late))}` };
  }
}

const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;

/** How long `/readyz` waits for the ledger and the finance database before it answers "not ready". */
const READY_WITHIN_MS = 5_000;

/** What the endpoints answer from: the metrics text, the loop's pulse, and the check behind `/readyz`. */
export interface EndpointSources {
  metrics: ServedMetrics;
  pulse: Pick<LoopPulse, 'live'>;
  /** resolves when the ledger and the finance database answer, throws why not */
  ready(): Promise<void>;
}

/** The three paths, and nothing else. */
const PATHS = new Set(['/metrics', '/healthz', '/readyz']);

/**
 * The HTTP side of `watch --listen`: `/metrics` (the metrics text of the last cycle, the very
 * text of the metrics file), `/healthz` (the loop turns) and `/readyz` (the ledger and the
 * finance database answer), GET and HEAD only; any other path is 404. No answer carries more
 * than a status line: the partners' names, counts and a reason with its passwords hidden.
 * A port that cannot be bound is a usage error (exit 2) before the loop begins.
 */
export async function serveEndpoints(address: ListenAddress, sources: EndpointSources): Promise<{ close(): Promise<void> }> {
  let readyCheck: Promise<string | undefined> | undefined;
  // concurrent probes share one check: a burst of them opens one connection to each database, not a burst
  const readiness = () =>
    (readyCheck ??= withinTime(sources.ready(), READY_WITHIN_MS)
      .then(
        () => undefined,
        (err: unknown) => redactSecrets(errorMessage(err)),
      )
      .finally(() => (readyCheck = undefined)));

  const server: Server = createServer((request, response) => {
    void answer(request, response).catch(() => response.destroy());
  });
  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '').split('?')[0]!;
    if (!PATHS.has(path)) return reply(response, request, 404, 'not found: /metrics, /healthz and /readyz are served here');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('Allow', 'GET, HEAD');
      return reply(response, request, 405, 'only GET and HEAD');
    }
    if (path === '/metrics') {
      const text = sources.metrics.text;
      if (text === undefined) return reply(response, request, 503, 'no metrics yet: the first cycle has not ended');
      return reply(response, request, 200, text, 'text/plain; version=0.0.4; charset=utf-8');
    }
    if (path === '/healthz') {
      const live = sources.pulse.live();
      return reply(response, request, live.ok ? 200 : 503, `${live.ok ? 'live' : 'not live'}: ${live.reason}`);
    }
    const notReady = await readiness();
    return reply(response, request, notReady === undefined ? 200 : 503, notReady === undefined ? 'ready' : `not ready: ${notReady}`);
  }

  // a probe or a scrape is one short request: nothing is held open for long
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 64;
  server.maxConnections = 64;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenRefused(address, err)));
    server.listen({ host: address.host, port: address.port, exclusive: true }, () => resolve());
  });
  server.on('error', () => undefined);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function reply(response: ServerResponse, request: IncomingMessage, status: number, body: string, type = 'text/plain; charset=utf-8') {
  const text = body.endsWith('\n') ? body : `${body}\n`;
  response.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  response.end(request.method === 'HEAD' ? undefined : text);
}

function listenRefused(address: ListenAddress, err: NodeJS.ErrnoException): UsageError {
  const where = `--listen ${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
  const why =
    err.code === 'EADDRINUSE'
      ? 'the port is in use by another process'
      : err.code === 'EACCES'
        ? 'this user may not listen there (a port below 1024 needs a capability: take one above 1023)'
        : err.code === 'EADDRNOTAVAIL'
          ? 'no interface of this host has that address'
          : errorMessage(err);
  return new UsageError(`${where}: cannot listen: ${why}`, { cause: err });
}

async function withinTime<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000}s`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ready: the ledger opens at this release's version and the finance database takes the login
 * at its schema's version, each opened as a run opens it, then closed.
 */
export function ledgerAndFinanceAnswer(settings: Settings): Promise<void> {
  return withResources(settings, async (resources) => {
    try {
      await resources.ledger();
    } catch (err) {
      throw new Error(`ledger: ${errorMessage(err)}`, { cause: err });
    }
    try {
      await resources.finance('read');
    } catch (err) {
      throw new Error(`finance database: ${errorMessage(err)}`, { cause: err });
    }
  });
}

/** What `watch` wires: the served text, the wait to watch, and the end. Inert without `--listen`. */
export interface WatchEndpoints {
  served: ServedMetrics | undefined;
  waiting(wait: LoopWait): LoopWait;
  close(): Promise<void>;
}

/** Starts the endpoints when `--listen` says where, bound before the loop begins (a refusal is exit 2). */
export async function watchEndpoints(listen: string | undefined, shared: () => Settings): Promise<WatchEndpoints> {
  if (listen === undefined) return { served: undefined, waiting: (wait) => wait, close: async () => undefined };
  const address = parseListen(listen);
  const served: ServedMetrics = { text: undefined };
  const pulse = new LoopPulse();
  const server = await serveEndpoints(address, { metrics: served, pulse, ready: () => ledgerAndFinanceAnswer(shared()) });
  return {
    served,
    waiting: (wait) => pulse.waiting(wait),
    close: async () => {
      pulse.end();
      await server.close();
    },
  };
}
