import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, posix, resolve } from 'node:path';
import type { Logger } from 'pino';
import { UsageError } from '../errors.js';
import { HostKeyPolicy } from './hostKeys.js';
import type { FolderReader, Intake } from './intake.js';
import type { Destination } from '../destination.js';
import { LocalFolder } from './localFolder.js';
import { LocalIntake, refuseIntakeAliases } from './localIntake.js';
import { checkCredentials, type SftpCredentials } from './sftpCredentials.js';
import type { SftpFolders } from './sftpIntake.js';
import type { SftpLimits } from './sftpRequests.js';
import { parseSftpUrl, type SftpLocation } from './sftpUrl.js';

/** What opening an intake takes from the settings: where it is, its final folders, and how to reach an SFTP server. */
export interface IntakeSettings {
  intake: string | undefined;
  archive: string | undefined;
  duplicates: string | undefined;
  rejected: string | undefined;
  sftp: SftpSettings;
}

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

/** archive/, duplicates/ and rejected/ default to siblings of the intake folder. */
export function siblingFolder(intake: string, name: Destination): string {
  return join(dirname(resolve(intake)), name);
}

/** A final folder that is the intake itself would make a "move" a no-op, or worse (its aliases: refuseIntakeAliases). */
function distinctFromIntake<T extends { intake: string; archive: string; duplicates: string; rejected: string }>(f: T): T {
  for (const name of ['archive', 'duplicates', 'rejected'] as const) {
    if (f[name] === f.intake) throw new UsageError(`--${name} must not be the intake folder itself (${f.intake})`);
  }
  return f;
}

/** Refuses a missing or malformed intake setting before anything is connected. */
export function checkIntakeSetting(intakeSettings: IntakeSettings): void {
  if (!intakeSettings.intake) throw new UsageError('no intake: set --intake or SETTLE_INTAKE');
  kindOf(intakeSettings.intake).parse(intakeSettings.intake);
}

/** The intake and its final folders: local paths, or paths on the SFTP server for an sftp:// intake. */
export interface IntakeFolders {
  /** the sftp:// intake's server, or null for a local folder */
  sftp: SftpLocation | null;
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/**
 * Where the settings put the intake and its final folders, checked: archive/, duplicates/ and
 * rejected/ default to siblings of the intake (on the server, for an sftp:// intake, where they
 * must be absolute paths).
 */
export function intakeFolders(intakeSettings: IntakeSettings): IntakeFolders {
  checkIntakeSetting(intakeSettings);
  return distinctFromIntake(kindOf(intakeSettings.intake!).folders(intakeSettings));
}

/** A local intake folder and its final folders: archive/, duplicates/ and rejected/ beside it unless set. */
function localFolders(s: IntakeSettings): IntakeFolders {
  const intake = resolve(s.intake!);
  return {
    sftp: null,
    intake,
    archive: resolve(s.archive ?? siblingFolder(intake, 'archive')),
    duplicates: resolve(s.duplicates ?? siblingFolder(intake, 'duplicates')),
    rejected: resolve(s.rejected ?? siblingFolder(intake, 'rejected')),
  };
}

/** An sftp:// intake's folders on its server: final folders are absolute paths there, beside the intake unless set. */
function sftpFolders(s: IntakeSettings): IntakeFolders {
  const loc = parseSftpUrl(s.intake!);
  const remote = (value: string | undefined, name: Destination) => {
    if (value === undefined) return posix.join(posix.dirname(loc.path), name);
    if (!value.startsWith('/')) throw new UsageError(`--${name} must be an absolute path on the SFTP server, got ${value}`);
    return posix.normalize(value).replace(/\/+$/, '');
  };
  return {
    sftp: loc,
    intake: loc.path,
    archive: remote(s.archive, 'archive'),
    duplicates: remote(s.duplicates, 'duplicates'),
    rejected: remote(s.rejected, 'rejected'),
  };
}

/** One folder a partner's settings name: its role, as written out, and where it is (see folderPlaces). */
export interface FolderPlace {
  role: 'intake' | Destination;
  folder: string;
  /** equal for two settings that name one folder */
  place: string;
}

/**
 * The intake and its final folders, each with where it really is: a local folder with its links
 * resolved (the part that does not exist yet appended to the real path of the part that does);
 * on an SFTP server, the login, host, port and normalized path (a login of its own may see
 * folders of its own, a chroot, so only the same login on the same server is the same folder).
 */
export function folderPlaces(intakeSettings: IntakeSettings): FolderPlace[] {
  const folders = intakeFolders(intakeSettings);
  return (['intake', 'archive', 'duplicates', 'rejected'] as const).map((role) => kindOf(intakeSettings.intake!).place(folders, role));
}

/** An absolute folder path with its links resolved, as far as it exists. */
function realFolderPath(folder: string): string {
  const missing: string[] = [];
  for (let at = folder; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...missing);
    } catch {
      // not there yet (archive/ is made by the first move): the real path of what is there, and the rest
      if (dirname(at) === at) return folder;
      missing.unshift(basename(at));
    }
  }
}

/**
 * One kind of intake, keyed by the scheme of its URL (a local folder has none). Opening,
 * checking and reading an intake go through its kind; a kind's `Intake` keeps the move
 * contract of intake.ts. Adding a kind: docs/ARCHITECTURE.md.
 */
export interface IntakeKind {
  /** the URL scheme it answers, lower-case (`sftp`), or null: a local folder path */
  scheme: string | null;
  /** what an intake setting of this kind looks like, for messages */
  example: string;
  /** refuses a malformed intake setting, naming what is wrong */
  parse(intake: string): void;
  /** the intake and its final folders (before the check that none is the intake itself) */
  folders(s: IntakeSettings): IntakeFolders;
  /** where one of them really is: equal for two settings that name one folder */
  place(folders: IntakeFolders, role: FolderPlace['role']): FolderPlace;
  /** the intake to run on, its final folders refused when one is an alias of the intake */
  open(s: IntakeSettings, folders: IntakeFolders, log: Logger, stop?: AbortSignal): Promise<Intake>;
  /** what opening it needs that is known without a connection (checkIntakeAccess) */
  checkAccess(s: IntakeSettings, folders: IntakeFolders): Promise<void>;
  /**
   * A folder to read: the intake, or a final folder (at `setting`, or beside the intake). Null
   * for one that is not there, unless `required` (then a missing folder is an error).
   */
  openFolder(
    s: IntakeSettings,
    role: FolderPlace['role'],
    setting: string | undefined,
    log: Logger,
    required: boolean,
  ): Promise<FolderReader | null>;
}

const localFolderKind: IntakeKind = {
  scheme: null,
  example: 'a local folder',
  parse: () => undefined,
  folders: localFolders,
  place: (folders, role) => ({ role, folder: folders[role], place: realFolderPath(folders[role]) }),
  async open(_settings, folders, log) {
    const local = await LocalIntake.open(folders, log);
    await refuseIntakeAliases(folders);
    return local;
  },
  async checkAccess(_settings, folders) {
    await LocalIntake.open(folders);
    await refuseIntakeAliases(folders);
  },
  // a local folder that is not there is null, required or not: a run makes it with its first move there
  async openFolder(s, role, setting) {
    const dir = role === 'intake' ? resolve(s.intake!) : resolve(setting ?? siblingFolder(resolve(s.intake!), role));
    return existsSync(dir) ? new LocalFolder(dir) : null;
  },
};

const sftpKind: IntakeKind = {
  scheme: 'sftp',
  example: 'sftp://user@host[:port]/path',
  parse: (intake) => void parseSftpUrl(intake),
  folders: sftpFolders,
  place(folders, role) {
    const loc = folders.sftp!;
    const server = `sftp://${loc.user}@${loc.host.toLowerCase()}:${loc.port}`;
    return { role, folder: `sftp://${loc.user}@${loc.host}:${loc.port}${folders[role]}`, place: server + posix.normalize(folders[role]) };
  },
  async open(s, { sftp: loc, ...folders }, log, stop) {
    const sftp = await openSftp(s, loc!, stop, folders, log);
    try {
      await sftp.refuseIntakeAliases();
    } catch (err) {
      await sftp.close();
      throw err;
    }
    return sftp;
  },
  async checkAccess(s, folders) {
    sftpAccess(s, folders.sftp!);
    await checkCredentials(s.sftp);
  },
  async openFolder(s, role, setting, log, required) {
    const loc = parseSftpUrl(s.intake!);
    const folder = role === 'intake' ? loc : { ...loc, path: setting ?? posix.join(posix.dirname(loc.path), role) };
    const { creds, hostKeys, limits } = sftpAccess(s, folder);
    const { SftpFolder } = await import('./sftpFolder.js');
    return required
      ? SftpFolder.openFolder(folder, role, creds, hostKeys, limits, log)
      : SftpFolder.openFolderIfThere(folder, role, creds, hostKeys, limits, log);
  },
};

/** Every intake kind: a local folder, and one per URL scheme. */
const INTAKE_KINDS: readonly IntakeKind[] = [localFolderKind, sftpKind];

/** The URL scheme of an intake setting, as written, or null for a path. */
function schemeOf(intake: string): string | null {
  return /^([a-z][a-z0-9+.-]*):\/\//i.exec(intake)?.[1] ?? null;
}

/** The kind of intake a setting names, by its URL scheme; a scheme no kind answers is refused. */
export function kindOf(intake: string): IntakeKind {
  const scheme = schemeOf(intake);
  const kind = INTAKE_KINDS.find((candidate) => candidate.scheme === (scheme?.toLowerCase() ?? null));
  if (kind) return kind;
  const kinds = INTAKE_KINDS.map((candidate) => candidate.example).join(' or ');
  throw new UsageError(`"${scheme}://" is not a supported intake: use ${kinds}`);
}

/**
 * The intake named by the settings: a local folder or an sftp:// URL, behind one interface.
 * `stop`: a stop request (SIGTERM), which gives up an SFTP request that is stuck then.
 */
export async function openIntake(intakeSettings: IntakeSettings, log: Logger, stop?: AbortSignal): Promise<Intake> {
  const folders = intakeFolders(intakeSettings);
  return kindOf(intakeSettings.intake!).open(intakeSettings, folders, log, stop);
}

/**
 * What opening the intake needs that is known without a connection, so that every partner's is
 * checked before the first partner runs: a local intake folder that is there (and no final
 * folder an alias of it); for an sftp:// intake, how to trust the server (known_hosts readable,
 * or a pinned fingerprint well formed) and how to log in (checkCredentials). What only the
 * server can say (its host key, the login, its folders) is found when the partner's run opens it.
 */
export async function checkIntakeAccess(intakeSettings: IntakeSettings): Promise<void> {
  const folders = intakeFolders(intakeSettings);
  await kindOf(intakeSettings.intake!).checkAccess(intakeSettings, folders);
}

/** How to reach and trust the server of an sftp:// setting, and how long to wait for it. */
function sftpAccess(
  s: IntakeSettings,
  loc: SftpLocation,
  stop?: AbortSignal,
): { creds: SftpCredentials; hostKeys: HostKeyPolicy; limits: SftpLimits } {
  const hostKeys = s.sftp.hostKeyFingerprint
    ? HostKeyPolicy.pinned(s.sftp.hostKeyFingerprint, loc.host, loc.port)
    : HostKeyPolicy.fromKnownHosts(s.sftp.knownHosts, loc.host, loc.port);
  const { keyPath, keyPassphrase, password, agentSocket } = s.sftp;
  const limits = { timeoutMs: s.sftp.timeoutSeconds * 1000, minBytesPerSecond: s.sftp.minBytesPerSecond, stop };
  return { creds: { keyPath, keyPassphrase, password, agentSocket }, hostKeys, limits };
}

async function openSftp(s: IntakeSettings, loc: SftpLocation, stop: AbortSignal | undefined, folders: SftpFolders, log: Logger) {
  // loaded on demand: ssh2 takes longer to load than a whole idle run may take
  const { SftpIntake } = await import('./sftpIntake.js');
  const { creds, hostKeys, limits } = sftpAccess(s, loc, stop);
  return SftpIntake.open(loc, folders, creds, hostKeys, limits, log);
}

/** The archive folder, to read: for `audit`, `adopt` and reprocessing; null when a local archive does not exist yet. */
export async function openArchive(intakeSettings: IntakeSettings, log: Logger): Promise<FolderReader | null> {
  if (!intakeSettings.intake && !intakeSettings.archive) throw new UsageError('audit needs --intake or --archive to find the archive');
  return openFinalFolder(intakeSettings, 'archive', log);
}

/**
 * A final folder, to read: archive/ (openArchive), and duplicates/ and rejected/ for `audit`.
 * Null when there is none yet: a local folder that does not exist, and duplicates/ or rejected/
 * missing on the server too (a run makes them with its first move there; the archive of an
 * sftp:// intake is refused when missing, as ever). Null also when nothing says where it is
 * (no intake, and no setting of its own).
 */
export async function openFinalFolder(
  intakeSettings: IntakeSettings,
  destination: Destination,
  log: Logger,
  // `doctor` asks whether a run could start: a run makes even a missing archive with its first move there
  opts: { missingAsNull?: boolean } = {},
): Promise<FolderReader | null> {
  const setting = intakeSettings[destination];
  if (!intakeSettings.intake && !setting) return null;
  const required = destination === 'archive' && !opts.missingAsNull;
  // a final folder set on its own, without an intake, is a local one
  const kind = intakeSettings.intake ? kindOf(intakeSettings.intake) : localFolderKind;
  return kind.openFolder(intakeSettings, destination, setting, log, required);
}

/**
 * The intake folder, to list and never move from: `audit --transfer-log` looks there for the
 * uploads the ledger left waiting. Null when a local intake does not exist.
 */
export async function openIntakeReader(intakeSettings: IntakeSettings, log: Logger): Promise<FolderReader | null> {
  intakeFolders(intakeSettings);
  return kindOf(intakeSettings.intake!).openFolder(intakeSettings, 'intake', undefined, log, true);
}
