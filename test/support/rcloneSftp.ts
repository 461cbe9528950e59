import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { AWAIT_DEATH, freezePidsCommand, killTree, makeServerKeys, thawPids, untilListening, type TestSftpServer } from './sftpServers.js';

const RCLONE = '/usr/bin/rclone';

/**
 * A real rclone (Debian's) `serve sftp` of this machine's file system on 127.0.0.1: public-key
 * login, its directory cache off so that files written on disk show at once. One process with
 * every session inside it. Its RENAME replaces an existing target, and it hides symlinks.
 */
export class TestRcloneSftp implements TestSftpServer {
  readonly kind = 'rclone';
  readonly user = userInfo().username;
  private child: ChildProcess | undefined;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly hostKey: string,
    readonly clientKey: string,
    readonly knownHosts: string,
    readonly hostKeyPub: string,
  ) {}

  static async start(): Promise<TestRcloneSftp> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-rclone-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    await writeFile(join(dir, 'authorized_keys'), await readFile(`${keys.clientKey}.pub`));
    await writeFile(join(dir, 'rclone.conf'), '');
    const server = new TestRcloneSftp(dir, port, keys.hostKey, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    await server.resume();
    return server;
  }

  async resume(): Promise<void> {
    let log = '';
    const args = [
      'serve',
      'sftp',
      '/',
      '--addr',
      `127.0.0.1:${this.port}`,
      '--key',
      this.hostKey,
      '--authorized-keys',
      join(this.dir, 'authorized_keys'),
      '--config',
      join(this.dir, 'rclone.conf'),
      '--dir-cache-time',
      '0s',
      '--log-file',
      join(this.dir, 'rclone.log'),
    ];
    this.child = spawn(RCLONE, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d) => (log += d));
    await untilListening(this.port, this.child, () => log, 'rclone serve sftp');
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  private pid(): number {
    const pid = this.child?.pid;
    if (!pid) throw new Error('rclone is not running');
    return pid;
  }

  /** The whole server stops: its sessions are goroutines of one process. */
  freezeCommand(): string {
    return freezePidsCommand(`echo ${this.pid()}`, join(this.dir, 'frozen'));
  }

  thaw(): Promise<void> {
    return thawPids(join(this.dir, 'frozen'));
  }

  cutCommand(opts: { cut: 'server'; once: string }): string {
    return [`[ -e '${opts.once}' ] && exit 0; touch '${opts.once}'`, `victims=${this.pid()}`, 'kill -KILL $victims', AWAIT_DEATH].join(
      '\n',
    );
  }

  async stop(): Promise<void> {
    await killTree(this.child);
    this.child = undefined;
  }

  async destroy(): Promise<void> {
    await this.thaw();
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
