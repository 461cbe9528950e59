import { homedir } from 'node:os';
import { join, posix } from 'node:path';
import type { Logger } from '../../logEvents.js';
import type { Destination } from '../../destination.js';
import { UsageError } from '../../errors.js';
import { HostKeyPolicy } from './hostKeys.js';
import type { IntakeFolders, IntakeKind, IntakeServer, IntakeSettings, KindOptions } from '../intakeKind.js';
import { checkCredentials, type SftpCredentials } from './credentials.js';
import type { SftpFolders } from './intake.js';
import type { SftpLimits } from './requests.js';
import { parseSftpUrl, type SftpLocation } from './url.js';

/** How to reach and trust an sftp:// intake's server, and how long to wait for it. */
export interface SftpSettings {
  keyPath: string | undefined;
  keyPassphrase: string | undefined;
  password: string | undefined;
  agentSocket: string | undefined;
  knownHosts: string;
  hostKeyFingerprint: string | undefined;
  /** --sftp-timeout: the longest wait for any one answer */
  timeoutSeconds: number;
  /** --sftp-min-rate: a download's floor; 0 for none */
  minBytesPerSecond: number;
}

/** The SFTP kind's settings, in help order: config/optionTable.ts gathers them into the option table. */
export const SFTP_OPTIONS = {
  sftpKey: {
    flag: '--sftp-key',
    value: '<path>',
    description: 'private key for an sftp:// intake; its passphrase only from SETTLE_SFTP_KEY_PASSPHRASE',
    env: 'SETTLE_SFTP_KEY',
    kind: 'string',
    path: true,
  },
  knownHosts: {
    flag: '--known-hosts',
    value: '<path>',
    description: 'OpenSSH known_hosts for the SFTP server',
    env: 'SETTLE_KNOWN_HOSTS',
    kind: 'string',
    // the typed default is the user's own (HOME's): settings() finds it
    shownDefault: '~/.ssh/known_hosts',
    path: true,
    details: '`[host]:port` entries, hashed names, wildcards, `@revoked`',
  },
  hostKeyFingerprint: {
    scope: 'own',
    flag: '--host-key-fingerprint',
    value: '<SHA256:...>',
    description: 'pin the SFTP server key instead of known_hosts',
    env: 'SETTLE_HOST_KEY_FINGERPRINT',
    kind: 'string',
    details: 'as `ssh-keygen -lf` prints it',
  },
  sftpPassword: {
    flag: null,
    description: 'password for an sftp:// intake: never a flag, never in the URL',
    env: 'SETTLE_SFTP_PASSWORD',
    kind: 'string',
  },
  sftpTimeout: {
    flag: '--sftp-timeout',
    value: '<duration>',
    description: 'longest wait for any one answer of the SFTP server, or for its handshake',
    env: 'SETTLE_SFTP_TIMEOUT',
    kind: 'duration',
    range: { min: 1, why: 'a server must have time to answer' },
    default: 60,
    details:
      'SSH keepalives prove only that the connection lives (a `sftp-server` stuck on a hung mount answers them): past this a download fails the file, a move fails the move (claim released or the load kept, file left in the intake, exit 1), and the next run resumes',
  },
  sftpMinRate: {
    flag: '--sftp-min-rate',
    value: '<bytes>',
    description: 'a download slower than this many bytes a second fails (0: no floor)',
    env: 'SETTLE_SFTP_MIN_RATE',
    kind: 'bytes',
    range: { min: 0, max: 1024 ** 3 },
    default: 1024,
    details:
      'measured over each `--sftp-timeout` spent waiting for the server, so a slow disk here never trips it; a server that trickles a few bytes at a time does',
  },
} as const satisfies KindOptions;

/** An sftp:// intake's folders on its server: final folders are absolute paths there, beside the intake unless set. */
function sftpFolders(s: IntakeSettings): IntakeFolders {
  const loc = parseSftpUrl(s.intake!);
  const remote = (value: string | undefined, name: Destination) => {
    if (value === undefined) return posix.join(posix.dirname(loc.path), name);
    if (!value.startsWith('/')) throw new UsageError(`--${name} must be an absolute path on the SFTP server, got ${value}`);
    return posix.normalize(value).replace(/\/+$/, '');
  };
  return {
    server: sftpServer(loc),
    intake: loc.path,
    archive: remote(s.archive, 'archive'),
    duplicates: remote(s.duplicates, 'duplicates'),
    rejected: remote(s.rejected, 'rejected'),
  };
}

/** The SFTP server as the commands and reports see it. */
function sftpServer({ user, host, port }: SftpLocation): IntakeServer {
  return {
    user,
    host,
    port,
    locationPrefix: `sftp://${host}:${port}`,
    described: `the SFTP server sftp://${user}@${host}:${port}`,
    reachedNote: `${host}:${port} reached, host key known, logged in as ${user}`,
    copyCommand: (folder, local, quote) => `sftp -r -P ${port} ${quote(`${user}@${host}:${folder}`)} ${local}`,
  };
}

/** The server and intake path of an sftp:// intake's folders. */
function sftpLocationOf(folders: IntakeFolders): SftpLocation {
  const { user, host, port } = folders.server!;
  return { user, host, port, path: folders.intake };
}

/** How to reach and trust the server of an sftp:// setting, and how long to wait for it. */
function sftpAccess(
  own: SftpSettings,
  loc: SftpLocation,
  stop?: AbortSignal,
): { creds: SftpCredentials; hostKeys: HostKeyPolicy; limits: SftpLimits } {
  const hostKeys = own.hostKeyFingerprint
    ? HostKeyPolicy.pinned(own.hostKeyFingerprint, loc.host, loc.port)
    : HostKeyPolicy.fromKnownHosts(own.knownHosts, loc.host, loc.port);
  const { keyPath, keyPassphrase, password, agentSocket } = own;
  const limits = { timeoutMs: own.timeoutSeconds * 1000, minBytesPerSecond: own.minBytesPerSecond, stop };
  return { creds: { keyPath, keyPassphrase, password, agentSocket }, hostKeys, limits };
}

async function openSftp(own: SftpSettings, loc: SftpLocation, stop: AbortSignal | undefined, folders: SftpFolders, log: Logger) {
  // loaded on demand: ssh2 takes longer to load than a whole idle run may take
  const { SftpIntake } = await import('./intake.js');
  const { creds, hostKeys, limits } = sftpAccess(own, loc, stop);
  return SftpIntake.open(loc, folders, creds, hostKeys, limits, log);
}

/** An SFTP server: `sftp://user@host[:port]/path`, reached with a key, an agent or a password, trusted by known_hosts or a pin. */
export const sftpKind: IntakeKind<SftpSettings, typeof SFTP_OPTIONS> = {
  name: 'sftp',
  scheme: 'sftp',
  example: 'sftp://user@host[:port]/path',
  recordedLocation(location) {
    const recorded = /^sftp:\/\/(?:[^@/]*@)?([^/]*)(\/.*)$/s.exec(location); // s: a name may hold a line break
    return recorded ? { path: recorded[2]!, withoutLogin: `sftp://${recorded[1]}${recorded[2]}` } : null;
  },
  options: SFTP_OPTIONS,
  settings: (read) => ({
    keyPath: read.text('sftpKey'),
    keyPassphrase: read.env('SETTLE_SFTP_KEY_PASSPHRASE') || undefined,
    password: read.text('sftpPassword'),
    agentSocket: read.env('SSH_AUTH_SOCK') || undefined,
    knownHosts: read.text('knownHosts') ?? join(read.env('HOME') ?? homedir(), '.ssh', 'known_hosts'),
    hostKeyFingerprint: read.text('hostKeyFingerprint'),
    timeoutSeconds: read.number('sftpTimeout') ?? SFTP_OPTIONS.sftpTimeout.default,
    minBytesPerSecond: read.number('sftpMinRate') ?? SFTP_OPTIONS.sftpMinRate.default,
  }),
  shownDefaults: (own) => ({ knownHosts: own.knownHosts }),
  parse: (intake) => void parseSftpUrl(intake),
  folders: sftpFolders,
  place(folders, role) {
    const loc = sftpLocationOf(folders);
    const server = `sftp://${loc.user}@${loc.host.toLowerCase()}:${loc.port}`;
    return { role, folder: `sftp://${loc.user}@${loc.host}:${loc.port}${folders[role]}`, place: server + posix.normalize(folders[role]) };
  },
  async open(own, folders, log, stop) {
    const { intake, archive, duplicates, rejected } = folders;
    const sftp = await openSftp(own, sftpLocationOf(folders), stop, { intake, archive, duplicates, rejected }, log);
    try {
      await sftp.refuseIntakeAliases();
    } catch (err) {
      await sftp.close();
      throw err;
    }
    return sftp;
  },
  async checkAccess(own, folders) {
    sftpAccess(own, sftpLocationOf(folders));
    await checkCredentials(own);
  },
  async openFolder(settings, own, role, setting, log, required) {
    const loc = parseSftpUrl(settings.intake!);
    const folder = role === 'intake' ? loc : { ...loc, path: setting ?? posix.join(posix.dirname(loc.path), role) };
    const { creds, hostKeys, limits } = sftpAccess(own, folder);
    const { SftpFolder } = await import('./folder.js');
    return required
      ? SftpFolder.openFolder(folder, role, creds, hostKeys, limits, log)
      : SftpFolder.openFolderIfThere(folder, role, creds, hostKeys, limits, log);
  },
};
