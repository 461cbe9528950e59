import { formatDuration } from '../durations.js';
import type { TextFormat } from './valueRules.js';

/** The commands that read settings; `report` stands for its subcommands but `report evidence`, which takes audit's settings too. */
export type CommandName =
  'migrate' | 'run' | 'watch' | 'report' | 'evidence' | 'history' | 'audit' | 'adopt' | 'status' | 'config' | 'check' | 'waive' | 'doctor';

/**
 * How a setting's text becomes a value; settingValues.ts holds one parser per kind: `duration` is
 * seconds, written `30`, `30s`, `90m`, `1h30m`, `26h` or `2d`; `count` and `bytes` are whole
 * numbers; `globs` a list of file name patterns; `paths` a list of files, each of whose names may hold a
 * wildcard (`xferlog*`, for the rotated ones); `layout` a preset's name or an object; `switch` a
 * flag without a value (`--quick`): `true` or `false` in the file, `1`/`0`, `true`/`false`,
 * `yes`/`no` in the environment.
 */
export type OptionKind = 'string' | 'duration' | 'bytes' | 'count' | 'globs' | 'paths' | 'layout' | 'expect' | 'switch';

/**
 * Where a setting may stand when the config file names several partners (`"partners"`):
 * `shared` only at the top (one ledger, one database, one log for all of them); `own` is what
 * makes a partner itself (its intake and folders, its file names, its layout, its keys): a flag
 * or variable for it applies only when one partner is chosen with --partner; any other setting
 * may stand at the top, be overridden per partner, and a flag or variable for it applies to
 * every partner a command takes.
 */
export type OptionScope = 'shared' | 'own' | 'run';

/** The typed default each kind of setting takes (none for a layout or `expect`, which are objects). */
export interface KindDefault {
  string: string;
  duration: number;
  bytes: number;
  count: number;
  globs: readonly string[];
  paths: readonly string[];
  layout: never;
  expect: never;
  switch: boolean;
}

/**
 * One row of the option table: a setting's flag, variable, help, kind and typed default (its
 * `kind` says the type of `default`: seconds for a duration, a number of bytes, a text).
 */
export type OptionSpec = { [K in OptionKind]: OptionFields & { kind: K; default?: KindDefault[K] } }[OptionKind];

interface OptionFields {
  /** `--intake`; null for a setting that is never a flag (a password, the layout) */
  flag: string | null;
  /** the value's name in help: `<dir|url>`; `...` for a variadic flag */
  value?: string;
  /** given more than once, each value is kept (`--partner a --partner b`) */
  repeatable?: boolean;
  description: string;
  /** the environment variable, or null when there is none */
  env: string | null;
  /** see OptionScope; unset: `run` */
  scope?: OptionScope;
  /**
   * the default as a person reads it (help, OPTIONS.md, `config`) where it is no value the row
   * can hold (`"archive" beside the intake`) or needs words; else the typed `default`, written out
   */
  shownDefault?: string;
  choices?: readonly string[];
  /** a text setting's own form (a schema's name, a marker's suffix): checked by the reader, the JSON Schema's `pattern` */
  format?: TextFormat;
  /** numbers (`duration`, `count`, `bytes`): the least and greatest taken, and why the least */
  range?: { min?: number; max?: number; why?: string };
  /** a path in the config file, taken relative to the file */
  path?: boolean;
  /**
   * the intake kind that owns it (its `name` in intake/openIntake.ts's registry: `sftp`): read only
   * by that kind's `settings`, into its part of `kindSettings`
   */
  intakeKind?: string;
  commands: readonly CommandName[];
  /** where a command words it differently, or requires it */
  per?: Partial<Record<CommandName, { description?: string; required?: boolean }>>;
  /** README only: what the one-line help cannot say */
  details?: string;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const RUN_MODES = ['scheduled', 'manual'] as const;

/** Seconds as a person writes a duration: 30s, 5m, 2h, 26h, 1h30m. */
export const durationText = (seconds: number): string => formatDuration(seconds, { largest: 'd', wholeDaysOnly: true, zero: '0' });

/** The default as help, OPTIONS.md and the JSON Schema write it: a duration as text (`30s`), a list with commas. */
export function defaultText(spec: OptionSpec): string | undefined {
  if (spec.default === undefined) return undefined;
  if (spec.kind === 'duration') return durationText(spec.default);
  return Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
}

/** The default as a person reads it: the row's words for it, else its typed default written out. */
export const shownDefault = (spec: OptionSpec): string | undefined => spec.shownDefault ?? defaultText(spec);
