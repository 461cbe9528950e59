import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { homedir, tmpdir } from 'node:os';
import { UsageError } from '../errors.js';
import { DEFAULT_LAYOUT, DEFAULT_MAX_RECORD_BYTES, parseLayout, type Layout } from '../load/layout.js';

/**
 * Every option, from (highest first) flags, the environment, the --config JSON file, and
 * the defaults. `key` is the config file's name, `env` the variable's.
 */
const OPTIONS = {
  intake: { env: 'SETTLE_INTAKE', kind: 'string' },
  archive: { env: 'SETTLE_ARCHIVE', kind: 'string' },
  duplicates: { env: 'SETTLE_DUPLICATES', kind: 'string' },
  rejected: { env: 'SETTLE_REJECTED', kind: 'string' },
  pattern: { env: 'SETTLE_PATTERN', kind: 'string' },
  ledger: { env: 'SETTLE_LEDGER', kind: 'string' },
  databaseUrl: { env: 'DATABASE_URL', kind: 'string' },
  schema: { env: 'SETTLE_SCHEMA', kind: 'string' },
  stableFor: { env: 'SETTLE_STABLE_FOR', kind: 'seconds' },
  maxWait: { env: 'SETTLE_MAX_WAIT', kind: 'seconds' },
  claimLease: { env: 'SETTLE_CLAIM_LEASE', kind: 'seconds' },
  ledgerTimeout: { env: 'SETTLE_LEDGER_TIMEOUT', kind: 'seconds' },
  staging: { env: 'SETTLE_STAGING', kind: 'string' },
  logFile: { env: 'SETTLE_LOG_FILE', kind: 'string' },
  logLevel: { env: 'SETTLE_LOG_LEVEL', kind: 'string' },
  sftpKey: { env: 'SETTLE_SFTP_KEY', kind: 'string' },
  knownHosts: { env: 'SETTLE_KNOWN_HOSTS', kind: 'string' },
  hostKeyFingerprint: { env: 'SETTLE_HOST_KEY_FINGERPRINT', kind: 'string' },
  /** never a flag: only the environment or the config file */
  sftpPassword: { env: 'SETTLE_SFTP_PASSWORD', kind: 'string' },
  maxRecordBytes: { env: 'SETTLE_MAX_RECORD_BYTES', kind: 'bytes' },
  layout: { env: null, kind: 'layout' },
} as const;

type Key = keyof typeof OPTIONS;
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
  staging: string;
  logFile: string | undefined;
  logLevel: string;
  layout: Layout;
  sftp: {
    keyPath: string | undefined;
    keyPassphrase: string | undefined;
    password: string | undefined;
    agentSocket: string | undefined;
    knownHosts: string;
    hostKeyFingerprint: string | undefined;
  };
}

export const DEFAULTS = {
  pattern: 'settle_*.csv',
  ledger: './settle-ledger.sqlite',
  schema: 'settle',
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  stableFor: 30,
  maxWait: 300,
  claimLease: 7200,
  ledgerTimeout: 15,
  logLevel: 'info',
} as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
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
    if (!(key in OPTIONS)) {
      throw new UsageError(`config file ${path}: unknown setting "${key}" (known: ${Object.keys(OPTIONS).join(', ')})`);
    }
  }
  return parsed as Record<string, unknown>;
}

function seconds(value: unknown, from: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${from}: expected a number of seconds, got ${JSON.stringify(value)}`);
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

export function resolveSettings(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): Settings {
  const configPath = (flags.config as string | undefined) ?? env.SETTLE_CONFIG;
  const file = configPath ? readConfigFile(configPath) : {};
  const fileDir = configPath ? dirname(resolve(configPath)) : undefined;

  const pick = (key: Key): { value: unknown; from: string } | undefined => {
    const spec = OPTIONS[key];
    if (flags[key] !== undefined) return { value: flags[key], from: `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` };
    if (spec.env && env[spec.env] !== undefined && env[spec.env] !== '') return { value: env[spec.env], from: spec.env };
    if (file[key] !== undefined) {
      const pathLike = ['intake', 'archive', 'duplicates', 'rejected', 'ledger', 'staging', 'logFile', 'sftpKey', 'knownHosts'].includes(
        key,
      );
      return { value: pathLike ? relativeTo(fileDir, file[key]) : file[key], from: `${configPath}: "${key}"` };
    }
    return undefined;
  };
  const str = (key: Key): string | undefined => {
    const p = pick(key);
    if (p === undefined) return undefined;
    if (typeof p.value !== 'string' || p.value === '') throw new UsageError(`${p.from}: expected a non-empty string`);
    return p.value;
  };
  const secs = (key: 'stableFor' | 'maxWait' | 'claimLease' | 'ledgerTimeout'): number => {
    const p = pick(key);
    return p === undefined ? DEFAULTS[key] : seconds(p.value, p.from);
  };

  const ledger = str('ledger') ?? DEFAULTS.ledger;
  const schema = str('schema') ?? DEFAULTS.schema;
  if (!SCHEMA_NAME.test(schema)) throw new UsageError(`schema "${schema}" must be a lower-case SQL identifier`);
  const logLevel = str('logLevel') ?? DEFAULTS.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`log level "${logLevel}" must be one of ${LOG_LEVELS.join(', ')}`);
  const claimLeaseSeconds = secs('claimLease');
  if (claimLeaseSeconds < 60) throw new UsageError(`claim lease of ${claimLeaseSeconds}s is too short: a load must fit in it`);
  const layoutPick = pick('layout');
  const recordPick = pick('maxRecordBytes');
  const maxRecordBytes = recordPick ? recordBytes(recordPick.value, recordPick.from) : DEFAULTS.maxRecordBytes;

  return {
    intake: str('intake'),
    archive: str('archive'),
    duplicates: str('duplicates'),
    rejected: str('rejected'),
    pattern: str('pattern') ?? DEFAULTS.pattern,
    ledger,
    databaseUrl: str('databaseUrl'),
    schema,
    stableForSeconds: secs('stableFor'),
    maxWaitSeconds: secs('maxWait'),
    claimLeaseSeconds,
    ledgerTimeoutSeconds: secs('ledgerTimeout'),
    staging: str('staging') ?? tmpdir(),
    logFile: str('logFile'),
    logLevel,
    layout: { ...(layoutPick ? parseLayout(layoutPick.value, layoutPick.from) : DEFAULT_LAYOUT), maxRecordBytes },
    sftp: {
      keyPath: str('sftpKey'),
      keyPassphrase: env.SETTLE_SFTP_KEY_PASSPHRASE || undefined,
      password: str('sftpPassword'),
      agentSocket: env.SSH_AUTH_SOCK || undefined,
      knownHosts: str('knownHosts') ?? join(env.HOME ?? homedir(), '.ssh', 'known_hosts'),
      hostKeyFingerprint: str('hostKeyFingerprint'),
    },
  };
}

/** archive/, duplicates/ and rejected/ default to siblings of the intake folder. */
export function siblingFolder(intake: string, name: 'archive' | 'duplicates' | 'rejected'): string {
  return join(dirname(resolve(intake)), name);
}
