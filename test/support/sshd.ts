import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { makeServerKeys, ServerProcess } from './sftpServers.js';

/** The test sshds' config and authorized key: on 127.0.0.1 with their own host key, the client key alone, then `extra` lines. */
export async function writeSshdConfig(
  dir: string,
  port: number,
  keys: { hostKey: string; clientKey: string },
  extra: string[],
): Promise<void> {
  await writeFile(join(dir, 'authorized_keys'), await readFile(`${keys.clientKey}.pub`));
  const lines = [
    'ListenAddress 127.0.0.1',
    `Port ${port}`,
    `HostKey ${keys.hostKey}`,
    `PidFile ${join(dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PermitRootLogin prohibit-password',
    'UsePAM no',
    'StrictModes no',
    ...extra,
    '',
  ];
  await writeFile(join(dir, 'sshd_config'), lines.join('\n'));
}

/** A real OpenSSH server on 127.0.0.1 with its own config, host key and client key. */
export class TestSshd extends ServerProcess {
  readonly kind = 'openssh';

  static async start(): Promise<TestSshd> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-sshd-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    await writeSshdConfig(dir, port, keys, [
      // a process of its own per session (as most installations have it), so a test can end one SFTP channel
      'Subsystem sftp /usr/lib/openssh/sftp-server',
    ]);
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 }).catch(() => undefined); // privilege separation
    const sshd = new TestSshd(dir, port, userInfo().username, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    await sshd.resume();
    return sshd;
  }

  protected command() {
    return { file: '/usr/sbin/sshd', args: ['-D', '-e', '-f', join(this.dir, 'sshd_config')] };
  }

  /** The listener and its descendants (session monitor, its unprivileged child, that one's sftp-server), comma-separated in $all. */
  private all(): string {
    return [
      `all=${this.pid()}; level=${this.pid()}`,
      'for i in 1 2 3; do level=$(pgrep -d, -P "$level") || break; all="$all,$level"; done',
    ].join('\n');
  }

  /** the sessions' sftp-server processes: sshd itself still answers keepalives, as with a sftp-server stuck on a hung mount */
  protected sessionPids(): string {
    return `${this.all()}\npgrep -x sftp-server -P "$all"`;
  }

  protected serverPids(): string {
    return `${this.all()}\necho "$all" | tr , ' '`;
  }

  /**
   * A shell command for a test hook that cuts the client's connection at that very step, and
   * returns only once what it killed is dead: `sftp-channel` kills the sessions' sftp-server
   * processes (the server then closes the SFTP channel cleanly while the SSH connection stays
   * up); `server` kills the server and every session it forked. With `once`, a marker file
   * keeps later hooks from cutting again.
   */
  override cutCommand(opts: { cut: 'sftp-channel' | 'server'; once: string }): string {
    return this.killOnce(opts.cut === 'server' ? this.serverPids() : this.sessionPids(), opts.once);
  }
}
