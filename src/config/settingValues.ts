import { UsageError } from '../errors.js';
import type { Expect } from '../calendar/expect.js';
import { parseDuration } from '../durations.js';
import { globToRegExp } from '../intake/names.js';
import { parseExpect } from './calendarSettings.js';
import { relativeTo } from './configFile.js';
import { OPTION_TABLE, type OptionKind, type OptionSpec, type SettingKey } from './optionTable.js';
import type { PartnerPicks, Picked } from './settingPicker.js';
import { nameList, NOT_BLANK, switchValue, wholeNumber, type NumberRange } from './valueRules.js';

/** What each kind of setting becomes. */
export interface KindValue {
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

/** A number out of the option's range is refused with the setting that gave it, and why the least is what it is. */
function inRange(n: number, p: Picked, spec: OptionSpec, expected: string): number {
  const { min, max } = numberRange(spec);
  const why = spec.range?.why;
  if (spec.kind === 'duration' && n < min) {
    throw new UsageError(`${p.from}: ${JSON.stringify(p.value)} is too short: at least ${min}s${why ? ` (${why})` : ''}`);
  }
  if (!(n >= min && n <= max))
    throw new UsageError(`${p.from}: expected ${expected} from ${min} to ${max}, got ${JSON.stringify(p.value)}`);
  return n;
}

/** The least and greatest a number setting takes (OptionSpec.range, else 0 and the largest exact whole number). */
export const numberRange = (spec: OptionSpec): NumberRange => ({
  min: spec.range?.min ?? 0,
  max: spec.range?.max ?? Number.MAX_SAFE_INTEGER,
});

/** An empty or blank text is refused as itself, naming the setting: a path left empty by a template is never the config file's folder. */
function refuseBlank(p: Picked, spec: OptionSpec): void {
  if (typeof p.value === 'string' && !NOT_BLANK.test(p.value)) {
    const give = spec.path ? "the path (. for the config file's own folder)" : 'a value';
    throw new UsageError(`${p.from}: is ${p.value === '' ? 'empty' : 'blank'}: give ${give}, or leave the setting out`);
  }
}

/** A text setting's value: non-blank (an empty path or URL is a mistake, never "here"), one of its choices, of its format. */
function textValue(p: Picked, spec: OptionSpec): string {
  if (typeof p.value !== 'string') throw new UsageError(`${p.from}: expected a string, got ${JSON.stringify(p.value)}`);
  refuseBlank(p, spec);
  if (spec.choices && !spec.choices.includes(p.value)) {
    throw new UsageError(`${p.from}: "${p.value}" must be one of ${spec.choices.join(', ')}`);
  }
  if (spec.format && !spec.format.pattern.test(p.value)) throw new UsageError(`${p.from}: "${p.value}" must be ${spec.format.says}`);
  return p.value;
}

/** A path from the config file is taken relative to the file's folder (Picked.base), not to wherever cron starts. */
const placed = (p: Picked, path: string): string => relativeTo(p.base, path);

/**
 * One parser per kind of option (OptionSpec.kind): the only place a setting's text becomes its
 * value. Each reads by the grammar of valueRules.ts, whose patterns the JSON Schema gives.
 */
const PARSE: { [K in OptionKind]: (p: Picked, spec: OptionSpec) => KindValue[K] } = {
  string: (p, spec) => {
    const text = textValue(p, spec);
    return spec.path ? placed(p, text) : text;
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
  globs: (p, spec) => {
    refuseBlank(p, spec);
    const list = nameList(p.value, { minItems: 0 });
    if (list === undefined) throw new UsageError(`${p.from}: expected file name patterns, got ${JSON.stringify(p.value)}`);
    return list.map((glob) => namePattern(glob, p.from));
  },
  // repeated flags, a JSON array (or one string) in the file, or commas in the environment
  paths: (p, spec) => {
    refuseBlank(p, spec);
    const list = nameList(p.value, { minItems: 1 });
    if (list === undefined) throw new UsageError(`${p.from}: expected file paths, got ${JSON.stringify(p.value)}`);
    return spec.path ? list.map((path) => placed(p, path)) : list;
  },
  layout: (p) => p.value,
  expect: (p) => parseExpect(p),
  // commander gives a flag without a value as true
  switch: (p) => {
    const value = switchValue(p.value);
    if (value === undefined) throw new UsageError(`${p.from}: expected true or false (1 or 0, yes or no), got ${JSON.stringify(p.value)}`);
    return value;
  },
};

const usablePatterns = new Set<string>();

/** A file name pattern that cannot become a matcher (`[z-a]`) is refused with the setting that gave it. */
export function namePattern(pattern: string, from: string): string {
  // a pattern is compiled once to be checked: a config of 20,000 partners on one pattern compiles it once
  if (usablePatterns.has(pattern)) return pattern;
  try {
    globToRegExp(pattern);
    usablePatterns.add(pattern);
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

/** A setting's value, parsed by its kind (OptionSpec.kind). */
export type SettingValue<K extends SettingKey> = KindValue[(typeof OPTION_TABLE)[K]['kind']];

/** Reads one setting of a partner: its value parsed by its kind, or undefined when nothing set it. */
export type SettingReader = <K extends SettingKey>(key: K) => SettingValue<K> | undefined;

/** A picked value parsed by its key's kind (OptionSpec.kind). */
function parsed<K extends SettingKey>(key: K, picked: Picked): SettingValue<K> {
  const spec: OptionSpec = OPTION_TABLE[key];
  return (PARSE[spec.kind] as (p: Picked, spec: OptionSpec) => SettingValue<K>)(picked, spec);
}

/** The reader over one partner's picker (settingPicker.ts): the only way a setting's text becomes its value. */
export function settingReader(pick: (key: SettingKey) => Picked | undefined): SettingReader {
  return <K extends SettingKey>(key: K): SettingValue<K> | undefined => {
    const picked = pick(key);
    return picked === undefined ? undefined : parsed(key, picked);
  };
}

/**
 * Each shared pick's value as read (ConfigPicks: one Picked for every partner that does not set
 * the key itself), by the pick: read once for all the partners of a config. A value that fails is
 * not kept, so each partner that reads it fails as it would have alone.
 */
const sharedValues = new WeakMap<Picked, unknown>();

/**
 * The reader over one partner's picks, as settingReader, that reads what the partner shares with
 * the others (every key but its own) once for all of them. The values are the same objects for
 * those partners: settings are read, never changed.
 */
export function partnerReader(picks: PartnerPicks): SettingReader {
  return <K extends SettingKey>(key: K): SettingValue<K> | undefined => {
    const picked = picks.pick(key);
    if (picked === undefined) return undefined;
    if (picks.owns(key)) return parsed(key, picked);
    if (sharedValues.has(picked)) return sharedValues.get(picked) as SettingValue<K>;
    const value = parsed(key, picked);
    sharedValues.set(picked, value);
    return value;
  };
}
