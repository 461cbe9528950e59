import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { makeServerKeys, ServerProcess } from './sftpServers.js';

/**
 * A real rclone (Debian's) `serve sftp` of this machine's file system on 127.0.0.1: public-key
 * login, its directory cache off so that files written on disk show at once. One process with
 * every session inside it. Its RENAME replaces an existing target, and it hides symlinks.
 */
export class TestRcloneSftp extends ServerProcess {
  readonly kind = 'rclone';

  private constructor(
    dir: string,
    port: number,
    private readonly hostKey: string,
    keys: { clientKey: string; knownHosts: string; hostKeyPub: string },
  ) {
    super(dir, port, userInfo().username, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
  }

  static async start(): Promise<TestRcloneSftp> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-rclone-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    await writeFile(join(dir, 'authorized_keys'), await readFile(`${keys.clientKey}.pub`));
    await writeFile(join(dir, 'rclone.conf'), '');
    const server = new TestRcloneSftp(dir, port, keys.hostKey, keys);
    await server.resume();
    return server;
  }

  protected command() {
    const file = (name: string) => join(this.dir, name);
    return {
      file: '/usr/bin/rclone',
      // prettier-ignore
      args: ['serve', 'sftp', '/', '--addr', `127.0.0.1:${this.port}`, '--key', this.hostKey,
        '--authorized-keys', file('authorized_keys'), '--config', file('rclone.conf'),
        '--dir-cache-time', '0s', '--log-file', file('rclone.log')],
    };
  }

  /** the whole server: its sessions are goroutines of one process */
  protected sessionPids(): string {
    return `echo ${this.pid()}`;
  }

  protected serverPids(): string {
    return `echo ${this.pid()}`;
  }
}
