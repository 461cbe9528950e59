import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { homedir, tmpdir } from 'node:os';
import { UsageError } from '../errors.js';
import { dateTokenCount, expandDateTokens, globToRegExp } from '../intake/names.js';
import { minutesOfDay, weekdaysOf, type Expect } from '../calendar/expect.js';
import { holidayCodeProblem } from '../calendar/holidays.js';
import { DEFAULT_LAYOUT, type Layout } from '../layout/model/layout.js';
import { DEFAULT_PARTNER } from '../ledger/types.js';
import { parseLayout } from '../layout/model/parseLayout.js';
import { PRESETS } from '../layout/model/presets.js';
import { isIanaZone, zoneGuess, zoneProblem } from '../layout/values/timeZones.js';
import { nearest } from '../nearest.js';
import { DuplicateKeyError, parseJsonText } from './jsonText.js';
import { folderPlaces, kindOf, type FolderPlace, type SftpSettings } from '../intake/openIntake.js';
import { createTableSql } from '../finance/layoutTable.js';
import type { DecodeSettings } from '../delivery/decodeSettings.js';
import { DEFAULTS, OPTION_TABLE, SETTING_KEYS, type OptionKind, type OptionSpec, type SettingKey } from './optionTable.js';

type Key = SettingKey;
export type RawFlags = Partial<Record<Key | 'config' | 'partner', unknown>>;

/** A partner's name: lower-case letters, digits and `-` (it names runs, metrics labels and unit instances). */
export const PARTNER_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface Settings {
  /** the partner these settings are for (`default` without `"partners"` in the config file) */
  partner: string;
  /** the deliveries the partner owes, when its settings say */
  expect: Expect | undefined;
  /** the pattern as written, with its date token (`settle_{yyyyMMdd}_*.csv`); `pattern` is its glob */
  patternText: string;
  /** whether a flag, the environment or the config file gave the pattern (else it is the default) */
  patternGiven: boolean;
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
  /** the layout names its table itself (`"table"`): the partner may share that table with another that does too */
  tableNamed: boolean;
  /** known neighbours in the intake, neither taken nor counted */
  ignore: string[];
  maxWaitingRuns: number;
  metricsFile: string | undefined;
  /** `migrate`: the group that may read the SQLite ledger */
  ledgerGroup: string | undefined;
  /** `run`: the summary lines are appended here too, each after its time */
  summaryFile: string | undefined;
  /** the partner's completeness sidecar suffix (`.done`): a file is taken only once NAME+suffix exists */
  readyMarker: string | undefined;
  /** `status`: how old the last successful run may be before the check is critical */
  maxAgeSeconds: number;
  mode: 'scheduled' | 'manual' | undefined;
  sftp: SftpSettings;
  /** compressed, zipped and OpenPGP deliveries (src/delivery/) */
  decode: DecodeSettings;
  /** the SFTP server's own log of uploads, for `audit` and `report evidence` */
  transferLog: TransferLogSettings;
  /** `audit --quick`: archived copies (and duplicates'/rejected files' kept copies) checked by size only */
  quick: boolean;
}

export interface TransferLogSettings {
  /** the log files (a wildcard in a file name as written: expanded when they are read); empty: none */
  files: string[];
  /** the folder, in the intake's own terms, that the log's paths start from (a chroot) */
  root: string;
  /** the zone of times a line does not give one for; undefined: this host's */
  timeZone: string | undefined;
  /** how far the log's clock and the ledger's may disagree (--transfer-log-clock-slack) */
  clockSlackSeconds: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/** The config file, read and checked once: its top-level settings and each partner's own. */
interface ConfigFile {
  path: string;
  /** paths in the file are relative to its folder */
  dir: string;
  top: Record<string, unknown>;
  /** `"partners"`, in the file's order; undefined when the file has none */
  partners: Map<string, Record<string, unknown>> | undefined;
}

/** An unknown key is refused with the nearest known one. */
function refuseUnknownKeys(object: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) {
      const guess = nearest(key, known);
      const hint = guess ? `did you mean "${guess}"?` : `known: ${known.join(', ')}`;
      throw new UsageError(`${where}: unknown setting "${key}" (${hint})`);
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`config file ${path} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    // a byte order mark (as some editors save UTF-8) is no part of the JSON, nor a column
    parsed = parseJsonText(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw new UsageError(`config file ${path}: ${err.message}`, { cause: err });
    throw new UsageError(`config file ${path} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(parsed)) throw new UsageError(`config file ${path} must hold one JSON object`);
  // `$schema` points an editor at `settle-ingest config --json-schema`'s output: no setting, so ignored
  refuseUnknownKeys(parsed, [...SETTING_KEYS, 'partners', '$schema'], `config file ${path}`);
  const config: ConfigFile = { path, dir: dirname(resolve(path)), top: parsed, partners: undefined };
  if (parsed.partners === undefined) return config;
  const where = `config file ${path}: "partners"`;
  if (!isObject(parsed.partners) || Object.keys(parsed.partners).length === 0) {
    throw new UsageError(`${where} must be an object with one entry per partner: {"adyen": {"intake": …}, "stripe": {…}}`);
  }
  config.partners = new Map();
  const partnerKeys = SETTING_KEYS.filter((k) => (OPTION_TABLE[k] as OptionSpec).scope !== 'shared');
  for (const [name, own] of Object.entries(parsed.partners)) {
    if (!PARTNER_NAME.test(name)) {
      throw new UsageError(`${where}: partner name "${name}" must be lower-case letters, digits and - (such as "adyen" or "bank-nl")`);
    }
    if (!isObject(own)) throw new UsageError(`${where}."${name}" must be an object of that partner's settings`);
    for (const key of Object.keys(own)) {
      if (SETTING_KEYS.includes(key as Key) && (OPTION_TABLE[key as Key] as OptionSpec).scope === 'shared') {
        throw new UsageError(`${where}."${name}": "${key}" is shared by all partners: set it at the top of the config file`);
      }
    }
    refuseUnknownKeys(own, partnerKeys, `${where}."${name}"`);
    config.partners.set(name, own);
  }
  return config;
}

/** What each kind of setting becomes. */
interface KindValue {
  string: string;
  duration: number;
  bytes: number;
  count: number;
  globs: string[];
  paths: string[];
  /** a preset's name or an object: parseLayout makes it a layout */
  layout: unknown;
  /** null: `"expect": null` turns off a default from the top of the file */
  expect: Expect | null;
  switch: boolean;
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
  // repeated flags, a JSON array (or one string) in the file, or commas in the environment
  paths: (p) => {
    const list = typeof p.value === 'string' ? p.value.split(',') : p.value;
    if (!Array.isArray(list) || list.length === 0 || list.some((f) => typeof f !== 'string' || f.trim() === '')) {
      throw new UsageError(`${p.from}: expected file paths, got ${JSON.stringify(p.value)}`);
    }
    return (list as string[]).map((f) => f.trim());
  },
  layout: (p) => p.value,
  expect: (p) => parseExpect(p),
  // commander gives a flag without a value as true
  switch: (p) => {
    if (typeof p.value === 'boolean') return p.value;
    const text = typeof p.value === 'string' ? p.value.trim().toLowerCase() : null;
    if (text !== null && ['1', 'true', 'yes'].includes(text)) return true;
    if (text !== null && ['0', 'false', 'no'].includes(text)) return false;
    throw new UsageError(`${p.from}: expected true or false (1 or 0, yes or no), got ${JSON.stringify(p.value)}`);
  },
};

export const EXPECT_KEYS = ['every', 'by', 'timeZone', 'holidays', 'files', 'warnAfter', 'errorAfter'];
const EXPECT_EXAMPLE = '{"every": "business day", "by": "04:00", "timeZone": "Europe/Amsterdam", "holidays": "NL"}';

/** A partner's expected deliveries (calendar/expect.ts), each key checked and named when wrong. */
function parseExpect(picked: Picked): Expect | null {
  if (picked.value === null) return null;
  if (!isObject(picked.value)) throw new UsageError(`${picked.from}: expected an object such as ${EXPECT_EXAMPLE}`);
  const v = picked.value;
  refuseUnknownKeys(v, EXPECT_KEYS, picked.from);
  const at = (key: string) => `${picked.from}."${key}"`;
  const weekdays = weekdaysOf(v.every ?? 'day');
  if (!weekdays) {
    throw new UsageError(
      `${at('every')}: expected "day", "business day" or a list of weekdays such as ["Mon", "Thu"], got ${JSON.stringify(v.every)}`,
    );
  }
  if (v.by === undefined) throw new UsageError(`${at('by')}: required: the local time a day's files are due by, such as "04:00"`);
  if (minutesOfDay(v.by) === null) throw new UsageError(`${at('by')}: expected a time of day such as "04:00", got ${JSON.stringify(v.by)}`);
  const zone = v.timeZone;
  if (zone === undefined) throw new UsageError(`${at('timeZone')}: required: the partner's zone, an IANA name such as "Europe/Amsterdam"`);
  if (typeof zone !== 'string' || !isIanaZone(zone)) {
    const guess = typeof zone === 'string' ? zoneGuess(zone) : undefined;
    throw new UsageError(
      `${at('timeZone')}: expected an IANA time zone such as "Europe/Amsterdam" or "UTC", got ${JSON.stringify(zone)}${guess ? ` (${guess})` : ''}`,
    );
  }
  let holidays: string | undefined;
  if (v.holidays !== undefined) {
    const problem =
      typeof v.holidays === 'string' ? holidayCodeProblem(v.holidays) : 'expected a country or region code such as "NL" or "DE-BY"';
    if (problem) throw new UsageError(`${at('holidays')}: ${problem}`);
    holidays = (v.holidays as string).trim().toUpperCase();
  }
  const files = v.files === undefined ? 1 : wholeNumber(v.files);
  if (!(files >= 1 && files <= 10_000))
    throw new UsageError(`${at('files')}: expected a whole number from 1 to 10000, got ${JSON.stringify(v.files)}`);
  const duration = (key: string, fallback: number) => {
    if (v[key] === undefined) return fallback;
    const n = parseDuration(v[key]);
    if (n === null) throw new UsageError(`${at(key)}: expected a duration such as 30m, 1h or 24h, got ${JSON.stringify(v[key])}`);
    return n;
  };
  const warnAfterSeconds = duration('warnAfter', 0);
  const errorAfterSeconds = duration('errorAfter', 24 * 3600);
  if (errorAfterSeconds < warnAfterSeconds) {
    throw new UsageError(`${at('errorAfter')}: must not be shorter than "warnAfter" (${JSON.stringify(v.warnAfter)})`);
  }
  const by = String(v.by).trim().padStart(5, '0');
  const every = typeof v.every === 'string' || v.every === undefined ? String(v.every ?? 'day') : (v.every as string[]).join(', ');
  return { every, weekdays, holidays, by, timeZone: zone, files, warnAfterSeconds, errorAfterSeconds };
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

/** Only the intake kinds of the registry (intake/openIntake.ts) are intakes; `ftp://x` must not become a folder named "ftp:". */
function intakeLocation(value: string | undefined, from: string | undefined): string | undefined {
  if (value === undefined) return value;
  try {
    kindOf(value);
  } catch (err) {
    throw err instanceof UsageError ? new UsageError(`${from}: ${err.message}`) : err;
  }
  return value;
}

/** The transfer log's root is a path as the intake names it: absolute, without `..`. */
function transferLogRoot(value: string | undefined, from: string | undefined): string {
  if (value === undefined) return '/';
  if (!value.startsWith('/') || value.split('/').includes('..')) {
    throw new UsageError(`${from}: "${value}" must be an absolute folder path without "..", such as /srv/sftp/adyen`);
  }
  return value.length > 1 ? value.replace(/\/+$/, '') : value;
}

function timeZoneSetting(value: string | undefined, from: string | undefined): string | undefined {
  const problem = value === undefined ? undefined : zoneProblem(value);
  if (problem) throw new UsageError(`${from}: ${problem}`);
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
  if (Array.isArray(value)) return value.map((v) => relativeTo(base, v));
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

/**
 * The one precedence rule: a setting's value from a flag, else the environment, else the
 * partner's own entry under `"partners"`, else the top of the config file.
 */
export function settingPicker(flags: RawFlags, env: NodeJS.ProcessEnv = process.env, partner?: string): (key: Key) => Picked | undefined {
  return pickerFor(loadConfig(flags, env), flags, env, partner);
}

function loadConfig(flags: RawFlags, env: NodeJS.ProcessEnv): ConfigFile | undefined {
  const configPath = (flags.config as string | undefined) ?? env.SETTLE_CONFIG;
  return configPath ? readConfigFile(configPath) : undefined;
}

function pickerFor(
  config: ConfigFile | undefined,
  flags: RawFlags,
  env: NodeJS.ProcessEnv,
  partner: string | undefined,
): (key: Key) => Picked | undefined {
  const own = partner === undefined ? undefined : config?.partners?.get(partner);
  const fromFile = (entries: Record<string, unknown>, key: Key, where: string): Picked => {
    const spec: OptionSpec = OPTION_TABLE[key];
    return {
      value: spec.path ? relativeTo(config!.dir, entries[key]) : entries[key],
      from: `${config!.path}: ${where}"${key}"`,
      source: 'file',
    };
  };
  return (key: Key): Picked | undefined => {
    const spec: OptionSpec = OPTION_TABLE[key];
    if (flags[key] !== undefined) return { value: flags[key], from: spec.flag ?? key, source: 'flag' };
    if (spec.env && env[spec.env] !== undefined && env[spec.env] !== '')
      return { value: env[spec.env], from: spec.env, source: 'environment' };
    if (own?.[key] !== undefined) return fromFile(own, key, `"partners"."${partner}".`);
    if (config?.top[key] !== undefined) return fromFile(config.top, key, '');
    return undefined;
  };
}

/** The chosen partners' settings, each resolved and checked; see resolvePartners. */
export interface PartnerSelection {
  /** the partners chosen (by --partner or SETTLE_PARTNER; else all), in the config file's order */
  partners: Settings[];
  /** every partner the config file names; `default` alone without `"partners"` */
  configured: string[];
  /** their settings, as the file gives them (a flag for a partner's own setting applies to the one chosen) */
  all: Settings[];
  /** the config file names its partners (`"partners"`) */
  named: boolean;
  /** the --partner filter: the chosen partners' names when --partner or SETTLE_PARTNER chose them; undefined when none was asked for (all) */
  asked: string[] | undefined;
}

/** `--partner a --partner b`, `--partner a,b` or SETTLE_PARTNER=a,b; undefined when none is given. */
function askedPartners(flags: RawFlags, env: NodeJS.ProcessEnv): { names: string[]; from: string } | undefined {
  const given =
    flags.partner !== undefined
      ? { value: flags.partner, from: '--partner' }
      : env.SETTLE_PARTNER
        ? { value: env.SETTLE_PARTNER, from: 'SETTLE_PARTNER' }
        : undefined;
  if (!given) return undefined;
  const names = [given.value]
    .flat()
    .flatMap((v) => String(v).split(','))
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (names.length === 0) throw new UsageError(`${given.from}: expected a partner name`);
  return { names: [...new Set(names)], from: given.from };
}

/**
 * Every partner's settings, resolved and checked before anything is touched (a mistake in any
 * partner's is exit 2 naming it and the key), then the ones asked for. Without `"partners"`
 * the config is one partner, `default`. `unconfigured: 'allow'` (the reports): a name the
 * config does not know still filters what the ledger shows, when the config names no partners.
 */
export function resolvePartners(
  flags: RawFlags,
  env: NodeJS.ProcessEnv = process.env,
  opts: { unconfigured?: 'refuse' | 'allow' } = {},
): PartnerSelection {
  const config = loadConfig(flags, env);
  const named = config?.partners !== undefined;
  const configured = named ? [...config.partners!.keys()] : [DEFAULT_PARTNER];
  const resolveOne = (partner: string, partial: RawFlags, processEnv: NodeJS.ProcessEnv) =>
    settingsFrom(pickerFor(config, partial, processEnv, named ? partner : undefined), processEnv, partner);
  // every partner is checked as the file has it, before any is chosen: a mistake anywhere is exit 2
  const own = ownSettingsGiven(flags, env);
  const all = configured.map((partner) => resolveOne(partner, named ? own.flags : flags, named ? own.env : env));
  refuseSharedFolders(all);
  refuseClashingTables(all);
  const asked = askedPartners(flags, env);
  const chosen = asked ? asked.names.map((name) => chosenPartner(name, asked.from, all, config, opts.unconfigured ?? 'refuse')) : all;
  if (chosen.length > 1 && own.given) {
    const names = chosen.map((p) => p.partner).join(', ');
    throw new UsageError(
      `${own.given} is one partner's own setting: with ${chosen.length} partners (${names}), choose one with --partner NAME, or set it per partner in the config file`,
    );
  }
  // in the config file's order, whatever order they were asked in; one chosen partner takes the flags for its own settings too
  const order = (p: Settings) => (configured.includes(p.partner) ? configured.indexOf(p.partner) : configured.length);
  const partners = [...chosen].sort((a, b) => order(a) - order(b));
  if (named && partners.length === 1 && own.given && configured.includes(partners[0]!.partner)) {
    partners[0] = resolveOne(partners[0]!.partner, flags, env);
  }
  return { partners, configured, named, all, asked: asked ? partners.map((p) => p.partner) : undefined };
}

/**
 * The flags and variables without those of a partner's own settings (its intake, folders,
 * pattern, layout, keys), and the first of them given: applied to every partner they would
 * make them all the same, so they apply only to one chosen partner.
 */
function ownSettingsGiven(flags: RawFlags, env: NodeJS.ProcessEnv): { flags: RawFlags; env: NodeJS.ProcessEnv; given: string | null } {
  const rest = { flags: { ...flags }, env: { ...env }, given: null as string | null };
  for (const key of SETTING_KEYS) {
    const spec: OptionSpec = OPTION_TABLE[key];
    if (spec.scope !== 'own') continue;
    if (flags[key] !== undefined) rest.given ??= spec.flag;
    else if (spec.env && env[spec.env]) rest.given ??= spec.env;
    delete rest.flags[key];
    if (spec.env) delete rest.env[spec.env];
  }
  return rest;
}

function chosenPartner(
  name: string,
  from: string,
  all: Settings[],
  config: ConfigFile | undefined,
  unconfigured: 'refuse' | 'allow',
): Settings {
  const known = all.find((p) => p.partner === name);
  if (known) return known;
  if (config?.partners === undefined && unconfigured === 'allow' && PARTNER_NAME.test(name)) return { ...all[0]!, partner: name };
  const configured = all.map((p) => p.partner);
  const guess = nearest(name, configured);
  const where = config ? `config file ${config.path}` : 'the settings (no config file)';
  throw new UsageError(
    `${from}: no partner "${name}" in ${where} (${guess ? `did you mean "${guess}"? ` : ''}partners: ${configured.join(', ')})`,
  );
}

/**
 * Each partner's folders are its own: two partners reading one intake would take each other's
 * files, and one's archive (or duplicates, rejected) being another's intake would feed it what
 * the first moved; a final folder shared would mix two partners' evidence. Compared where the
 * folders really are (links resolved, per SFTP login and server: folderPlaces).
 */
function refuseSharedFolders(partners: Settings[]): void {
  const seen = new Map<string, { partner: string } & FolderPlace>();
  for (const p of partners) {
    if (!p.intake) continue;
    for (const use of folderPlaces(p)) {
      const other = seen.get(use.place);
      if (other === undefined) seen.set(use.place, { partner: p.partner, ...use });
      if (other === undefined || other.partner === p.partner) continue;
      const both =
        other.folder === use.folder
          ? `${other.partner}'s ${other.role} and ${p.partner}'s ${use.role} are both ${use.folder}`
          : `${other.partner}'s ${other.role} ${other.folder} and ${p.partner}'s ${use.role} ${use.folder} are one folder, ${use.place}${use.folder.includes('://') ? '' : ' (links resolved)'}`;
      const hint =
        use.role === 'intake' && other.role === 'intake' ? '' : ' (archive, duplicates and rejected default to siblings of its intake)';
      throw new UsageError(
        `partners "${other.partner}" and "${p.partner}" share one folder: ${both}: each partner needs folders of its own${hint}`,
      );
    }
  }
}

/**
 * Two partners write one finance table only when each one's layout says so: names the table
 * itself (`"table": "settlement_rows"`; a preset: `{ "extends": "default", "table": … }`). Two
 * partners left on the default layout, or on one preset, would otherwise mix their rows in one
 * table without anybody having chosen it; then, as `migrate` creates the table once, their
 * layouts must define it alike (columns, types, natural key), or one's rows could not fit it.
 */
function refuseClashingTables(partners: Settings[]): void {
  const namingHint = (layout: Layout) => {
    const preset = layout.name.replace(/ \(extended\)$/, '');
    return PRESETS.has(preset)
      ? `a preset's or the default's by extending it: "layout": { "extends": "${preset}", "table": "${layout.table}" }`
      : `a layout object of its own: "table": "${layout.table}" among its keys`;
  };
  const byTable = new Map<string, { partner: string; tableNamed: boolean; definition: string }>();
  for (const settings of partners) {
    const table = `${settings.schema}.${settings.layout.table}`;
    const definition = createTableSql(settings.schema, settings.layout).join(';\n');
    const other = byTable.get(table);
    if (other === undefined) {
      byTable.set(table, { partner: settings.partner, tableNamed: settings.tableNamed, definition });
      continue;
    }
    if (!other.tableNamed || !settings.tableNamed) {
      const silent = [other, settings].filter((x) => !x.tableNamed).map((x) => `"${x.partner}"`);
      const unnamed = silent.length === 1 ? `the layout of ${silent[0]} does not name it` : `neither one's layout names it`;
      throw new UsageError(
        `partners "${other.partner}" and "${settings.partner}" both load into table ${table}, and ${unnamed}: ` +
          `partners share a table only when each one's layout names it. To share it, add "table": "${settings.layout.table}" to each one's layout ` +
          `(${namingHint(settings.layout)}); ` +
          `to keep them apart, give one a table of its own ("table": "${settings.partner.replace(/-/g, '_')}_rows")`,
      );
    }
    if (other.definition !== definition) {
      throw new UsageError(
        `partners "${other.partner}" and "${settings.partner}" both load into table ${table}, but their layouts define it differently: give one layout a "table" of its own (or the same columns and natural key, to share it)`,
      );
    }
  }
}

/**
 * The settings of the one partner a command works on (`check`, `adopt`, reprocessing): the
 * config's only partner, or the one chosen with --partner.
 */
export function resolveSettings(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): Settings {
  const { partners, configured } = resolvePartners(flags, env);
  if (partners.length !== 1) {
    throw new UsageError(
      `the config file names ${configured.length} partners (${configured.join(', ')}): this command works on one: choose it with --partner NAME`,
    );
  }
  return partners[0]!;
}

/** One partner's settings from the picker bound to it. */
function settingsFrom(pick: (key: Key) => Picked | undefined, env: NodeJS.ProcessEnv, partner: string): Settings {
  /** A setting's value parsed by its kind, or undefined when nothing set it. */
  const read = <K extends Key>(key: K): KindValue[(typeof OPTION_TABLE)[K]['kind']] | undefined => {
    const picked = pick(key);
    if (picked === undefined) return undefined;
    const spec: OptionSpec = OPTION_TABLE[key];
    return (PARSE[spec.kind] as (p: Picked, spec: OptionSpec) => KindValue[(typeof OPTION_TABLE)[K]['kind']])(picked, spec);
  };

  const schema = read('schema') ?? DEFAULTS.schema;
  if (!SCHEMA_NAME.test(schema)) throw new UsageError(`schema "${schema}" must be a lower-case SQL identifier`);
  const layoutPick = pick('layout');
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');

  const patternText = read('pattern') ?? DEFAULTS.pattern;
  const patternFrom = pick('pattern')?.from ?? 'pattern';
  if (dateTokenCount(patternText) > 1)
    throw new UsageError(`${patternFrom} "${patternText}" has more than one date token: a name carries one day`);
  return {
    partner,
    expect: read('expect') ?? undefined,
    patternText,
    patternGiven: pick('pattern') !== undefined,
    intake: intakeLocation(read('intake'), pick('intake')?.from),
    archive: read('archive'),
    duplicates: read('duplicates'),
    rejected: read('rejected'),
    pattern: namePattern(expandDateTokens(patternText), patternFrom),
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
    tableNamed: isObject(layoutPick?.value) && layoutPick.value.table !== undefined,
    ignore: read('ignore') ?? [],
    maxWaitingRuns: read('maxWaitingRuns') ?? DEFAULTS.maxWaitingRuns,
    metricsFile: read('metricsFile'),
    summaryFile: read('summaryFile'),
    ledgerGroup: read('ledgerGroup'),
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
      timeoutSeconds: read('sftpTimeout') ?? DEFAULTS.sftpTimeout,
      minBytesPerSecond: read('sftpMinRate') ?? DEFAULTS.sftpMinRate,
    },
    transferLog: {
      files: read('transferLog') ?? [],
      root: transferLogRoot(read('transferLogRoot'), pick('transferLogRoot')?.from),
      timeZone: timeZoneSetting(read('transferLogTimeZone'), pick('transferLogTimeZone')?.from),
      clockSlackSeconds: read('transferLogClockSlack') ?? DEFAULTS.transferLogClockSlack,
    },
    quick: read('quick') ?? false,
    decode: {
      pgpKeyPath: read('pgpKey'),
      pgpVerifyKeyPath: read('pgpVerifyKey'),
      pgpPassphrase: read('pgpPassphrase'),
      maxInflateRatio: read('maxInflateRatio') ?? DEFAULTS.maxInflateRatio,
      maxDecodedBytes: read('maxDecodedBytes') ?? DEFAULTS.maxDecodedBytes,
    },
  };
}
