import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { homedir, tmpdir } from 'node:os';
import { UsageError } from '../errors.js';
import { globToRegExp } from '../intake/names.js';
import { DEFAULT_LAYOUT, type Layout } from '../layout/layout.js';
import { parseLayout } from '../layout/parseLayout.js';
import { nearest } from './nearest.js';
import type { SftpSettings } from '../intake/openIntake.js';
import type { DecodeSettings } from '../delivery/decodeSettings.js';
import { DEFAULTS, LOG_LEVELS, OPTION_TABLE, RUN_MODES, SETTING_KEYS, type OptionSpec, type SettingKey } from './optionTable.js';

type Key = SettingKey;
export type RawFlags = Partial<Record<Key | 'config', unknown>>;

export interface Settings {
  intake: string | undefined;
  archive: string | undefined;
  duplicates: string | undefined;
  rejected: string | undefined;
  pattern: string;
  ledger: string;
  databaseUrl: string | undefined;
  schema: string;
  stableForSeconds: number;
  maxWaitSeconds: number;
  claimLeaseSeconds: number;
  ledgerTimeoutSeconds: number;
  /** connecting to the finance database, and each lock or statement wait there */
  dbTimeoutSeconds: number;
  staging: string;
  logFile: string | undefined;
  logLevel: string;
  layout: Layout;
  /** known neighbours in the intake, neither taken nor counted */
  ignore: string[];
  maxWaitingRuns: number;
  metricsFile: string | undefined;
  /** the partner's completeness sidecar suffix (`.done`): a file is taken only once NAME+suffix exists */
  readyMarker: string | undefined;
  /** `status`: how old the last successful run may be before the check is critical */
  maxAgeSeconds: number;
  mode: 'scheduled' | 'manual' | undefined;
  sftp: SftpSettings;
  /** compressed, zipped and OpenPGP deliveries (src/load/decode/) */
  decode: DecodeSettings;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`config file ${path} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`config file ${path} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UsageError(`config file ${path} must hold one JSON object`);
  }
  for (const key of Object.keys(parsed)) {
    if (!(key in OPTION_TABLE)) {
      const guess = nearest(key, SETTING_KEYS);
      const hint = guess ? `did you mean "${guess}"?` : `known: ${SETTING_KEYS.join(', ')}`;
      throw new UsageError(`config file ${path}: unknown setting "${key}" (${hint})`);
    }
  }
  return parsed as Record<string, unknown>;
}

function seconds(value: unknown, from: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${from}: expected a number of seconds, got ${JSON.stringify(value)}`);
  return n;
}

/** A list of globs: repeated flags, a JSON array in the file, or commas in the environment. */
function globs(p: { value: unknown; from: string } | undefined): string[] {
  if (p === undefined) return [];
  const list = typeof p.value === 'string' ? p.value.split(',') : p.value;
  if (!Array.isArray(list) || list.some((g) => typeof g !== 'string' || g.trim() === '')) {
    throw new UsageError(`${p.from}: expected file name patterns, got ${JSON.stringify(p.value)}`);
  }
  return (list as string[]).map((g) => g.trim());
}

const UNIT_SECONDS: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds, or a number with a unit: `90m`, `26h`, `2d`. */
function duration(p: { value: unknown; from: string } | undefined, fallback: string): number {
  const value = p?.value ?? fallback;
  const m = typeof value === 'string' || typeof value === 'number' ? /^(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(String(value).trim()) : null;
  if (!m) throw new UsageError(`${p?.from}: expected a duration such as 3600, 90m, 26h or 2d, got ${JSON.stringify(value)}`);
  return Number(m[1]) * UNIT_SECONDS[m[2]!]!;
}

/** A file name pattern that cannot become a matcher (`[z-a]`) is refused with the setting that gave it. */
function namePattern(pattern: string, from: string): string {
  try {
    globToRegExp(pattern);
  } catch (err) {
    throw new UsageError(
      `${from} "${pattern}" is not a usable file name pattern (${(err as Error).message.replace(/^.*: /, '')}): use *, ? and [a-z] with ranges in order`,
      {
        cause: err,
      },
    );
  }
  return pattern;
}

/** Only local folders and sftp:// are intakes; `ftp://x` must not become a folder named "ftp:". */
function intakeLocation(value: string | undefined, from: string | undefined): string | undefined {
  const scheme = value === undefined ? null : /^([a-z][a-z0-9+.-]*):\/\//i.exec(value);
  if (scheme && scheme[1]!.toLowerCase() !== 'sftp') {
    throw new UsageError(`${from}: "${scheme[1]}://" is not a supported intake: use a local folder or sftp://user@host[:port]/path`);
  }
  return value;
}

function readyMarker(suffix: string | undefined): string | undefined {
  if (suffix !== undefined && !/^\.[A-Za-z0-9._-]{1,32}$/.test(suffix)) {
    throw new UsageError(`ready marker "${suffix}" must be a file name suffix such as .done or .ok`);
  }
  return suffix;
}

function count(p: { value: unknown; from: string } | undefined, fallback: number): number {
  if (p === undefined) return fallback;
  const n = typeof p.value === 'number' ? p.value : typeof p.value === 'string' && /^\d{1,6}$/.test(p.value.trim()) ? Number(p.value) : NaN;
  if (!Number.isSafeInteger(n) || n < 0 || n > 999_999) {
    throw new UsageError(`${p.from}: expected a whole number from 0 to 999999, got ${JSON.stringify(p.value)}`);
  }
  return n;
}

/** Above this a record held as a string would itself break the memory bound it is for. */
const MAX_RECORD_BYTES_CEILING = 64 * 1024 * 1024;

function recordBytes(value: unknown, from: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1024 || n > MAX_RECORD_BYTES_CEILING) {
    throw new UsageError(
      `${from}: expected a whole number of bytes from 1024 to ${MAX_RECORD_BYTES_CEILING}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** Folder paths in a config file are relative to the file, not to wherever cron starts. */
function relativeTo(base: string | undefined, value: unknown): unknown {
  if (base === undefined || typeof value !== 'string' || value.includes('://') || isAbsolute(value)) return value;
  return join(base, value);
}

/** Where a setting's value came from, highest first. */
export type SettingSource = 'flag' | 'environment' | 'file';

export interface Picked {
  value: unknown;
  /** the flag, variable or file entry, for messages */
  from: string;
  source: SettingSource;
}

/** The one precedence rule: a setting's value from a flag, else the environment, else the config file. */
export function settingPicker(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): (key: Key) => Picked | undefined {
  const configPath = (flags.config as string | undefined) ?? env.SETTLE_CONFIG;
  const file = configPath ? readConfigFile(configPath) : {};
  const fileDir = configPath ? dirname(resolve(configPath)) : undefined;

  return (key: Key): Picked | undefined => {
    const spec: OptionSpec = OPTION_TABLE[key];
    if (flags[key] !== undefined) return { value: flags[key], from: spec.flag ?? key, source: 'flag' };
    if (spec.env && env[spec.env] !== undefined && env[spec.env] !== '')
      return { value: env[spec.env], from: spec.env, source: 'environment' };
    if (file[key] !== undefined) {
      return { value: spec.path ? relativeTo(fileDir, file[key]) : file[key], from: `${configPath}: "${key}"`, source: 'file' };
    }
    return undefined;
  };
}

export function resolveSettings(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): Settings {
  const pick = settingPicker(flags, env);
  const str = (key: Key): string | undefined => {
    const p = pick(key);
    if (p === undefined) return undefined;
    if (typeof p.value !== 'string' || p.value === '') throw new UsageError(`${p.from}: expected a non-empty string`);
    return p.value;
  };
  const secs = (key: 'stableFor' | 'maxWait' | 'claimLease' | 'ledgerTimeout' | 'dbTimeout' | 'sftpTimeout'): number => {
    const p = pick(key);
    return p === undefined ? DEFAULTS[key] : seconds(p.value, p.from);
  };

  const ledger = str('ledger') ?? DEFAULTS.ledger;
  const schema = str('schema') ?? DEFAULTS.schema;
  if (!SCHEMA_NAME.test(schema)) throw new UsageError(`schema "${schema}" must be a lower-case SQL identifier`);
  const logLevel = str('logLevel') ?? DEFAULTS.logLevel;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel))
    throw new UsageError(`log level "${logLevel}" must be one of ${LOG_LEVELS.join(', ')}`);
  const claimLeaseSeconds = secs('claimLease');
  if (claimLeaseSeconds < 60) throw new UsageError(`claim lease of ${claimLeaseSeconds}s is too short: a load must fit in it`);
  const dbTimeoutSeconds = secs('dbTimeout');
  if (dbTimeoutSeconds < 1) throw new UsageError(`database timeout of ${dbTimeoutSeconds}s is too short: it must be at least 1s`);
  const sftpTimeoutSeconds = secs('sftpTimeout');
  if (sftpTimeoutSeconds < 1) throw new UsageError(`SFTP timeout of ${sftpTimeoutSeconds}s is too short: it must be at least 1s`);
  const layoutPick = pick('layout');
  const mode = str('mode') as Settings['mode'];
  if (mode !== undefined && !RUN_MODES.includes(mode)) throw new UsageError(`mode "${mode}" must be ${RUN_MODES.join(' or ')}`);
  const recordPick = pick('maxRecordBytes');
  const maxRecordBytes = recordPick ? recordBytes(recordPick.value, recordPick.from) : DEFAULTS.maxRecordBytes;

  return {
    intake: intakeLocation(str('intake'), pick('intake')?.from),
    archive: str('archive'),
    duplicates: str('duplicates'),
    rejected: str('rejected'),
    pattern: namePattern(str('pattern') ?? DEFAULTS.pattern, pick('pattern')?.from ?? 'pattern'),
    ledger,
    databaseUrl: str('databaseUrl'),
    schema,
    stableForSeconds: secs('stableFor'),
    maxWaitSeconds: secs('maxWait'),
    claimLeaseSeconds,
    ledgerTimeoutSeconds: secs('ledgerTimeout'),
    dbTimeoutSeconds,
    staging: str('staging') ?? tmpdir(),
    logFile: str('logFile'),
    logLevel,
    layout: { ...(layoutPick ? parseLayout(layoutPick.value, layoutPick.from) : DEFAULT_LAYOUT), maxRecordBytes },
    ignore: globs(pick('ignore')).map((g) => namePattern(g, pick('ignore')!.from)),
    maxWaitingRuns: count(pick('maxWaitingRuns'), DEFAULTS.maxWaitingRuns),
    metricsFile: str('metricsFile'),
    readyMarker: readyMarker(str('readyMarker')),
    maxAgeSeconds: duration(pick('maxAge'), DEFAULTS.maxAge),
    mode,
    sftp: {
      keyPath: str('sftpKey'),
      keyPassphrase: env.SETTLE_SFTP_KEY_PASSPHRASE || undefined,
      password: str('sftpPassword'),
      agentSocket: env.SSH_AUTH_SOCK || undefined,
      knownHosts: str('knownHosts') ?? join(env.HOME ?? homedir(), '.ssh', 'known_hosts'),
      hostKeyFingerprint: str('hostKeyFingerprint'),
      timeoutSeconds: sftpTimeoutSeconds,
      minBytesPerSecond: bounded(pick('sftpMinRate'), DEFAULTS.sftpMinRate, 0, 1024 ** 3, 'bytes a second'),
    },
    decode: decodeSettings(pick, str),
  };
}

/** A whole number from `min` to `max` (a ratio, a byte count), refused with the setting that gave it. */
function bounded(p: Picked | undefined, fallback: number, min: number, max: number, what: string): number {
  if (p === undefined) return fallback;
  const n = typeof p.value === 'number' ? p.value : typeof p.value === 'string' && /^\d+$/.test(p.value.trim()) ? Number(p.value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${p.from}: expected ${what} from ${min} to ${max}, got ${JSON.stringify(p.value)}`);
  }
  return n;
}

function decodeSettings(pick: (key: Key) => Picked | undefined, str: (key: Key) => string | undefined): DecodeSettings {
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');
  return {
    pgpKeyPath: str('pgpKey'),
    pgpVerifyKeyPath: str('pgpVerifyKey'),
    pgpPassphrase: str('pgpPassphrase'),
    maxInflateRatio: bounded(pick('maxInflateRatio'), DEFAULTS.maxInflateRatio, 2, 100_000, 'a ratio'),
    maxDecodedBytes: bounded(pick('maxDecodedBytes'), DEFAULTS.maxDecodedBytes, 1024, Number.MAX_SAFE_INTEGER, 'a number of bytes'),
  };
}
