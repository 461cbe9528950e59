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
import { DEFAULTS, OPTION_TABLE, SETTING_KEYS, type OptionKind, type OptionSpec, type SettingKey } from './optionTable.js';

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
  /** compressed, zipped and OpenPGP deliveries (src/delivery/) */
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

/** What each kind of setting becomes. */
interface KindValue {
  string: string;
  duration: number;
  bytes: number;
  count: number;
  globs: string[];
  /** a preset's name or an object: parseLayout makes it a layout */
  layout: unknown;
}

const UNIT_SECONDS: Record<string, number> = { d: 86_400, h: 3600, m: 60, s: 1 };
const UNIT_ORDER = 'dhms';

/** `30`, `30s`, `90m`, `1h30m`, `26h`, `2d` (units largest first, each once) as seconds; null when it is none of these. */
export function parseDuration(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  if (typeof value !== 'string') return null;
  const text = value.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)\s*([dhms])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.replace(/\s+(?=[dhms])/g, '')) return null;
  let last = -1;
  let total = 0;
  for (const [, n, unit] of parts) {
    const at = UNIT_ORDER.indexOf(unit!);
    if (at <= last) return null; // 30m1h, 1h1h
    last = at;
    total += Number(n) * UNIT_SECONDS[unit!]!;
  }
  return total;
}

/** A whole number, from JSON or from text. */
function wholeNumber(value: unknown): number {
  return typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : NaN;
}

/** A number out of the option's range is refused with the setting that gave it, and why the least is what it is. */
function inRange(n: number, p: Picked, spec: OptionSpec, expected: string): number {
  const { min = 0, max = Number.MAX_SAFE_INTEGER, why } = spec.range ?? {};
  if (spec.kind === 'duration' && n < min) {
    throw new UsageError(`${p.from}: ${JSON.stringify(p.value)} is too short: at least ${min}s${why ? ` (${why})` : ''}`);
  }
  if (!(n >= min && n <= max))
    throw new UsageError(`${p.from}: expected ${expected} from ${min} to ${max}, got ${JSON.stringify(p.value)}`);
  return n;
}

/** One parser per kind of option (OptionSpec.kind): the only place a setting's text becomes its value. */
const PARSE: { [K in OptionKind]: (p: Picked, spec: OptionSpec) => KindValue[K] } = {
  string: (p, spec) => {
    if (typeof p.value !== 'string' || p.value === '') throw new UsageError(`${p.from}: expected a non-empty string`);
    if (spec.choices && !spec.choices.includes(p.value)) {
      throw new UsageError(`${p.from}: "${p.value}" must be one of ${spec.choices.join(', ')}`);
    }
    return p.value;
  },
  duration: (p, spec) => {
    const n = parseDuration(p.value);
    if (n === null)
      throw new UsageError(`${p.from}: expected a duration such as 30, 30s, 90m, 1h30m, 26h or 2d, got ${JSON.stringify(p.value)}`);
    return inRange(n, p, spec, 'a duration in seconds');
  },
  count: (p, spec) => inRange(wholeNumber(p.value), p, spec, 'a whole number'),
  bytes: (p, spec) => inRange(wholeNumber(p.value), p, spec, 'a whole number of bytes'),
  // repeated flags, a JSON array in the file, or commas in the environment
  globs: (p) => {
    const list = typeof p.value === 'string' ? p.value.split(',') : p.value;
    if (!Array.isArray(list) || list.some((g) => typeof g !== 'string' || g.trim() === '')) {
      throw new UsageError(`${p.from}: expected file name patterns, got ${JSON.stringify(p.value)}`);
    }
    return (list as string[]).map((g) => namePattern(g.trim(), p.from));
  },
  layout: (p) => p.value,
};

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
  /** A setting's value parsed by its kind, or undefined when nothing set it. */
  const read = <K extends Key>(key: K): KindValue[(typeof OPTION_TABLE)[K]['kind']] | undefined => {
    const p = pick(key);
    if (p === undefined) return undefined;
    const spec: OptionSpec = OPTION_TABLE[key];
    return (PARSE[spec.kind] as (p: Picked, spec: OptionSpec) => KindValue[(typeof OPTION_TABLE)[K]['kind']])(p, spec);
  };

  const schema = read('schema') ?? DEFAULTS.schema;
  if (!SCHEMA_NAME.test(schema)) throw new UsageError(`schema "${schema}" must be a lower-case SQL identifier`);
  const layoutPick = pick('layout');
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');

  return {
    intake: intakeLocation(read('intake'), pick('intake')?.from),
    archive: read('archive'),
    duplicates: read('duplicates'),
    rejected: read('rejected'),
    pattern: namePattern(read('pattern') ?? DEFAULTS.pattern, pick('pattern')?.from ?? 'pattern'),
    ledger: read('ledger') ?? DEFAULTS.ledger,
    databaseUrl: read('databaseUrl'),
    schema,
    stableForSeconds: read('stableFor') ?? DEFAULTS.stableFor,
    maxWaitSeconds: read('maxWait') ?? DEFAULTS.maxWait,
    claimLeaseSeconds: read('claimLease') ?? DEFAULTS.claimLease,
    ledgerTimeoutSeconds: read('ledgerTimeout') ?? DEFAULTS.ledgerTimeout,
    dbTimeoutSeconds: read('dbTimeout') ?? DEFAULTS.dbTimeout,
    staging: read('staging') ?? tmpdir(),
    logFile: read('logFile'),
    logLevel: read('logLevel') ?? DEFAULTS.logLevel,
    layout: {
      ...(layoutPick ? parseLayout(layoutPick.value, layoutPick.from) : DEFAULT_LAYOUT),
      maxRecordBytes: read('maxRecordBytes') ?? DEFAULTS.maxRecordBytes,
    },
    ignore: read('ignore') ?? [],
    maxWaitingRuns: read('maxWaitingRuns') ?? DEFAULTS.maxWaitingRuns,
    metricsFile: read('metricsFile'),
    readyMarker: readyMarker(read('readyMarker')),
    maxAgeSeconds: read('maxAge') ?? DEFAULTS.maxAge,
    mode: read('mode') as Settings['mode'],
    sftp: {
      keyPath: read('sftpKey'),
      keyPassphrase: env.SETTLE_SFTP_KEY_PASSPHRASE || undefined,
      password: read('sftpPassword'),
      agentSocket: env.SSH_AUTH_SOCK || undefined,
      knownHosts: read('knownHosts') ?? join(env.HOME ?? homedir(), '.ssh', 'known_hosts'),
      hostKeyFingerprint: read('hostKeyFingerprint'),
    },
    decode: {
      pgpKeyPath: read('pgpKey'),
      pgpVerifyKeyPath: read('pgpVerifyKey'),
      pgpPassphrase: read('pgpPassphrase'),
      maxInflateRatio: read('maxInflateRatio') ?? DEFAULTS.maxInflateRatio,
      maxDecodedBytes: read('maxDecodedBytes') ?? DEFAULTS.maxDecodedBytes,
    },
  };
}
