import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A TCP relay to the finance database that the test cuts (every connection dropped, new ones refused) and restores on the same port. */
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
