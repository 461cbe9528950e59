import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { AWAIT_DEATH, freezePidsCommand, killTree, makeServerKeys, thawPids, untilListening, type TestSftpServer } from './sftpServers.js';

const PROFTPD = '/usr/sbin/proftpd';
/** The login the server knows (its own user file): mapped to this process's uid, so files it writes are ours. */
const USER = 'settle';

/**
 * A real ProFTPD (Debian's proftpd-core with mod_sftp) on 127.0.0.1: SFTP only, a user file of
 * its own, public-key login, no chroot. One process per session, forked by the listener.
 */
export class TestProftpd implements TestSftpServer {
  readonly kind = 'proftpd';
  readonly user = USER;
  private child: ChildProcess | undefined;

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly clientKey: string,
    readonly knownHosts: string,
    readonly hostKeyPub: string,
  ) {}

  static async start(): Promise<TestProftpd> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-proftpd-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port);
    // mod_sftp reads authorized keys in RFC 4716 form
    await writeFile(join(dir, 'authorized_keys'), execFileSync('ssh-keygen', ['-e', '-f', `${keys.clientKey}.pub`]));
    const me = userInfo();
    const group = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();
    // mod_auth_file refuses user and group files that others may read
    await writeFile(join(dir, 'passwd'), `${USER}:x:${me.uid}:${me.gid}:settle test:/:/bin/sh\n`, { mode: 0o600 });
    await writeFile(join(dir, 'group'), `${group}:x:${me.gid}:\n`, { mode: 0o600 });
    await writeFile(
      join(dir, 'proftpd.conf'),
      [
        'ServerName "settle-test"',
        'ServerType standalone',
        `Port ${port}`,
        'DefaultAddress 127.0.0.1',
        'SocketBindTight on',
        'UseIPv6 off',
        `User ${me.username}`,
        `Group ${group}`,
        ...(me.uid === 0 ? ['RootLogin on'] : []),
        `PidFile ${join(dir, 'proftpd.pid')}`,
        `ScoreboardFile ${join(dir, 'proftpd.scoreboard')}`,
        'DelayTable none',
        'WtmpLog off',
        `SystemLog ${join(dir, 'system.log')}`,
        `TransferLog ${join(dir, 'xfer.log')}`,
        'AuthOrder mod_auth_file.c',
        `AuthUserFile ${join(dir, 'passwd')}`,
        `AuthGroupFile ${join(dir, 'group')}`,
        'RequireValidShell off',
        'UseReverseDNS off',
        'ModulePath /usr/lib/proftpd',
        'LoadModule mod_sftp.c',
        'SFTPEngine on',
        `SFTPLog ${join(dir, 'sftp.log')}`,
        `SFTPHostKey ${keys.hostKey}`,
        'SFTPAuthMethods publickey',
        `SFTPAuthorizedUserKeys file:${join(dir, 'authorized_keys')}`,
        '<Directory />',
        '  AllowOverwrite on',
        '</Directory>',
        '',
      ].join('\n'),
    );
    const server = new TestProftpd(dir, port, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    await server.resume();
    return server;
  }

  async resume(): Promise<void> {
    let log = '';
    this.child = spawn(PROFTPD, ['--nodaemon', '-c', join(this.dir, 'proftpd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d) => (log += d));
    await untilListening(this.port, this.child, () => log, 'proftpd');
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  private listener(): number {
    const pid = this.child?.pid;
    if (!pid) throw new Error('proftpd is not running');
    return pid;
  }

  /** Its session processes stop: SFTP and SSH alike, since mod_sftp serves both from one process. */
  freezeCommand(): string {
    return freezePidsCommand(`pgrep -P ${this.listener()}`, join(this.dir, 'frozen'));
  }

  thaw(): Promise<void> {
    return thawPids(join(this.dir, 'frozen'));
  }

  cutCommand(opts: { cut: 'server'; once: string }): string {
    const listener = this.listener();
    return [
      `[ -e '${opts.once}' ] && exit 0; touch '${opts.once}'`,
      `victims="${listener} $(pgrep -P ${listener} | tr '\\n' ' ')"`,
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
