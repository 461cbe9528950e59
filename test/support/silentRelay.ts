import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

/**
 * A TCP relay in front of a PostgreSQL server that can go silent: it keeps every connection
 * open, accepts new ones, and from then on carries no byte either way, as a network path that
 * drops everything (a firewall's silent drop, a half-dead load balancer) does. The kernel still
 * acknowledges what the client sends, so only the client's own deadline can end its wait.
 *
 * `silenceCommand` is a shell command for a SETTLE_TEST_HOOK: it makes the relay silent and
 * returns once it is, so the run's next statement through the relay goes unanswered.
 */
export interface SilentRelay {
  /** `target` with its host and port replaced by the relay's */
  url: string;
  silenceCommand: string;
  silence(): void;
  /** resolves at the relay's next accepted connection */
  nextConnection(): Promise<void>;
  close(): Promise<void>;
}

export async function startSilentRelay(target: string): Promise<SilentRelay> {
  const upstream = new URL(target);
  const host = upstream.hostname || '127.0.0.1';
  const port = Number(upstream.port || 5432);
  const sockets = new Set<Socket>();
  let silent = false;
  const keep = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };

  const relay = createServer((client) => {
    keep(client);
    if (silent) return; // accepted, and never answered
    const server = connect(port, host);
    keep(server);
    client.on('data', (chunk) => void (silent || server.write(chunk)));
    server.on('data', (chunk) => void (silent || client.write(chunk)));
    // while it carries bytes, an end on either side ends the other; once silent, nothing does
    client.on('end', () => void (silent || server.end()));
    server.on('end', () => void (silent || client.end()));
  });
  const control = createServer((socket) => {
    keep(socket);
    socket.once('data', () => {
      silent = true;
      socket.end('silent\n');
    });
  });
  await listen(relay);
  await listen(control);

  const relayed = new URL(target);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(portOf(relay));
  const controlPort = portOf(control);
  const silenceScript = `const s = require('node:net').connect(${controlPort}, '127.0.0.1', () => s.write('silence\\n')); s.on('data', () => process.exit(0)); s.on('error', () => process.exit(1));`;
  return {
    url: relayed.toString(),
    silenceCommand: `"${process.execPath}" -e "${silenceScript.replace(/"/g, '\\"')}"`,
    silence: () => {
      silent = true;
    },
    nextConnection: async () => {
      await once(relay, 'connection');
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all([closeServer(relay), closeServer(control)]);
    },
  };
}

async function listen(server: Server): Promise<void> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the relay has no TCP port');
  return address.port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
