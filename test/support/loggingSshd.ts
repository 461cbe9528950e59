import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './postgresServer.js';
import { killTree, makeServerKeys, ServerProcess } from './sftpServers.js';
import { writeSshdConfig } from './sshd.js';

/**
 * A real OpenSSH sshd on 127.0.0.1 whose sessions run `internal-sftp -l INFO` chrooted (as a
 * partner's upload account is set up), and a real rsyslogd of its own that writes their lines
 * to a file: the chrooted session logs to the chroot's `/dev/log`, the socket rsyslog's imuxsock
 * opens there (the way OpenSSH documents logging a chrooted internal-sftp). ChrootDirectory
 * wants every folder of its path owned by root and writable by nobody else, so the folder is
 * made under /run rather than the world-writable /tmp.
 */
export class TestLoggingSshd extends ServerProcess {
  readonly kind = 'openssh';
  private syslog: ChildProcess | undefined;
  private partners: string[] = [];
  /** each partner login's uid and gid, to give it the folders it writes in its jail */
  private logins = new Map<string, { uid: number; gid: number }>();

  /** the chroot: the server's `/in` is `jail/in` here */
  get jail(): string {
    return join(this.dir, 'jail');
  }

  /** the file rsyslogd writes the sessions' lines to, in its traditional format */
  get logFile(): string {
    return join(this.dir, 'sftp.log');
  }

  /** the chroot of another partner's login (`opts.partners`): its own folder, logging to the same file */
  jailOf(user: string): string {
    return user === this.user ? this.jail : join(this.dir, `jail-${user}`);
  }

  /**
   * A folder in a partner login's jail that the partner writes in, made and owned by that login:
   * the jail itself stays root's and writable by nobody else, as ChrootDirectory requires.
   */
  async partnerFolder(user: string, name: string): Promise<string> {
    const login = this.logins.get(user);
    if (!login) throw new Error(`${user} is not one of this server's partner logins`);
    const folder = join(this.jailOf(user), name);
    await mkdir(folder, { recursive: true, mode: 0o755 });
    await chown(folder, login.uid, login.gid);
    return folder;
  }

  /** The same server as another partner's login sees it (one of `opts.partners`). */
  as(user: string): TestLoggingSshd {
    return Object.assign(Object.create(Object.getPrototypeOf(this) as object) as TestLoggingSshd, this, { user });
  }

  /**
   * `startFolder`: the folder a session starts in (`internal-sftp -d`), where a path without a
   * leading `/` is taken from. `partners`: more logins, each chrooted in a folder of its own
   * (`jailOf`), whose sessions log through the same rsyslogd into the same file (one syslog file
   * for several partners); each is an unprivileged login of this host (loginOf), made once,
   * that writes only in the folders `partnerFolder` gives it.
   */
  static async start(opts: { startFolder?: string; partners?: string[] } = {}): Promise<TestLoggingSshd> {
    await mkdir('/run/settle-test', { recursive: true, mode: 0o755 });
    const dir = await mkdtemp('/run/settle-test/sshd-');
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'jail', 'dev'), { recursive: true, mode: 0o755 });
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    const sftp = `internal-sftp -l INFO${opts.startFolder ? ` -d ${opts.startFolder}` : ''}`;
    const partners = opts.partners ?? [];
    const logins = new Map<string, { uid: number; gid: number }>();
    for (const user of partners) {
      logins.set(user, await loginOf(user));
      await mkdir(join(dir, `jail-${user}`, 'dev'), { recursive: true, mode: 0o755 });
    }
    await writeSshdConfig(dir, port, keys, [
      `Subsystem sftp ${sftp}`,
      `ForceCommand ${sftp}`,
      ...partners.flatMap((user) => [`Match User ${user}`, `  ChrootDirectory ${join(dir, `jail-${user}`)}`]),
      'Match all',
      `  ChrootDirectory ${join(dir, 'jail')}`,
    ]);
    await writeFile(
      join(dir, 'rsyslog.conf'),
      [
        `global(workDirectory="${dir}")`,
        'module(load="imuxsock" SysSock.Use="off")',
        ...['jail', ...partners.map((user) => `jail-${user}`)].map(
          (jail) => `input(type="imuxsock" Socket="${join(dir, jail, 'dev', 'log')}" CreatePath="on")`,
        ),
        `*.* action(type="omfile" file="${join(dir, 'sftp.log')}" template="RSYSLOG_TraditionalFileFormat")`,
        '',
      ].join('\n'),
    );
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 }).catch(() => undefined); // privilege separation
    const server = new TestLoggingSshd(dir, port, 'root', keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    server.partners = partners;
    server.logins = logins;
    await server.startSyslog();
    try {
      await server.resume();
    } catch (err) {
      await killTree(server.syslog);
      throw err;
    }
    return server;
  }

  private async startSyslog(): Promise<void> {
    let log = '';
    this.syslog = spawn('/usr/sbin/rsyslogd', ['-n', '-f', join(this.dir, 'rsyslog.conf'), '-i', join(this.dir, 'rsyslogd.pid')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.syslog.stderr!.on('data', (d) => (log += d));
    await this.untilLogged('rsyslogd', () => log);
  }

  /**
   * Returns once every line the sessions logged so far is in the file: a marker sent down the
   * same socket after them (a datagram socket keeps their order) has been written.
   */
  async flushLog(): Promise<void> {
    for (const jail of [this.jail, ...this.partners.map((user) => this.jailOf(user))]) {
      await this.untilLogged('the sessions', () => '', join(jail, 'dev', 'log'));
    }
  }

  private async untilLogged(what: string, log: () => string, socket = join(this.jail, 'dev', 'log')): Promise<void> {
    const marker = `settle-test-marker-${Math.random().toString(36).slice(2)}`;
    // sent again until it shows: rsyslogd drops what reaches its socket before it is fully started
    for (let i = 0; i < 300; i++) {
      if (this.syslog?.exitCode !== null) throw new Error(`rsyslogd exited: ${log()}`);
      await promisify(execFile)('logger', ['-u', socket, '-t', 'settle-test', marker]).catch(() => undefined); // no socket yet
      for (let j = 0; j < 10; j++) {
        if ((await readFile(this.logFile, 'utf8').catch(() => '')).includes(marker)) return;
        await sleep(10);
      }
    }
    throw new Error(`rsyslogd did not write ${what}' lines to ${this.logFile}: ${log()}`);
  }

  protected command() {
    return { file: '/usr/sbin/sshd', args: ['-D', '-e', '-f', join(this.dir, 'sshd_config')] };
  }

  protected sessionPids(): string {
    return `pgrep -P ${this.pid()}`;
  }

  protected serverPids(): string {
    return `echo ${this.pid()}; pgrep -P ${this.pid()}`;
  }

  override async destroy(): Promise<void> {
    await killTree(this.syslog);
    await super.destroy();
  }
}

/**
 * An ordinary login of this host for a partner (sshd wants a real user for each login), made
 * once: a system account with a uid of its own, no home and no shell (its sessions are
 * internal-sftp, chrooted); `*` for a password, since sshd refuses a locked (`!`) account. Its
 * uid and gid, for the folders it may write in.
 */
async function loginOf(user: string): Promise<{ uid: number; gid: number }> {
  const entry = async () => {
    const line = await promisify(execFile)('getent', ['passwd', user]).then(
      (r) => r.stdout.trim(),
      () => null,
    );
    if (line === null) return null;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  };
  const known = await entry();
  if (known?.uid === 0) {
    // an older helper's root alias: userdel refuses an account whose uid runs processes, and no test may log in as root by another name
    throw new Error(`${user} is a login with root's uid, left by an older test helper: remove its lines from /etc/passwd and /etc/shadow`);
  }
  if (known) return known;
  await promisify(execFile)('useradd', [
    '--system',
    '--no-create-home',
    '--home-dir',
    '/',
    '--shell',
    '/usr/sbin/nologin',
    '--password',
    '*',
    user,
  ]);
  const made = await entry();
  if (!made) throw new Error(`useradd made no login ${user}`);
  return made;
}

/**
 * What a partner's uploader does, in OpenSSH's own sftp client: `put`, `rename`, `rm` lines run in
 * order (batch mode). A line given as bytes is sent as they are (a name that is not UTF-8).
 */
export async function partnerSftp(
  server: { port: number; user: string; clientKey: string; knownHosts: string },
  commands: (string | Buffer)[],
): Promise<void> {
  const args = [
    '-b',
    '-',
    '-i',
    server.clientKey,
    '-o',
    `UserKnownHostsFile=${server.knownHosts}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-P',
    String(server.port),
    `${server.user}@127.0.0.1`,
  ];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('sftp', args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sftp ${commands.map(String).join('; ')}: ${err}`))));
    child.stdin.end(Buffer.concat(commands.flatMap((command) => [Buffer.from(command), Buffer.from('\n')])));
  });
}

/**
 * Writes files by the names given, as they are, with ssh2's SFTP client (OpenSSH's `sftp`
 * makes every path absolute and has no way to write a tab or a newline in a name): a name
 * without a leading `/` is sent relative, for the server to take from the session's start folder.
 */
export async function rawSftpPut(
  server: { port: number; user: string; clientKey: string },
  files: { path: string; text: string }[],
): Promise<void> {
  const client = new ssh2.Client();
  await new Promise<void>((resolve, reject) => {
    client.on('ready', resolve).on('error', reject);
    client.connect({ host: '127.0.0.1', port: server.port, username: server.user, privateKey: readFileSync(server.clientKey) });
  });
  try {
    const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
    for (const file of files) {
      await new Promise<void>((resolve, reject) => sftp.writeFile(file.path, file.text, (err) => (err ? reject(err) : resolve())));
    }
  } finally {
    client.end();
  }
}
