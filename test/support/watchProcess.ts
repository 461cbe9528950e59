import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach } from 'vitest';
import { finished, type CliResult } from './cli.js';
import { sample } from './promtool.js';

/** Polls `effect` until it holds, for at most `deadlineMs`: a test waits for what watch does, never for a fixed time. */
export async function until<T>(
  what: string,
  effect: () => Promise<T | undefined | false> | T | undefined | false,
  deadlineMs = 30_000,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await effect();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`watch did not get there in ${deadlineMs} ms: ${what}`);
    await sleep(50);
  }
}

/** A watch process: its output so far (`stdout()`), its end, and whether it is still running. */
export interface WatchProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  alive(): boolean;
  stdout(): string;
}

/**
 * The watch processes of a test file: `watching(child)` keeps each, and one a failed test left
 * running is ended after it.
 */
export function watchProcesses(): (child: ChildProcess) => WatchProcess {
  const started = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    started.clear();
  });
  return (child) => {
    started.add(child);
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    const done = finished(child);
    return { child, done, alive: () => child.exitCode === null && child.signalCode === null, stdout: () => out };
  };
}

/** One series of a metrics file as it is now; undefined while the file or the series is not there. */
export async function metric(path: string, series: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.includes(`${series} `) ? sample(text, series) : undefined;
}

/** A TCP relay to a database that the test cuts (every connection dropped, new ones refused) and restores on the same port. */
export class DatabaseRelay {
  private server: Server | undefined;
  private sockets = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: URL): Promise<DatabaseRelay> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const relay = new DatabaseRelay(port, { host: target.hostname, port: Number(target.port) });
    await relay.restore();
    return relay;
  }

  async restore(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = createConnection(this.target);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server!.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  url(databaseUrl: string): string {
    const u = new URL(databaseUrl);
    u.host = `127.0.0.1:${this.port}`;
    return u.toString();
  }
}
