import { dirname, join, resolve } from 'node:path';
import type { Logger } from '../logEvents.js';
import type { Destination } from '../destination.js';
import type { FolderReader, Intake } from './intake.js';

/**
 * What opening an intake takes from the settings: where it is, its final folders, and each
 * intake kind's own settings (the SFTP kind's host key, credentials and limits).
 */
export interface IntakeSettings {
  intake: string | undefined;
  archive: string | undefined;
  duplicates: string | undefined;
  rejected: string | undefined;
  /** each registered kind's own settings, by the kind's name (`sftp`): what `IntakeKind.settings` made of its option keys */
  kindSettings: KindSettings;
}

/** Each intake kind's own settings, by the kind's name; a kind reads only its own entry. */
export type KindSettings = Readonly<Record<string, unknown>>;

/** The intake and its final folders: local paths, or paths on the server of a remote kind's intake. */
export interface IntakeFolders {
  /** the server the folders are on, as its kind describes it; null for local folders */
  server: IntakeServer | null;
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/**
 * The server a remote intake's folders are on, as its kind describes it to the commands and
 * reports (doctor, audit --transfer-log, report evidence), which know no kind.
 */
export interface IntakeServer {
  /** the login the intake is read as: a transfer log's uploads are matched by it */
  user: string;
  host: string;
  port: number;
  /** what goes before a server path in the ledger's record of a move there (`sftp://host:port`) */
  locationPrefix: string;
  /** the server for a person, before a path on it: `the SFTP server sftp://user@host:22` */
  described: string;
  /** what `doctor` says once it reached the server and logged in */
  reachedNote: string;
  /** a shell line a person runs to copy a folder of the server to a local folder (not there yet), each word quoted by `quote` */
  copyCommand(folder: string, local: string, quote: (word: string) => string): string;
}

/** What one look at where folders are (folderPlaces, for every partner) has found so far: a path's real path, and whether it is there. */
export type FolderLooks = Map<string, { real: string; there: boolean }>;

/** One folder a partner's settings name: its role, as written out, and where it is (see folderPlaces). */
export interface FolderPlace {
  role: 'intake' | Destination;
  folder: string;
  /** equal for two settings that name one folder */
  place: string;
}

/**
 * One setting an intake kind owns, declared beside its code: config/optionTable.ts gathers every
 * kind's `options` into the option table (help, settings, `config`, the JSON Schema and
 * docs/OPTIONS.md follow), for every command that reaches an intake. The fields mean what they
 * mean in config/optionSpec.ts's OptionSpec; a kind's setting is text or a number.
 */
export type KindOption = KindOptionFields &
  ({ kind: 'string'; default?: string } | { kind: 'duration' | 'bytes' | 'count'; default?: number });

interface KindOptionFields {
  /** `--sftp-key`; null for a setting that is never a flag (a password) */
  flag: string | null;
  /** the value's name in help: `<path>` */
  value?: string;
  description: string;
  /** the environment variable, or null when there is none */
  env: string | null;
  /** `own`: what makes a partner itself (a pinned host key); unset: any partner may override it */
  scope?: 'own' | 'run';
  /** the default as a person reads it, where it is not the typed `default` written out (`~/.ssh/known_hosts`) */
  shownDefault?: string;
  /** numbers: the least and greatest taken, and why the least */
  range?: { min?: number; max?: number; why?: string };
  /** a path in the config file, taken relative to the file */
  path?: boolean;
  /** OPTIONS.md only: what the one-line help cannot say */
  details?: string;
}

/** A kind's settings by their key in the config file (`sftpKey`): each key is the kind's alone. */
export type KindOptions = Readonly<Record<string, KindOption>>;

/**
 * How a kind reads the settings it owns: config/ parses each by its kind in the option table
 * and refuses a key the kind does not own (`options`).
 */
export interface OwnSettingReader {
  /** a `string` setting's value; undefined when nothing set it */
  text(key: string): string | undefined;
  /** a `duration` (seconds), `bytes` or `count` setting's value; undefined when nothing set it */
  number(key: string): number | undefined;
  /** an environment variable that is no setting of the option table (SSH_AUTH_SOCK), as it is */
  env(name: string): string | undefined;
}

/**
 * One kind of intake, keyed by the scheme of its URL (a local folder has none). Opening,
 * checking and reading an intake go through its kind; a kind's `Intake` keeps the move
 * contract of intake.ts. `Own` is the kind's own settings (`kindSettings[name]`), read from
 * its `Options`. Adding a kind: one folder implementing this, one line in the registry
 * (openIntake.ts); see docs/ARCHITECTURE.md.
 */
export interface IntakeKind<Own = unknown, Options extends KindOptions = KindOptions> {
  /** its name: the key of its settings in `kindSettings`, and the `intakeKind` of its keys in the option table */
  name: string;
  /** the URL scheme it answers, lower-case (`sftp`), or null: a local folder path */
  scheme: string | null;
  /** what an intake setting of this kind looks like, for messages */
  example: string;
  /**
   * For a kind whose folders are on a server: a location the ledger recorded for a move there
   * (`sftp://host:port/path`) as the path on the server, and written without the login a folder's
   * description names (a recorded location names none), so reports match the two. Null: not this
   * kind's location. A local kind's locations are paths already.
   */
  recordedLocation?(location: string): { path: string; withoutLogin: string } | null;
  /** the settings it owns, declared here and gathered into the option table (marked `intakeKind: name` there) */
  options: Options;
  /** its own settings, read from the keys it owns; every kind's are read (and refused when wrong) whatever the intake */
  settings(read: OwnSettingReader): Own;
  /** what `config` shows for an owned key nothing set, where the default depends on the machine (~/.ssh/known_hosts) */
  shownDefaults(own: Own): Readonly<Record<string, string>>;
  /** refuses a malformed intake setting, naming what is wrong */
  parse(intake: string): void;
  /** the intake and its final folders (before the check that none is the intake itself) */
  folders(settings: IntakeSettings): IntakeFolders;
  /**
   * where one of them really is: equal for two settings that name one folder. `seen`: the places
   * already found in this look (a folder's, its parents'), which a kind may keep what it resolved
   * in, so that many partners' folders under one parent cost a look each, not their whole path's
   */
  place(folders: IntakeFolders, role: FolderPlace['role'], seen: FolderLooks): FolderPlace;
  /** the intake to run on, its final folders refused when one is an alias of the intake */
  open(own: Own, folders: IntakeFolders, log: Logger, stop?: AbortSignal): Promise<Intake>;
  /** what opening it needs that is known without a connection (checkIntakeAccess) */
  checkAccess(own: Own, folders: IntakeFolders): Promise<void>;
  /**
   * A folder to read: the intake, or a final folder (at `setting`, or beside the intake). Null
   * for one that is not there, unless `required` (then a missing folder is an error).
   */
  openFolder(
    settings: IntakeSettings,
    own: Own,
    role: FolderPlace['role'],
    setting: string | undefined,
    log: Logger,
    required: boolean,
  ): Promise<FolderReader | null>;
}

/** archive/, duplicates/ and rejected/ default to siblings of the intake folder. */
export function siblingFolder(intake: string, name: Destination): string {
  return join(dirname(resolve(intake)), name);
}
