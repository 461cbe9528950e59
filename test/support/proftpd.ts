import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './postgresServer.js';
import { makeServerKeys, ServerProcess } from './sftpServers.js';

/** The login the server knows (its own user file): mapped to this process's uid, so files it writes are ours. */
const USER = 'settle';

/**
 * A real ProFTPD (Debian's proftpd-core with mod_sftp) on 127.0.0.1: SFTP only, a user file of
 * its own, public-key login, no chroot. One process per session, forked by the listener, serving
 * SSH and SFTP alike.
 */
export class TestProftpd extends ServerProcess {
  readonly kind = 'proftpd';

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
    const server = new TestProftpd(dir, port, USER, keys.clientKey, keys.knownHosts, keys.hostKeyPub);
    await server.resume();
    return server;
  }

  protected command() {
    return { file: '/usr/sbin/proftpd', args: ['--nodaemon', '-c', join(this.dir, 'proftpd.conf')] };
  }

  protected sessionPids(): string {
    return `pgrep -P ${this.pid()}`;
  }

  protected serverPids(): string {
    return `echo ${this.pid()}; pgrep -P ${this.pid()}`;
  }
}
