import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './postgresServer.js';

const SSHD = '/usr/sbin/sshd';
const SFTP_SERVER = '/usr/lib/openssh/sftp-server';

/** A real OpenSSH server on 127.0.0.1 with its own config, host key and client key. */
export class TestSshd {
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
    const keygen = (file: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'settle-test', '-f', file]);
    keygen(join(dir, 'host_ed25519'));
    keygen(join(dir, 'client_ed25519'));
    await writeFile(join(dir, 'authorized_keys'), await readFile(join(dir, 'client_ed25519.pub')));
    const port = await freePort();
    const hostKeyPub = (await readFile(join(dir, 'host_ed25519.pub'), 'utf8')).trim().split(' ').slice(0, 2).join(' ');
    await writeFile(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${hostKeyPub}\n`);
    await writeFile(
      join(dir, 'sshd_config'),
      [
        'ListenAddress 127.0.0.1',
        `Port ${port}`,
        `HostKey ${join(dir, 'host_ed25519')}`,
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
    const sshd = new TestSshd(dir, port, userInfo().username, join(dir, 'client_ed25519'), join(dir, 'known_hosts'), hostKeyPub);
    await sshd.resume();
    return sshd;
  }

  /** (Re)starts the server on the same port with the same keys. */
  async resume(): Promise<void> {
    let log = '';
    this.child = spawn(SSHD, ['-D', '-e', '-f', join(this.dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d) => (log += d));
    for (let i = 0; i < 500; i++) {
      if (this.child.exitCode !== null) throw new Error(`sshd exited: ${log}`);
      if (await accepts(this.port)) return;
      await sleep(20);
    }
    throw new Error(`sshd did not listen on ${this.port}: ${log}`);
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  /** The server and every session it forked: a cut connection, as when the server host goes away. */
  async stop(): Promise<void> {
    const listener = this.child?.pid;
    if (!listener) return;
    for (const pid of [...(await descendants(listener)), listener]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (this.child && this.child.exitCode === null) await new Promise((r) => this.child!.once('exit', r));
    this.child = undefined;
  }

  /**
   * A shell command for a test hook that cuts the client's connection at that very step, and
   * returns only once what it killed is dead: `sftp-channel` kills the sessions' sftp-server
   * processes (the server then closes the SFTP channel cleanly while the SSH connection stays
   * up); `server` kills the server and every session it forked. With `once`, a marker file
   * keeps later hooks from cutting again.
   */
  cutCommand(opts: { cut: 'sftp-channel' | 'server'; once: string }): string {
    const listener = this.child?.pid;
    if (!listener) throw new Error('sshd is not running');
    return [
      `[ -e '${opts.once}' ] && exit 0; touch '${opts.once}'`,
      // the listener's descendants: session monitor, its unprivileged child, that one's sftp-server
      `all=${listener}; level=${listener}`,
      'for i in 1 2 3; do level=$(pgrep -d, -P "$level") || break; all="$all,$level"; done',
      opts.cut === 'server' ? `victims=$(echo "$all" | tr , ' ')` : `victims=$(pgrep -x sftp-server -P "$all")`,
      '[ -n "$victims" ] || { echo "nothing to cut" >&2; exit 1; }',
      'kill -KILL $victims',
      // a zombie holds no socket or pipe: dead enough
      `for p in $victims; do while s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null) && [ "\${s%% *}" != Z ]; do :; done; done`,
    ].join('\n');
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function descendants(root: number): Promise<number[]> {
  const parentOf = new Map<number, number>();
  for (const p of (await readdir('/proc')).filter((x) => /^\d+$/.test(x))) {
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid) parentOf.set(Number(p), ppid);
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parentOf) {
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
}
