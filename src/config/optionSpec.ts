import { DEFAULT_MAX_RECORD_BYTES } from '../layout/layout.js';

/** The commands that read settings; `report` stands for its subcommands. */
export type CommandName = 'migrate' | 'run' | 'report' | 'history' | 'audit' | 'adopt' | 'status' | 'config' | 'check';

/** How a setting's text becomes a value; settings.ts holds one parser per kind. */
export type OptionKind = 'string' | 'seconds' | 'bytes' | 'layout' | 'globs' | 'count' | 'duration';

export interface OptionSpec {
  /** `--intake`; null for a setting that is never a flag (a password, the layout) */
  flag: string | null;
  /** the value's name in help: `<dir|url>`; `...` for a repeatable flag */
  value?: string;
  description: string;
  /** the environment variable, or null when there is none */
  env: string | null;
  kind: OptionKind;
  /** the default as a person reads it (help, README); the typed value is in DEFAULTS */
  default?: string;
  choices?: readonly string[];
  /** a path in the config file, taken relative to the file */
  path?: boolean;
  commands: readonly CommandName[];
  /** where a command words it differently, or requires it */
  per?: Partial<Record<CommandName, { description?: string; required?: boolean }>>;
  /** README only: what the one-line help cannot say */
  details?: string;
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
  dbTimeout: 60,
  logLevel: 'info',
  maxWaitingRuns: 2,
  maxAge: '26h',
  maxInflateRatio: 100,
  maxDecodedBytes: 16 * 1024 ** 3,
  sftpTimeout: 60,
  sftpMinRate: 1024,
} as const;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const RUN_MODES = ['scheduled', 'manual'] as const;
