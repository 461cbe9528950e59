import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { AWAIT_DEATH, freezePidsCommand, killTree, makeServerKeys, thawPids, untilListening, type TestSftpServer } from './sftpServers.js';

const SSHD = '/usr/sbin/sshd';
const SFTP_SERVER = '/usr/lib/openssh/sftp-server';

/** A real OpenSSH server on 127.0.0.1 with its own config, host key and client key. */
export class TestSshd implements TestSftpServer {
  readonly kind = 'openssh';
  private child: ChildProcess | undefined;

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly user: string,
    readonly clientKey: string,
    readonly knownHosts: string,
    readonly hostKeyPub: string,
  ) {}

  static async start(): Promise<TestSshd> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-sshd-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    await writeFile(join(dir, 'authorized_keys'), await readFile(`${keys.clientKey}.pub`));
    await writeFile(
      join(dir, 'sshd_config'),
      [
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
        // a process of its own per session (as most installations have it), so a test can end one SFTP channel
        `Subsystem sftp ${SFTP_SERVER}`,
        '',
      ].join('\n'),
    );
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 }).catch(() => undefined); // privilege separation
    const sshd = new TestSshd(dir, port, userInfo().username, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    await sshd.resume();
    return sshd;
  }

  async resume(): Promise<void> {
    let log = '';
    this.child = spawn(SSHD, ['-D', '-e', '-f', join(this.dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d) => (log += d));
    await untilListening(this.port, this.child, () => log, 'sshd');
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    await killTree(this.child);
    this.child = undefined;
  }

  /** The listener's descendants (session monitor, its unprivileged child, that one's sftp-server), as a shell expression. */
  private sessions(): string {
    const listener = this.child?.pid;
    if (!listener) throw new Error('sshd is not running');
    return [
      `all=${listener}; level=${listener}`,
      'for i in 1 2 3; do level=$(pgrep -d, -P "$level") || break; all="$all,$level"; done',
    ].join('\n');
  }

  /**
   * A shell command for a test hook that cuts the client's connection at that very step, and
   * returns only once what it killed is dead: `sftp-channel` kills the sessions' sftp-server
   * processes (the server then closes the SFTP channel cleanly while the SSH connection stays
   * up); `server` kills the server and every session it forked. With `once`, a marker file
   * keeps later hooks from cutting again.
   */
  cutCommand(opts: { cut: 'sftp-channel' | 'server'; once: string }): string {
    return [
      `[ -e '${opts.once}' ] && exit 0; touch '${opts.once}'`,
      this.sessions(),
      opts.cut === 'server' ? `victims=$(echo "$all" | tr , ' ')` : `victims=$(pgrep -x sftp-server -P "$all")`,
      '[ -n "$victims" ] || { echo "nothing to cut" >&2; exit 1; }',
      'kill -KILL $victims',
      AWAIT_DEATH,
    ].join('\n');
  }

  /** The sessions' sftp-server processes stop; sshd itself still answers keepalives: a sftp-server stuck on a hung mount. */
  freezeCommand(): string {
    return [this.sessions(), freezePidsCommand('pgrep -x sftp-server -P "$all"', join(this.dir, 'frozen'))].join('\n');
  }

  thaw(): Promise<void> {
    return thawPids(join(this.dir, 'frozen'));
  }

  async destroy(): Promise<void> {
    await this.thaw();
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
