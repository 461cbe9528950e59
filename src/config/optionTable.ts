import { INTAKE_KINDS } from '../intake/openIntake.js';
import type { IntakeKind, KindOption } from '../intake/intakeKind.js';
import { DATE_TOKENS } from '../intake/names.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../layout/model/layout.js';
import { PRESETS } from '../layout/model/presets.js';
import { caseless, type TextFormat } from './valueRules.js';

import { LOG_LEVELS, RUN_MODES, shownDefault, type CommandName, type OptionSpec } from './optionSpec.js';

export { LOG_LEVELS, RUN_MODES, type CommandName, type OptionKind, type OptionScope, type OptionSpec } from './optionSpec.js';

const LAYOUT_PRESETS = [...PRESETS.keys()];
/** the intakes a URL names, one per kind of the registry (intake/openIntake.ts), as each kind's `example` says */
const URL_INTAKES = INTAKE_KINDS.flatMap((kind) => (kind.scheme === null ? [] : [kind.example])).join(', or ');
/** the URL schemes of the kinds whose folders are on a server, as a person writes them: `sftp://` */
const REMOTE_SCHEMES = INTAKE_KINDS.flatMap((kind) => (kind.scheme === null ? [] : [`${kind.scheme}://`])).join(' or ');

/** An intake is a local folder (no scheme) or a URL whose scheme an intake kind answers (intake/openIntake.ts's kindOf): `ftp://x` never becomes a folder. */
const INTAKE_FORMAT: TextFormat = {
  pattern: new RegExp(
    `^(?:(?![A-Za-z][A-Za-z0-9+.-]*://)|(?:${INTAKE_KINDS.flatMap((kind) => (kind.scheme === null ? [] : [caseless(kind.scheme)])).join('|')})://)`,
  ),
  says: `a local folder or ${URL_INTAKES}`,
};

/** A file name pattern with at most one date token (intake/names.ts): a name carries one day. */
const anyDateToken = `(?:${DATE_TOKENS.map((t) => t.token.replace(/[{}]/g, '\\$&')).join('|')})`;
const PATTERN_FORMAT: TextFormat = {
  pattern: new RegExp(`^(?![\\s\\S]*${anyDateToken}[\\s\\S]*${anyDateToken})`),
  says: `a file name pattern with at most one date token (${DATE_TOKENS.map((t) => t.token).join(' or ')}): a name carries one day`,
};

const CONFIGURED: readonly CommandName[] = [
  'migrate',
  'run',
  'watch',
  'report',
  'evidence',
  'history',
  'audit',
  'adopt',
  'status',
  'waive',
  'config',
  'doctor',
];
/** the commands that reach the finance database (report, history and status read the ledger only; `report evidence` holds an audit) */
const FINANCE: readonly CommandName[] = ['migrate', 'run', 'watch', 'audit', 'evidence', 'adopt', 'config', 'doctor'];
/** the commands that write a log (the others answer on stdout and stderr) */
const LOGGING: readonly CommandName[] = ['run', 'watch', 'audit', 'evidence', 'adopt', 'config'];
const FOLDERS: readonly CommandName[] = ['run', 'watch', 'audit', 'evidence', 'config', 'doctor'];
/** the commands that reach an intake: they take every intake kind's own settings */
const INTAKE_COMMANDS: readonly CommandName[] = ['run', 'watch', 'audit', 'evidence', 'adopt', 'config', 'doctor'];
/** the commands that read the SFTP server's own log of uploads */
const TRANSFER_LOG: readonly CommandName[] = ['run', 'watch', 'audit', 'evidence', 'config'];
/** how far the log's clock and the ledger's may disagree: a matter of the audit's matching, not of a run's gate */
const TRANSFER_LOG_MATCHING: readonly CommandName[] = ['audit', 'evidence', 'config'];
/** gzip, zip and OpenPGP deliveries are decoded by a run (and its reprocessing), by check and by adopt */
const DECODING: readonly CommandName[] = ['run', 'watch', 'check', 'adopt', 'config'];

/**
 * The settings before the intake kinds' own, in help order: where the files are and go, the
 * ledger, the finance database, the log, how deliveries are unwrapped.
 */
const PLACE_SETTINGS = {
  intake: {
    scope: 'own',
    flag: '--intake',
    value: '<dir|url>',
    description: `intake folder, or ${URL_INTAKES}`,
    env: 'SETTLE_INTAKE',
    kind: 'string',
    format: INTAKE_FORMAT,
    path: true,
    commands: [...FOLDERS, 'adopt'],
    per: { adopt: { description: `an ${REMOTE_SCHEMES} intake, to reach a remote archive` } },
  },
  archive: {
    scope: 'own',
    flag: '--archive',
    value: '<dir>',
    description: 'where loaded files go',
    env: 'SETTLE_ARCHIVE',
    kind: 'string',
    shownDefault: '"archive" beside the intake',
    path: true,
    commands: [...FOLDERS, 'adopt'],
    per: { adopt: { description: `the archive to adopt (a path on the server when --intake is ${REMOTE_SCHEMES})`, required: true } },
  },
  duplicates: {
    scope: 'own',
    flag: '--duplicates',
    value: '<dir>',
    description: 'where skipped duplicates go',
    env: 'SETTLE_DUPLICATES',
    kind: 'string',
    shownDefault: '"duplicates" beside the intake',
    path: true,
    commands: FOLDERS,
  },
  rejected: {
    scope: 'own',
    flag: '--rejected',
    value: '<dir>',
    description: 'where rejected files go',
    env: 'SETTLE_REJECTED',
    kind: 'string',
    shownDefault: '"rejected" beside the intake',
    path: true,
    commands: FOLDERS,
  },
  pattern: {
    scope: 'own',
    flag: '--pattern',
    value: '<glob>',
    description: 'file names to take',
    env: 'SETTLE_PATTERN',
    kind: 'string',
    format: PATTERN_FORMAT,
    default: 'settle_*.csv',
    commands: [...FOLDERS, 'adopt'],
    per: { adopt: { description: 'which archived files to consider, as for run' } },
    details:
      'every other name in the intake is counted `ignored` and named in the log (a symlink, FIFO or other non-regular entry, a name that is not UTF-8 or holds a backslash too: all left untouched); an upload under a temporary name of a file the pattern takes (`*.part`, `*.filepart`, `*.tmp`, `*.partial`, a dot-file) is `not_ready`',
  },
  ledger: {
    scope: 'shared',
    flag: '--ledger',
    value: '<path|url>',
    description: 'ledger: a SQLite file, or postgres://… shared by several hosts',
    env: 'SETTLE_LEDGER',
    kind: 'string',
    default: './settle-ledger.sqlite',
    path: true,
    commands: CONFIGURED,
    details: 'tables in schema `settle_ledger`; `migrate` creates them',
  },
  ledgerGroup: {
    scope: 'shared',
    flag: '--ledger-group',
    value: '<group>',
    description: "migrate: let this group read the SQLite ledger (a monitoring user's)",
    env: 'SETTLE_LEDGER_GROUP',
    kind: 'string',
    commands: ['migrate'],
    details:
      'the ledger and its -wal/-shm mode 0640 of the group, its folder g+rx and setgid (a folder of its own: /srv/settle/ledger); then `status` and the reports work for a member',
  },
  ledgerTimeout: {
    scope: 'shared',
    flag: '--ledger-timeout',
    value: '<duration>',
    description: 'longest wait on the ledger: connecting, a lock, a statement',
    env: 'SETTLE_LEDGER_TIMEOUT',
    kind: 'duration',
    default: 15,
    commands: CONFIGURED,
    details:
      "on SQLite a wait for another process's write, on PostgreSQL each commit too; past it exit 1 naming it, the file left in the intake for the next run; a server that answers nothing has its connection closed, and after SIGTERM such a wait ends within seconds; raise it for a `migrate` of a very large ledger",
  },
  maxRecordBytes: {
    flag: '--max-record-bytes',
    value: '<bytes>',
    description: 'a file with a longer record is rejected',
    env: 'SETTLE_MAX_RECORD_BYTES',
    kind: 'bytes',
    range: { min: 1024, max: 64 * 1024 * 1024 },
    default: DEFAULT_MAX_RECORD_BYTES,
    commands: ['run', 'watch', 'adopt', 'check', 'config'],
    details: "a record is a line, or quoted lines; bounds the reader's memory (1024 to 67108864)",
  },
  databaseUrl: {
    scope: 'shared',
    flag: '--database-url',
    value: '<url>',
    description: 'finance PostgreSQL URL',
    env: 'DATABASE_URL',
    kind: 'string',
    shownDefault: 'the PG* variables',
    commands: [...FINANCE, 'check'],
    details:
      '`postgres://USER@HOST[:PORT]/DATABASE`, see [Connecting](OPERATING.md#connecting-to-postgresql); its password (`user:…@`, `password=`, `sslpassword=`) is never printed, logged or stored',
  },
  dbTimeout: {
    scope: 'shared',
    flag: '--db-timeout',
    value: '<duration>',
    description: 'longest wait on the finance database: connecting, a lock, a statement',
    env: 'SETTLE_DB_TIMEOUT',
    kind: 'duration',
    range: { min: 1, why: 'a connection must have time to open' },
    default: 60,
    commands: [...FINANCE, 'check'],
    details:
      'past it the file fails (claim released, file left in intake, exit 1); a COPY may stream for longer: it is cancelled only when the server takes no data for this long; raise it for a `migrate`, `audit` or reprocessing on very large tables',
  },
  schema: {
    scope: 'shared',
    flag: '--schema',
    value: '<name>',
    description: 'finance schema',
    env: 'SETTLE_SCHEMA',
    kind: 'string',
    format: { pattern: /^[a-z_][a-z0-9_]*$/, says: 'a lower-case SQL identifier (letters, digits and _), such as settle' },
    default: 'settle',
    commands: [...FINANCE, 'check'],
  },
  logFile: {
    scope: 'shared',
    flag: '--log-file',
    value: '<path>',
    description: 'append JSON logs here instead of stderr',
    env: 'SETTLE_LOG_FILE',
    kind: 'string',
    path: true,
    commands: LOGGING,
    details:
      'one line per file decision; on a terminal stderr shows them as short text lines, with a progress line while a long file loads',
  },
  logLevel: {
    scope: 'shared',
    flag: '--log-level',
    value: '<level>',
    description: 'log level',
    env: 'SETTLE_LOG_LEVEL',
    kind: 'string',
    default: 'info',
    choices: LOG_LEVELS,
    commands: LOGGING,
  },
  pgpKey: {
    flag: '--pgp-key',
    value: '<path>',
    description: 'armoured private key that decrypts OpenPGP deliveries; its passphrase only from SETTLE_PGP_PASSPHRASE or the config file',
    env: 'SETTLE_PGP_KEY',
    kind: 'string',
    path: true,
    commands: DECODING,
    details: 'see [Compressed, zipped and encrypted deliveries](INTAKES.md#compressed-zipped-and-encrypted-deliveries)',
  },
  pgpPassphrase: {
    flag: null,
    description: "the --pgp-key's passphrase: never a flag, hidden in config output and logs",
    env: 'SETTLE_PGP_PASSPHRASE',
    kind: 'string',
    commands: DECODING,
  },
  pgpVerifyKey: {
    scope: 'own',
    flag: '--pgp-verify-key',
    value: '<path>',
    description: "the partner's public key: every delivery must carry its valid signature",
    env: 'SETTLE_PGP_VERIFY_KEY',
    kind: 'string',
    path: true,
    commands: DECODING,
    details: 'unsigned, signed by another key (named), tampered: rejected',
  },
  maxInflateRatio: {
    flag: '--max-inflate-ratio',
    value: '<n>',
    description: 'a compressed delivery that inflates more than n:1 is rejected',
    env: 'SETTLE_MAX_INFLATE_RATIO',
    kind: 'count',
    range: { min: 2, max: 100_000 },
    default: 100,
    commands: DECODING,
    details: 'judged as the file streams, after its first MiB: a decompression bomb is stopped after a few MB (2 to 100000)',
  },
  maxDecodedBytes: {
    flag: '--max-decoded-bytes',
    value: '<bytes>',
    description: 'a delivery whose content is larger is rejected',
    env: 'SETTLE_MAX_DECODED_BYTES',
    kind: 'bytes',
    range: { min: 1024, max: Number.MAX_SAFE_INTEGER },
    default: 16 * 1024 ** 3,
    commands: DECODING,
  },
} as const satisfies Record<string, OptionSpec>;

/**
 * The settings after the intake kinds' own (which stand between these and the ones above in
 * help): how a run waits, what it records and where, what it reads beside the intake.
 */
const RUN_SETTINGS = {
  stableFor: {
    flag: '--stable-for',
    value: '<duration>',
    description: 'a file is complete when unchanged this long; 0 turns the wait off',
    env: 'SETTLE_STABLE_FOR',
    kind: 'duration',
    default: 30,
    commands: ['run', 'watch'],
  },
  maxWait: {
    flag: '--max-wait',
    value: '<duration>',
    description: 'how long a run waits for growing files',
    env: 'SETTLE_MAX_WAIT',
    kind: 'duration',
    default: 300,
    commands: ['run', 'watch'],
    details: 'still growing → `not_ready`, next run',
  },
  claimLease: {
    flag: '--claim-lease',
    value: '<duration>',
    description: 'how long a claim holds before another host may take it over',
    env: 'SETTLE_CLAIM_LEASE',
    kind: 'duration',
    range: { min: 60, why: 'a load must fit in it' },
    default: 7200,
    commands: ['run', 'watch', 'status', 'audit'],
    per: {
      status: { description: "a claim's or partner's lease further than this from the ledger's now holds nothing" },
      audit: { description: "a claim's lease further than this from the ledger's now holds nothing" },
    },
    details:
      "claims and partner leases end the ledger's now plus this (on PostgreSQL its server's clock, never a host's); a lease whose end lies further ahead holds nothing, whatever its row says: give every host of one ledger the same value",
  },
  staging: {
    flag: '--staging',
    value: '<dir>',
    description: 'private folder for staging copies of the files being read',
    env: 'SETTLE_STAGING',
    kind: 'string',
    shownDefault: 'the system temp folder',
    path: true,
    commands: ['run', 'watch', 'adopt'],
    details: 'one read: copy and hash together',
  },
  mode: {
    flag: '--mode',
    value: '<mode>',
    description: 'recorded in the ledger',
    env: 'SETTLE_MODE',
    kind: 'string',
    shownDefault: 'manual on a terminal, else scheduled',
    choices: RUN_MODES,
    commands: ['run', 'watch'],
  },
  ignore: {
    flag: '--ignore',
    value: '<glob...>',
    description: 'known neighbours in the intake (a README) that are neither taken nor counted; commas in the environment',
    env: 'SETTLE_IGNORE',
    kind: 'globs',
    commands: ['run', 'watch'],
  },
  maxWaitingRuns: {
    flag: '--max-waiting-runs',
    value: '<n>',
    description: 'a file still waiting in the intake after this many runs makes the run exit 1',
    env: 'SETTLE_MAX_WAITING_RUNS',
    kind: 'count',
    range: { min: 0, max: 999_999 },
    default: 2,
    commands: ['run', 'watch', 'status'],
    per: { status: { description: 'WARNING when a file has waited in the intake more runs than this' } },
    details:
      'held, not ready, failed, or ignored (a name the pattern does not take and --ignore does not name), in more runs in a row than this; named on the summary line; a file whose upload stopped mid-line is rejected as incomplete once it has stayed exactly so for this many runs',
  },
  readyMarker: {
    flag: '--ready-marker',
    value: '<suffix>',
    description: "take NAME only once the partner's NAME+suffix sidecar exists (.done); it moves with NAME",
    env: 'SETTLE_READY_MARKER',
    kind: 'string',
    format: {
      pattern: /^\.[A-Za-z0-9._-]{1,32}$/,
      says: 'a file name suffix such as .done or .ok (a dot, then up to 32 letters, digits, ., _ or -)',
    },
    commands: ['run', 'watch'],
    details:
      "without it (or a layout's trailer) an upload that stalls longer than `--stable-for` and then resumes cannot be told from a complete file: the next run reports such a file, changed where it landed, by name (exit 1)",
  },
  metricsFile: {
    scope: 'shared',
    flag: '--metrics-file',
    value: '<path>',
    description: 'write a Prometheus text file here after every run',
    env: 'SETTLE_METRICS_FILE',
    kind: 'string',
    path: true,
    commands: ['run', 'watch'],
    details:
      "also after one that could not start; for node_exporter's textfile collector (below); one the run could not write (its folder missing or not the user's to write in) is refused at the start (exit 2)",
  },
  serviceUser: {
    scope: 'shared',
    flag: '--service-user',
    value: '<user>',
    description: 'the user the runs run as: doctor started as root checks with its rights, groups and ~/.pgpass',
    env: 'SETTLE_SERVICE_USER',
    kind: 'string',
    commands: ['doctor', 'config'],
    details: 'doctor started as root without it refuses (exit 2): root passes every check a run as the service user fails',
  },
  summaryFile: {
    scope: 'shared',
    flag: '--summary-file',
    value: '<path>',
    description: 'append the summary lines here too, each after the time it was written',
    env: 'SETTLE_SUMMARY_FILE',
    kind: 'string',
    path: true,
    commands: ['run', 'watch'],
    details:
      'ISO 8601 UTC (`2026-12-02T02:00:13.512Z run … done: …`): the summary.log of ops/, kept by ops/logrotate.d; one the run could not append to or make is refused at the start (exit 2)',
  },
  maxAge: {
    flag: '--max-age',
    value: '<duration>',
    description: 'CRITICAL when no run succeeded within this',
    env: 'SETTLE_MAX_AGE',
    kind: 'duration',
    default: 26 * 3600,
    commands: ['status', 'run', 'watch'],
    per: {
      run: { description: "a partner skipped for another run's lease with no success within this is starved (exit 1)" },
      watch: { description: "a partner skipped for another run's lease with no success within this is starved" },
    },
  },
  layout: {
    scope: 'own',
    flag: '--layout',
    value: '<preset>',
    description: `what the files look like: ${LAYOUT_PRESETS.join(', ')}, or an object in the config file`,
    env: 'SETTLE_LAYOUT',
    kind: 'layout',
    shownDefault: 'the "default" preset',
    commands: [...FINANCE, 'check'],
    per: { check: { description: `a shipped layout: ${LAYOUT_PRESETS.join(', ')}; or the config file's` } },
    details: 'see [Layouts](LAYOUTS.md#layouts)',
  },
  transferLog: {
    flag: '--transfer-log',
    value: '<file...>',
    description:
      "the SFTP server's own log of uploads (OpenSSH sftp-server syslog lines, xferlog, or CSV time,path,size): each upload into an intake is matched to what the ledger did with it",
    env: 'SETTLE_TRANSFER_LOG',
    kind: 'paths',
    path: true,
    commands: TRANSFER_LOG,
    per: {
      run: {
        description:
          "the SFTP server's own log of uploads (OpenSSH sftp-server syslog lines): a file it shows opened for writing and not yet closed is not ready",
      },
    },
    details:
      'repeatable; rotated and gzipped files too (`/var/log/proftpd/xferlog*`: a wildcard in a file name takes every file it matches); commas in the environment; an upload without a ledger outcome is named (exit 1); see [The transfer log](AUDIT.md#the-transfer-log-every-upload-accounted-for)',
  },
  transferLogRoot: {
    flag: '--transfer-log-root',
    value: '<dir>',
    description: "the folder the transfer log's paths start from, in the intake's own terms: a chrooted partner's chroot",
    env: 'SETTLE_TRANSFER_LOG_ROOT',
    kind: 'string',
    format: { pattern: /^(?![\s\S]*\/\.\.(?:\/|$))\//, says: 'an absolute folder path without "..", such as /srv/sftp/adyen' },
    default: '/',
    commands: TRANSFER_LOG,
    details:
      "OpenSSH logs a chrooted session's paths inside its chroot (`ChrootDirectory /srv/sftp/%u`: `/in/x.csv` for `/srv/sftp/adyen/in/x.csv`, root `/srv/sftp/adyen`); a path the client sent without a leading `/` is taken in the intake of the session's partner, not from here (see `--transfer-log-user`)",
  },
  transferLogUser: {
    scope: 'own',
    flag: '--transfer-log-user',
    value: '<login>',
    description:
      "the login the partner uploads as, as the transfer log names it (`session opened for local user NAME`): that login's sessions are this partner's",
    env: 'SETTLE_TRANSFER_LOG_USER',
    kind: 'string',
    shownDefault: "an SFTP intake's own login (`sftp://USER@…`), else none",
    commands: TRANSFER_LOG,
    details:
      "tells apart partners whose intakes are one path of the log (chroots read as local folders, each with its `--transfer-log-root`), and places a path sent without a leading `/` (a session started in the intake, `internal-sftp -d /in`) in its session's partner's intake; without it such an upload is a discrepancy (`upload_ambiguous`), never credited to the wrong partner. With a single partner reading the log, every relative path is that partner's",
  },
  transferLogTimeZone: {
    flag: '--transfer-log-time-zone',
    value: '<zone>',
    description: "the zone of the transfer log's times where a line does not say it (syslog's `Dec  1 02:00:01`, xferlog)",
    env: 'SETTLE_TRANSFER_LOG_TIME_ZONE',
    kind: 'string',
    shownDefault: "this host's zone",
    commands: TRANSFER_LOG,
    details:
      'an IANA name (`Europe/Amsterdam`), `UTC` or an offset (`+01:00`); syslog and ProFTPD write local time, vsftpd UTC unless `use_localtime`',
  },
  transferLogClockSlack: {
    flag: '--transfer-log-clock-slack',
    // not `<duration>`: a term that long leaves commander too narrow a column to wrap any option's help at 80 columns
    value: '<time>',
    description:
      "how far the transfer log's clock and the ledger's may disagree: a run's record up to this much earlier than the logged upload may still be of it",
    env: 'SETTLE_TRANSFER_LOG_CLOCK_SLACK',
    kind: 'duration',
    default: 2,
    commands: TRANSFER_LOG_MATCHING,
    details:
      'covers the whole seconds of a traditional syslog line and a small skew between the SFTP server and the host that runs `settle-ingest`; a server whose clock is off by more (a 10 s skew: `15s`) needs more, or its uploads stay unmatched',
  },
  quick: {
    flag: '--quick',
    description:
      "check each loaded file's archived copy, and each skipped duplicate's and rejected file's kept copy, by its size only, without reading it (its SHA-256 is not checked: the output says so)",
    env: 'SETTLE_AUDIT_QUICK',
    kind: 'switch',
    scope: 'shared',
    default: false,
    shownDefault: 'off: every archived and kept copy is read and its SHA-256 compared',
    commands: ['audit', 'config'],
    details:
      'a copy replaced by another file of the same size, or one changed byte, is found only without it; an archived file at no place where the ledger put a loaded file is still read, to tell whether the ledger knows its content; `report evidence` always reads every copy',
  },
  expect: {
    flag: null,
    description: 'the deliveries the partner owes: every, by, timeZone, holidays, files, warnAfter, errorAfter',
    env: null,
    kind: 'expect',
    scope: 'own',
    commands: ['run', 'watch', 'report', 'status', 'waive', 'config'],
    details:
      'an object in the config file, at the top or per partner; `status` and the run warn and then fail when a due day has no delivery; see [Several partners](PARTNERS.md#several-partners)',
  },
} as const satisfies Record<string, OptionSpec>;

/** Every intake kind's own settings (its `options`, intake/<kind>/kind.ts), as one type: the registry's, merged. */
type KindOptions = UnionToIntersection<(typeof INTAKE_KINDS)[number]['options']>;
type UnionToIntersection<U> = (U extends unknown ? (each: U) => void : never) extends (all: infer I) => void ? I : never;

/** A kind's setting as the table holds it: marked with its kind, taken by every command that reaches an intake. */
type KindRow<Option extends KindOption> = Option & { intakeKind: string; commands: readonly CommandName[] };

type OptionRows = typeof PLACE_SETTINGS & { readonly [K in keyof KindOptions]: KindRow<KindOptions[K]> } & typeof RUN_SETTINGS;

/**
 * Every setting: the intake kinds' own (`kinds`: the registry) between the two parts of the
 * table; a key declared twice (by a kind and the table, or by two kinds) is a mistake in the code.
 */
export function optionRows(kinds: readonly IntakeKind[]): Record<string, OptionSpec> {
  const rows: Record<string, OptionSpec> = {};
  for (const kind of kinds) {
    for (const [key, option] of Object.entries(kind.options)) {
      if (key in PLACE_SETTINGS || key in RUN_SETTINGS || key in rows) {
        throw new Error(`intake kind "${kind.name}" declares the setting "${key}", which the option table has already`);
      }
      rows[key] = { ...option, intakeKind: kind.name, commands: INTAKE_COMMANDS };
    }
  }
  return { ...PLACE_SETTINGS, ...rows, ...RUN_SETTINGS };
}

/**
 * Every setting, in help order: its flag, variable, config-file key (the entry's own key),
 * typed default and the commands that take it; the intake kinds' own from the registry.
 * Commander options, the settings resolver, `config`, the JSON Schema and docs/OPTIONS.md
 * are all derived from here.
 */
export const OPTION_TABLE = optionRows(INTAKE_KINDS) as OptionRows;

export type SettingKey = keyof typeof OPTION_TABLE;

export const SETTING_KEYS = Object.keys(OPTION_TABLE) as SettingKey[];

/** The config file itself: a flag and a variable, never a key in the file. */
export const CONFIG_OPTION: OptionSpec = {
  flag: '--config',
  value: '<path>',
  description: 'JSON config file; flags and environment override it',
  env: 'SETTLE_CONFIG',
  kind: 'string',
  commands: [...CONFIGURED, 'check'],
};

/**
 * Which partners of the config file a command takes (repeatable; commas in the variable):
 * never a key in the file, which names the partners themselves under `"partners"`.
 */
export const PARTNER_OPTION: OptionSpec = {
  flag: '--partner',
  value: '<name>',
  repeatable: true,
  description: 'only these partners of the config file (repeatable); default: all',
  env: 'SETTLE_PARTNER',
  kind: 'string',
  commands: [...CONFIGURED, 'check'],
  per: { waive: { description: 'the one partner whose day it is (needed when the config file names its "partners")' } },
  details:
    'a config without `"partners"` is one partner, `default`; a flag or variable for a partner\'s own setting (`--intake`, its folders, `--pattern`, `--layout`, `--host-key-fingerprint`, `--pgp-verify-key`) needs exactly one partner chosen',
};

/** Every option a command takes, `--config` and `--partner` first. */
export function optionsOf(command: CommandName): { key: SettingKey | 'config' | 'partner'; spec: OptionSpec }[] {
  const settings = SETTING_KEYS.map((key): { key: SettingKey; spec: OptionSpec } => ({ key, spec: OPTION_TABLE[key] }));
  return [{ key: 'config' as const, spec: CONFIG_OPTION }, { key: 'partner' as const, spec: PARTNER_OPTION }, ...settings].filter((o) =>
    o.spec.commands.includes(command),
  );
}

/** What help and README say after the description: where else it comes from, and its default. */
export function optionSources(spec: OptionSpec): string {
  const shown = shownDefault(spec);
  const parts = [spec.env ? `env ${spec.env}` : null, shown !== undefined ? `default ${shown}` : null].filter(Boolean);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

/**
 * A command's words as typed (`report runs`, `layout suggest`); `settle-ingest` stands for
 * the program itself, whose flags come before the command.
 */
export type FlagCommand =
  | 'settle-ingest'
  | 'migrate'
  | 'run'
  | 'watch'
  | 'report runs'
  | 'report run'
  | 'report skips'
  | 'report deliveries'
  | 'report evidence'
  | 'history'
  | 'audit'
  | 'adopt'
  | 'status'
  | 'check'
  | 'layout suggest'
  | 'waive'
  | 'doctor'
  | 'config'
  | 'ledger copy'
  | 'ledger backup'
  | 'demo';

/** A flag of one command's own: not a setting (no variable, no config-file key), read by that command alone. */
export interface CommandFlagSpec {
  flag: string;
  /** the value's name in help: `<text>`; `...` for a variadic flag */
  value?: string;
  description: string;
  /**
   * the value taken when the flag is not given, as a person writes it (`60s`): help says it after
   * the description, and the command reads it through the parser of a given value (commandFlagDefault)
   */
  default?: string;
  commands: readonly FlagCommand[];
  /** where a command words it differently, or takes another default */
  per?: Partial<Record<FlagCommand, { description?: string; default?: string }>>;
}

const REASON = 'why (kept in the ledger with the operator)';

/**
 * Every command's own flags, in help order (after its settings). Commander options and
 * docs/OPTIONS.md are derived from here, as from OPTION_TABLE.
 */
export const COMMAND_FLAGS = {
  verbose: {
    flag: '--verbose',
    description: 'with an error, also show what caused it (the cause chain)',
    commands: ['settle-ingest'],
  },
  reprocess: {
    flag: '--reprocess',
    description: 'reload already-loaded files from the archive with this release, replacing their rows',
    commands: ['run'],
  },
  dryRun: {
    flag: '--dry-run',
    description: 'with --reprocess: check and count, commit nothing',
    commands: ['run', 'adopt'],
    per: { adopt: { description: 'report what would be adopted; write nothing to the ledger' } },
  },
  assumeLoaded: {
    flag: '--assume-loaded',
    description: 'also adopt files the finance database does not show loaded, on your word (needs --reason)',
    commands: ['adopt'],
  },
  reason: {
    flag: '--reason',
    value: '<text>',
    description: REASON,
    commands: ['adopt', 'run', 'waive'],
    per: {
      adopt: { description: `with --assume-loaded: ${REASON}` },
      run: { description: `with --reprocess: ${REASON}` },
      waive: { description: `${REASON}; also for --undo` },
    },
  },
  files: {
    flag: '--files',
    value: '<names...>',
    description: 'with --reprocess: the file names to reload',
    commands: ['run'],
  },
  fileList: {
    flag: '--file-list',
    value: '<path>',
    description: 'with --reprocess: a file with one name per line',
    commands: ['run'],
  },
  poll: {
    flag: '--poll',
    value: '<duration>',
    description: 'how often an SFTP intake is listed, and the longest wait between cycles',
    default: '60s',
    commands: ['watch'],
  },
  rescan: {
    flag: '--rescan',
    value: '<duration>',
    description:
      'how often a local intake is listed in full though no change was seen, and a file left waiting (held, not ready, failed) is tried again',
    default: '5m',
    commands: ['watch'],
  },
  listen: {
    flag: '--listen',
    value: '<address:port>',
    description:
      "serve /metrics (the metrics file's text), /healthz (the loop turns) and /readyz (the ledger and the finance database answer) over HTTP on this address only: 127.0.0.1:9475, or 0.0.0.0:9475 in a pod",
    commands: ['watch'],
  },
  day: {
    flag: '--day',
    value: '<day>',
    description: "the partner's due day (YYYY-MM-DD, its own local day)",
    commands: ['waive'],
  },
  undo: {
    flag: '--undo',
    description: 'take the waiver of the day back: it is owed again',
    commands: ['waive'],
  },
  from: {
    flag: '--from',
    value: '<day>',
    description: 'the first day of the period (YYYY-MM-DD, UTC)',
    commands: ['report evidence'],
  },
  to: {
    flag: '--to',
    value: '<day>',
    description: 'the last day of the period, included',
    commands: ['report evidence'],
  },
  out: {
    flag: '--out',
    value: '<dir>',
    description: 'a new or empty folder for the pack',
    commands: ['report evidence'],
  },
  copyFrom: {
    flag: '--from',
    value: '<sqlite-file>',
    description: 'the SQLite ledger to copy (read under its write lock, never changed)',
    commands: ['ledger copy', 'ledger backup'],
    per: { 'ledger backup': { description: 'the SQLite ledger to back up (read only)' } },
  },
  copyTo: {
    flag: '--to',
    value: '<postgres-url>',
    description: 'the new PostgreSQL ledger (schema settle_ledger, created or migrated; refused when it holds any row)',
    commands: ['ledger copy'],
  },
  backupTo: {
    flag: '--to',
    value: '<file>',
    description: 'the new file for the copy (an existing one is never replaced)',
    commands: ['ledger backup'],
  },
  last: {
    flag: '--last',
    value: '<n>',
    description: 'how many runs',
    default: '20',
    commands: ['report runs'],
  },
  weeks: {
    flag: '--weeks',
    value: '<n>',
    description: 'how many weeks back',
    default: '8',
    commands: ['report skips', 'report deliveries'],
    per: { 'report deliveries': { default: '4' } },
  },
  html: {
    flag: '--html',
    value: '<file>',
    description: 'also write it as one self-contained page: a calendar per partner and the weekly counts as charts',
    commands: ['report deliveries'],
  },
  readOnly: {
    flag: '--read-only',
    description: 'check that the ledger opens read-only (a monitoring user) instead of writable',
    commands: ['doctor'],
  },
  printSql: {
    flag: '--print-sql',
    description:
      "print the SQL migrate would run on the finance database (pending migrations, the layouts' tables) and on the ledger (its pending migrations), and change nothing",
    commands: ['migrate'],
  },
  keep: {
    flag: '--keep',
    description: 'keep the demo workspace (folders, ledger, log) to look at afterwards',
    commands: ['demo'],
  },
  json: {
    flag: '--json',
    description: 'one JSON object',
    commands: [
      'migrate',
      'run',
      'report runs',
      'report run',
      'report skips',
      'report deliveries',
      'report evidence',
      'history',
      'audit',
      'adopt',
      'status',
      'check',
      'layout suggest',
      'waive',
      'doctor',
      'config',
      'ledger copy',
      'ledger backup',
    ],
    per: {
      run: { description: 'print the summary as one JSON object with one entry per file (and per partner)' },
      doctor: { description: 'one JSON object: every check with its partner, name, ok and message' },
    },
  },
  jsonSchema: {
    flag: '--json-schema',
    description: "print the config file's JSON Schema (draft 2020-12), for an editor to complete and check it",
    commands: ['config'],
  },
} as const satisfies Record<string, CommandFlagSpec>;

export type CommandFlagKey = keyof typeof COMMAND_FLAGS;

/** A command's own flags, in table order, each with the wording that command gives it, its default said after it. */
export function commandFlagsOf(command: string): { key: CommandFlagKey; flag: string; value?: string; description: string }[] {
  return (Object.keys(COMMAND_FLAGS) as CommandFlagKey[]).flatMap((key) => {
    const spec: CommandFlagSpec = COMMAND_FLAGS[key];
    if (!(spec.commands as readonly string[]).includes(command)) return [];
    const words = spec.per?.[command as FlagCommand]?.description ?? spec.description;
    const fallback = commandFlagDefault(key, command as FlagCommand);
    const description = fallback === undefined ? words : `${words} (default ${fallback})`;
    return [{ key, flag: spec.flag, ...(spec.value ? { value: spec.value } : {}), description }];
  });
}

/** The value a command takes for its own flag when it is not given, as written in COMMAND_FLAGS (the one place it is). */
export function commandFlagDefault(key: CommandFlagKey, command: FlagCommand): string | undefined {
  const spec: CommandFlagSpec = COMMAND_FLAGS[key];
  return spec.per?.[command]?.default ?? spec.default;
}
