import type { Logger } from '../logEvents.js';
import { UsageError } from '../errors.js';
import type { Destination } from '../destination.js';
import type { FolderReader, Intake } from './intake.js';
import type { FolderLooks, FolderPlace, IntakeFolders, IntakeKind, IntakeSettings } from './intakeKind.js';
import { localFolderKind } from './local/kind.js';
import { sftpKind } from './sftp/kind.js';

export { siblingFolder, type FolderPlace, type IntakeFolders, type IntakeSettings, type KindSettings } from './intakeKind.js';

/**
 * Every intake kind: a local folder, and one per URL scheme. A new kind (S3, FTPS) is one file
 * implementing IntakeKind and one line here; docs/ARCHITECTURE.md says what it must keep.
 */
export const INTAKE_KINDS = [localFolderKind, sftpKind] as const satisfies readonly IntakeKind[];

/** A location the ledger recorded for a move (a local path, or a place on a kind's server) as a path in its folder. */
export function locationPath(location: string): string {
  return recordedLocation(location)?.path ?? location;
}

/** A recorded location or a folder's description, in the terms both use: a server's place without its login. */
export function placeWithoutLogin(location: string): string {
  return recordedLocation(location)?.withoutLogin ?? location;
}

function recordedLocation(location: string): { path: string; withoutLogin: string } | null {
  for (const kind of INTAKE_KINDS) {
    const recorded = kind.recordedLocation?.(location);
    if (recorded) return recorded;
  }
  return null;
}

/** A final folder that is the intake itself would make a "move" a no-op, or worse (its aliases: refuseIntakeAliases). */
function distinctFromIntake<T extends { intake: string; archive: string; duplicates: string; rejected: string }>(f: T): T {
  for (const name of ['archive', 'duplicates', 'rejected'] as const) {
    if (f[name] === f.intake) throw new UsageError(`--${name} must not be the intake folder itself (${f.intake})`);
  }
  return f;
}

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

/** The kind's own settings, as `IntakeKind.settings` made them. */
const ownOf = (kind: IntakeKind, intakeSettings: IntakeSettings): unknown => intakeSettings.kindSettings[kind.name];

/** Refuses a missing or malformed intake setting before anything is connected. */
export function checkIntakeSetting(intakeSettings: IntakeSettings): void {
  checkedKind(intakeSettings);
}

/** The kind of a well-formed intake setting (checkIntakeSetting). */
function checkedKind(intakeSettings: IntakeSettings): IntakeKind {
  if (!intakeSettings.intake) throw new UsageError('no intake: set --intake or SETTLE_INTAKE');
  const kind = kindOf(intakeSettings.intake);
  kind.parse(intakeSettings.intake);
  return kind;
}

/**
 * Where the settings put the intake and its final folders, checked: archive/, duplicates/ and
 * rejected/ default to siblings of the intake (on the server, for an sftp:// intake, where they
 * must be absolute paths).
 */
export function intakeFolders(intakeSettings: IntakeSettings): IntakeFolders {
  return foldersOf(checkedKind(intakeSettings), intakeSettings);
}

const foldersOf = (kind: IntakeKind, intakeSettings: IntakeSettings): IntakeFolders => distinctFromIntake(kind.folders(intakeSettings));

/**
 * The intake and its final folders, each with where it really is: a local folder with its links
 * resolved (the part that does not exist yet appended to the real path of the part that does);
 * on an SFTP server, the login, host, port and normalized path (a login of its own may see
 * folders of its own, a chroot, so only the same login on the same server is the same folder).
 */
export function folderPlaces(intakeSettings: IntakeSettings, seen: FolderLooks = new Map()): FolderPlace[] {
  const kind = checkedKind(intakeSettings);
  const folders = foldersOf(kind, intakeSettings);
  return (['intake', 'archive', 'duplicates', 'rejected'] as const).map((role) => kind.place(folders, role, seen));
}

/**
 * The intake named by the settings: a local folder or an sftp:// URL, behind one interface.
 * `stop`: a stop request (SIGTERM), which gives up an SFTP request that is stuck then.
 */
export async function openIntake(intakeSettings: IntakeSettings, log: Logger, stop?: AbortSignal): Promise<Intake> {
  const folders = intakeFolders(intakeSettings);
  const kind = kindOf(intakeSettings.intake!);
  return kind.open(ownOf(kind, intakeSettings), folders, log, stop);
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
  const kind = kindOf(intakeSettings.intake!);
  await kind.checkAccess(ownOf(kind, intakeSettings), folders);
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
  const kind: IntakeKind = intakeSettings.intake ? kindOf(intakeSettings.intake) : localFolderKind;
  return kind.openFolder(intakeSettings, ownOf(kind, intakeSettings), destination, setting, log, required);
}

/**
 * The intake folder, to list and never move from: `audit --transfer-log` looks there for the
 * uploads the ledger left waiting. Null when a local intake does not exist.
 */
export async function openIntakeReader(intakeSettings: IntakeSettings, log: Logger): Promise<FolderReader | null> {
  intakeFolders(intakeSettings);
  const kind = kindOf(intakeSettings.intake!);
  return kind.openFolder(intakeSettings, ownOf(kind, intakeSettings), 'intake', undefined, log, true);
}
