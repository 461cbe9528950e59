import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The SFTP servers the tests run against: three real ones from Debian and a hostile one of our own. */
export type SftpServerKind = 'openssh' | 'proftpd' | 'rclone' | 'hostile';

/**
 * One SFTP server on 127.0.0.1 with its own config, host key and client key, serving this
 * machine's file system under the same absolute paths (so a test writes the partner's uploads
 * straight into the folders the server shows).
 */
export interface TestSftpServer {
  readonly kind: SftpServerKind;
  /** the server's own folder: config, keys, logs */
  readonly dir: string;
  readonly port: number;
  readonly user: string;
  readonly clientKey: string;
  readonly knownHosts: string;
  /** `ssh-ed25519 AAAA…`: the host key as known_hosts has it */
  readonly hostKeyPub: string;
  url(path: string): string;
  /**
   * A shell command for a test hook after which the server answers no SFTP request while its
   * SSH connection stays up where the server allows it (a `sftp-server` stuck on a hung mount):
   * OpenSSH's sftp-server processes, ProFTPD's session processes or the whole rclone process are
   * stopped (SIGSTOP), the hostile server goes silent. `thaw` undoes it.
   */
  freezeCommand(): string;
  thaw(): Promise<void>;
  /**
   * A shell command for a test hook that kills the server and its sessions (once: a marker file
   * keeps later hooks from cutting again), returning only when they are dead.
   */
  cutCommand(opts: { cut: 'server'; once: string }): string;
  /** the server and its sessions, killed: as when the server host goes away */
  stop(): Promise<void>;
  /** (re)starts the server on the same port with the same keys */
  resume(): Promise<void>;
  destroy(): Promise<void>;
}

export const SFTP_SERVER_KINDS: readonly SftpServerKind[] = ['openssh', 'proftpd', 'rclone', 'hostile'];

/** Starts one server of each kind asked for; loaded on demand so a test file pays only for its own. */
export async function startSftpServer(kind: SftpServerKind): Promise<TestSftpServer> {
  switch (kind) {
    case 'openssh':
      return (await import('./sshd.js')).TestSshd.start();
    case 'proftpd':
      return (await import('./proftpd.js')).TestProftpd.start();
    case 'rclone':
      return (await import('./rcloneSftp.js')).TestRcloneSftp.start();
    case 'hostile':
      return (await import('./hostileSftp.js')).HostileSftpServer.start();
  }
}

/** The keys every test server has: an ed25519 host key, a client key, and known_hosts naming the host key for `port`. */
export async function makeServerKeys(
  dir: string,
  port: number,
  hostKeyType: 'ed25519' | 'dsa' = 'ed25519',
): Promise<{ hostKey: string; clientKey: string; knownHosts: string; hostKeyPub: string }> {
  const keygen = (file: string, type: string) => execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'settle-test', '-f', file]);
  const hostKey = join(dir, `host_${hostKeyType}`);
  keygen(hostKey, hostKeyType);
  const clientKey = join(dir, 'client_ed25519');
  keygen(clientKey, 'ed25519');
  const hostKeyPub = (await readFile(`${hostKey}.pub`, 'utf8')).trim().split(' ').slice(0, 2).join(' ');
  const knownHosts = join(dir, 'known_hosts');
  await writeFile(knownHosts, `[127.0.0.1]:${port} ${hostKeyPub}\n`);
  return { hostKey, clientKey, knownHosts, hostKeyPub };
}

export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** Waits until `port` takes connections; fails with the server's own words when it exits first. */
export async function untilListening(port: number, child: ChildProcess, log: () => string, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited: ${log()}`);
    if (await accepts(port)) return;
    await sleep(20);
  }
  throw new Error(`${what} did not listen on ${port}: ${log()}`);
}

/**
 * Shell lines that SIGSTOP the processes `pids` prints (a shell expression) and note them in
 * `file`, so that `thawPids` can resume them; failing when there is nothing to stop.
 */
export function freezePidsCommand(pids: string, file: string): string {
  return [
    `victims=$(${pids})`,
    '[ -n "$victims" ] || { echo "nothing to freeze" >&2; exit 1; }',
    `echo $victims > '${file}'`,
    'kill -STOP $victims',
  ].join('\n');
}

export async function thawPids(file: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => '');
  for (const pid of text.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGCONT');
    } catch {
      // gone meanwhile
    }
  }
  await writeFile(file, '');
}

/** Shell lines that wait until every pid in `$victims` is dead (a zombie holds no socket: dead enough). */
export const AWAIT_DEATH = `for p in $victims; do while s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null) && [ "\${s%% *}" != Z ]; do :; done; done`;

/** Every descendant of `root` (children, their children, …), from /proc. */
export async function descendants(root: number): Promise<number[]> {
  const { readdir } = await import('node:fs/promises');
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

/** Kills `listener` and everything it forked, and waits for `child` to exit. */
export async function killTree(child: ChildProcess | undefined): Promise<void> {
  const listener = child?.pid;
  if (!child || !listener) return;
  for (const pid of [...(await descendants(listener)), listener]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
}

/**
 * A real server run as a process of its own (OpenSSH, ProFTPD, rclone): started, frozen, cut,
 * stopped and resumed the same way; each says how it is started and which processes are its
 * sessions.
 */
export abstract class ServerProcess implements TestSftpServer {
  abstract readonly kind: SftpServerKind;
  private child: ChildProcess | undefined;

  protected constructor(
    readonly dir: string,
    readonly port: number,
    readonly user: string,
    readonly clientKey: string,
    readonly knownHosts: string,
    readonly hostKeyPub: string,
  ) {}

  /** how the server is started, in the foreground */
  protected abstract command(): { file: string; args: string[] };
  /** a shell expression printing the pids that serve SFTP requests (a freeze stops them) */
  protected abstract sessionPids(): string;
  /** a shell expression printing the pids of the whole server (a cut kills them) */
  protected abstract serverPids(): string;

  async resume(): Promise<void> {
    let log = '';
    const { file, args } = this.command();
    this.child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d) => (log += d));
    await untilListening(this.port, this.child, () => log, this.kind);
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  /** the process the server was started as */
  protected pid(): number {
    const pid = this.child?.pid;
    if (!pid) throw new Error(`${this.kind} is not running`);
    return pid;
  }

  freezeCommand(): string {
    return freezePidsCommand(this.sessionPids(), join(this.dir, 'frozen'));
  }

  thaw(): Promise<void> {
    return thawPids(join(this.dir, 'frozen'));
  }

  cutCommand(opts: { cut: 'server'; once: string }): string {
    return this.killOnce(this.serverPids(), opts.once);
  }

  /** Shell lines that kill what `pids` prints, once (`once` marks it done), returning when they are dead. */
  protected killOnce(pids: string, once: string): string {
    return [
      `[ -e '${once}' ] && exit 0; touch '${once}'`,
      `victims=$(${pids})`,
      '[ -n "$victims" ] || { echo "nothing to cut" >&2; exit 1; }',
      'kill -KILL $victims',
      AWAIT_DEATH,
    ].join('\n');
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
