import { UsageError } from '../errors.js';
import type { Expect } from '../calendar/expect.js';
import { parseDuration } from '../durations.js';
import { globToRegExp } from '../intake/names.js';
import { parseExpect } from './calendarSettings.js';
import { wholeNumber } from './configFile.js';
import { OPTION_TABLE, type OptionKind, type OptionSpec, type SettingKey } from './optionTable.js';
import type { Picked } from './settingPicker.js';

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

/** A file name pattern that cannot become a matcher (`[z-a]`) is refused with the setting that gave it. */
export function namePattern(pattern: string, from: string): string {
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

/** A setting's value, parsed by its kind (OptionSpec.kind). */
export type SettingValue<K extends SettingKey> = KindValue[(typeof OPTION_TABLE)[K]['kind']];

/** Reads one setting of a partner: its value parsed by its kind, or undefined when nothing set it. */
export type SettingReader = <K extends SettingKey>(key: K) => SettingValue<K> | undefined;

/** The reader over one partner's picker (settingPicker.ts): the only way a setting's text becomes its value. */
export function settingReader(pick: (key: SettingKey) => Picked | undefined): SettingReader {
  return <K extends SettingKey>(key: K): SettingValue<K> | undefined => {
    const picked = pick(key);
    if (picked === undefined) return undefined;
    const spec: OptionSpec = OPTION_TABLE[key];
    return (PARSE[spec.kind] as (p: Picked, spec: OptionSpec) => SettingValue<K>)(picked, spec);
  };
}
