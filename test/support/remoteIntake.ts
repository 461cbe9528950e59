import { copyFile, mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestSftpServer } from './sftpServers.js';
import { Workspace } from './workspace.js';

export type RemoteFolder = 'intake' | 'archive' | 'duplicates' | 'rejected';

/** A ledger the CLI migrated once per test file: each workspace starts from a copy (a migrate run costs a second). */
let migratedLedger: Promise<string> | undefined;

async function freshLedger(databaseUrl: string, path: string): Promise<void> {
  migratedLedger ??= Workspace.create(databaseUrl).then((ws) => ws.ledger);
  await copyFile(await migratedLedger, path);
}

/**
 * A folder tree served by an SFTP server (on this machine: a test writes the partner's uploads
 * straight into it) plus a local workspace for the ledger, and the run's arguments to reach it.
 */
export async function remoteIntake(server: TestSftpServer, databaseUrl: string) {
  const ws = await Workspace.create(databaseUrl, { migrate: false });
  await freshLedger(databaseUrl, ws.ledger);
  const root = await mkdtemp(join(tmpdir(), 'settle-remote-'));
  const intake = join(root, 'intake');
  await mkdir(intake);
  /** an upload long finished: its mtime an hour old */
  const put = async (name: string, content: string | Buffer) => {
    await writeFile(join(intake, name), content);
    const old = new Date(Date.now() - 3600_000);
    await utimes(join(intake, name), old, old);
  };
  const files = async (folder: RemoteFolder) => (await readdir(join(root, folder)).catch(() => [])).sort();
  const read = (folder: RemoteFolder, name: string) => readFile(join(root, folder, name), 'utf8');
  /** how the run reaches the server: key and known_hosts */
  const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
  const args = (extra: string[] = []) => [
    'run',
    '--intake',
    server.url(intake),
    '--ledger',
    ws.ledger,
    '--stable-for',
    '0',
    ...access,
    ...extra,
  ];
  const run = (extra: string[] = [], env: Record<string, string> = {}) => ws.cli(args(extra), env);
  /** the ledger's name for a file on this server, as a move records it */
  const location = (folder: RemoteFolder, name: string) => `sftp://127.0.0.1:${server.port}${join(root, folder, name)}`;
  return { ws, root, intake, put, files, read, access, args, run, location };
}

export type RemoteIntake = Awaited<ReturnType<typeof remoteIntake>>;
