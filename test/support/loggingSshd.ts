import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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

  /** the chroot: the server's `/in` is `jail/in` here */
  get jail(): string {
    return join(this.dir, 'jail');
  }

  /** the file rsyslogd writes the sessions' lines to, in its traditional format */
  get logFile(): string {
    return join(this.dir, 'sftp.log');
  }

  static async start(): Promise<TestLoggingSshd> {
    await mkdir('/run/settle-test', { recursive: true, mode: 0o755 });
    const dir = await mkdtemp('/run/settle-test/sshd-');
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'jail', 'dev'), { recursive: true, mode: 0o755 });
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    await writeSshdConfig(dir, port, keys, [
      'Subsystem sftp internal-sftp -l INFO',
      `ChrootDirectory ${join(dir, 'jail')}`,
      'ForceCommand internal-sftp -l INFO',
    ]);
    await writeFile(
      join(dir, 'rsyslog.conf'),
      [
        `global(workDirectory="${dir}")`,
        'module(load="imuxsock" SysSock.Use="off")',
        `input(type="imuxsock" Socket="${join(dir, 'jail', 'dev', 'log')}" CreatePath="on")`,
        `*.* action(type="omfile" file="${join(dir, 'sftp.log')}" template="RSYSLOG_TraditionalFileFormat")`,
        '',
      ].join('\n'),
    );
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 }).catch(() => undefined); // privilege separation
    const server = new TestLoggingSshd(dir, port, 'root', keys.clientKey, keys.knownHosts, keys.hostKeyPub);
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
  flushLog(): Promise<void> {
    return this.untilLogged('the sessions', () => '');
  }

  private async untilLogged(what: string, log: () => string): Promise<void> {
    const marker = `settle-test-marker-${Math.random().toString(36).slice(2)}`;
    const socket = join(this.jail, 'dev', 'log');
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

/** What a partner's uploader does, in OpenSSH's own sftp client: `put`, `rename`, `rm` lines run in order (batch mode). */
export async function partnerSftp(
  server: { port: number; user: string; clientKey: string; knownHosts: string },
  commands: string[],
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
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sftp ${commands.join('; ')}: ${err}`))));
    child.stdin.end(`${commands.join('\n')}\n`);
  });
}
