import { monthKey, monthTable } from './monthNames.js';

/**
 * Date and timestamp patterns as partners document them (`dd/MM/yyyy`, `yyyy-MM-dd HH:mm:ss`,
 * `yyyy-MM-dd'T'HH:mm:ssXXX`, PayPal's `yyyy/MM/dd HH:mm:ss XX`): each compiles once to a
 * regular expression with the positions of its parts.
 *
 * `yy` is a two-digit year read as POSIX `strptime` reads `%y`: 69 to 99 are 1969 to 1999, 00
 * to 68 are 2000 to 2068 (a settlement date is never far from today; the pivot is fixed so that
 * a file reads the same whenever it is loaded). `X`, `XX` and `XXX` are an offset written in the
 * value (`-08`, `-0800`, `-08:00`, or `Z` for UTC). `MMM` and `MMMM` are a month's abbreviated and
 * full name (monthNames.ts), in English or a language of the layout's `locale`. `hh` and `h` are
 * the hour of a 12-hour clock (1 to 12), which `a` says is before or after noon: `AM`/`PM` in any
 * case, or the markers the column declares (`上午`/`下午`). A format without a year is read only
 * where the column says where the year comes from (`"year"`, reader/yearOf.ts): its parts then
 * have year 0.
 */
export interface DateParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** fractional seconds as written, without the point */
  frac: string;
  /** an offset written in the value itself (`X`, `XX`, `XXX`), as `+HH:MM` */
  offset?: string;
}

/** A month name: letters and marks (`März`, `févr`), with the dot some languages write after it. */
const MONTH_NAME = '[\\p{L}\\p{M}]+\\.?';

type Part = keyof DateParts | 'yy' | 'monthShort' | 'monthLong' | 'hour12' | 'dayPeriod';

/** The markers `a` reads by default: before noon, after noon (any case). */
export const DEFAULT_DAY_PERIODS: readonly [string, string] = ['AM', 'PM'];

/** Each token a format may use, as a whole run of one letter (`MMM` is one token, not `MM` and `M`). */
const TOKENS = new Map<string, [string, Part]>([
  ['yyyy', ['(\\d{4})', 'year']],
  ['yy', ['(\\d{2})', 'yy']],
  ['MMMM', [`(${MONTH_NAME})`, 'monthLong']],
  ['MMM', [`(${MONTH_NAME})`, 'monthShort']],
  ['MM', ['(\\d{2})', 'month']],
  ['M', ['(\\d{1,2})', 'month']],
  ['dd', ['(\\d{2})', 'day']],
  ['d', ['(\\d{1,2})', 'day']],
  ['HH', ['(\\d{2})', 'hour']],
  ['H', ['(\\d{1,2})', 'hour']],
  ['hh', ['(\\d{2})', 'hour12']],
  ['h', ['(\\d{1,2})', 'hour12']],
  ['a', ['', 'dayPeriod']],
  ['mm', ['(\\d{2})', 'minute']],
  ['ss', ['(\\d{2})', 'second']],
  ['SSS', ['(\\d{1,6})', 'frac']],
  ['XXX', ['(Z|[+-]\\d{2}:\\d{2})', 'offset']],
  ['XX', ['(Z|[+-]\\d{4})', 'offset']],
  ['X', ['(Z|[+-]\\d{2}(?:\\d{2})?)', 'offset']],
]);

/** The same part, whichever token wrote it: a format names each once. */
const SAME_PART: Partial<Record<Part, Part>> = { yy: 'year', month: 'month', monthShort: 'month', monthLong: 'month', hour12: 'hour' };
const partOf = (part: Part): Part => SAME_PART[part] ?? part;

/** What to write instead of a token this reader does not know, by its letter. */
const INSTEAD: Record<string, string> = {
  y: 'use yyyy (four digits) or yy (two)',
  Y: 'use yyyy: Y is the week-based year',
  u: 'use yyyy',
  M: 'use MMMM (full month name), MMM (abbreviated), MM or M (number)',
  L: 'use MMMM, MMM, MM or M',
  D: 'use dd or d: D is the day of the year',
  d: 'use dd or d',
  h: 'use hh or h (a 12-hour clock, with a), HH or H',
  K: 'use hh or h (1 to 12, with a): an hour 0 to 11 is not read',
  k: 'use HH or H',
  a: 'use a (one letter: AM/PM, or the column\'s "dayPeriods")',
  m: 'use mm',
  s: 'use ss',
  S: 'use SSS (the fraction of a second, 1 to 6 digits)',
  X: 'use X, XX or XXX (an offset written in the value)',
  x: 'use X, XX or XXX',
  Z: 'use XX (-0800) or XXX (-08:00)',
  z: 'use the column\'s "timeZone" or "timeZoneFrom": zone names in the value are not read',
  E: 'day names are not read: a value that writes one cannot be a date of this reader',
};

/** Why a run of one letter is not a token, and what to use instead. */
function unknownToken(run: string, format: string): string {
  const instead = INSTEAD[run[0]!];
  const use = instead ?? `quote text as '${run}' (tokens: ${[...TOKENS.keys()].join(' ')})`;
  return `has "${run}", which is not a token it reads: ${use}: "${format}"`;
}

/** The first year `yy` reads in the 1900s (POSIX): 69 is 1969, 68 is 2068. */
export const TWO_DIGIT_YEAR_PIVOT = 69;

/** `Z`, `-08`, `-0800` or `-08:00` as `+HH:MM`; undefined when the minutes are no minutes. */
function offsetParts(text: string): string | undefined {
  if (text === 'Z') return '+00:00';
  const digits = text.slice(1).replace(':', '');
  const hours = digits.slice(0, 2);
  const minutes = digits.length > 2 ? digits.slice(2) : '00';
  return Number(minutes) < 60 ? `${text[0]}${hours}:${minutes}` : undefined;
}

export interface CompiledFormat {
  problem?: string;
  parse?: (value: string) => DateParts | undefined;
  /** the value carries its own offset: no zone needed */
  hasOffset?: boolean;
  /** the format writes a year (else its parts have year 0, and the column says where the year comes from) */
  hasYear?: boolean;
}

/** What a column declares beside its format. */
export interface FormatOptions {
  /** the markers `a` reads, before noon and after noon (`["上午", "下午"]`); AM and PM by default */
  dayPeriods?: readonly [string, string];
  /** the column says where the year comes from: a format without one is read */
  yearless?: boolean;
}

/** A marker as a pattern: its letters in either case (`am`, `Pm`), anything else as written. */
function markerPattern(marker: string): string {
  return [...marker]
    .map((ch) => (ch.toLowerCase() !== ch.toUpperCase() ? `[${ch.toLowerCase()}${ch.toUpperCase()}]` : escape(ch)))
    .join('');
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compileDateFormat(
  format: string,
  timestamp: boolean,
  languages: readonly string[] = [],
  options: FormatOptions = {},
): CompiledFormat {
  const dayPeriods = options.dayPeriods ?? DEFAULT_DAY_PERIODS;
  // the longer marker first, so that one marker that begins another is not taken for it
  const periodSource = `(${[...dayPeriods]
    .sort((a, b) => b.length - a.length)
    .map(markerPattern)
    .join('|')})`;
  const periodOf = (text: string) => dayPeriods.findIndex((m) => m.toLowerCase() === text.toLowerCase());
  let source = '';
  const parts: Part[] = [];
  for (let i = 0; i < format.length;) {
    if (format[i] === "'") {
      const end = format.indexOf("'", i + 1);
      if (end === -1) return { problem: `has an unclosed quote: "${format}"` };
      source += escape(format.slice(i + 1, end));
      i = end + 1;
      continue;
    }
    if (/[A-Za-z]/.test(format[i]!)) {
      let end = i + 1;
      while (format[end] === format[i]) end++;
      const run = format.slice(i, end);
      const token = TOKENS.get(run);
      if (!token) return { problem: unknownToken(run, format) };
      if (parts.some((p) => partOf(p) === partOf(token[1]))) return { problem: `names ${run} twice: "${format}"` };
      source += token[1] === 'dayPeriod' ? periodSource : token[0];
      parts.push(token[1]);
      i = end;
      continue;
    }
    source += escape(format[i]!);
    i++;
  }
  const needed: Part[] = timestamp ? ['year', 'month', 'day', 'hour', 'minute'] : ['year', 'month', 'day'];
  const missing = needed.filter((p) => !parts.some((q) => partOf(q) === p) && !(p === 'year' && options.yearless));
  if (missing.length > 0) {
    const yearHint = missing.includes('year') ? ' (a file that writes none: say where the year comes from with the column\'s "year")' : '';
    return { problem: `lacks ${missing.join(', ')}: "${format}"${yearHint}` };
  }
  if (parts.includes('hour12') !== parts.includes('dayPeriod'))
    return {
      problem: parts.includes('hour12')
        ? `has a 12-hour clock (hh or h) without its AM/PM marker (a): "${format}"`
        : `has an AM/PM marker (a) without a 12-hour clock (hh or h): "${format}"`,
    };
  if (!timestamp && parts.some((p) => !['year', 'month', 'day'].includes(partOf(p)) && p !== 'dayPeriod'))
    return { problem: `has a time in a date column: "${format}"` };
  const named = parts.find((p) => p === 'monthShort' || p === 'monthLong');
  const table = named ? monthTable(named === 'monthShort' ? 'short' : 'long', languages) : undefined;
  if (table?.problem) return { problem: `${named === 'monthShort' ? 'MMM' : 'MMMM'}: ${table.problem}` };
  // a date written with a month name may end with a dot its format does not write (`3 nov 2021.`)
  const end = named && !format.endsWith('.') ? '\\.?' : '';
  const pattern = new RegExp(`^${source}${end}$`, 'u');
  return {
    hasOffset: parts.includes('offset'),
    hasYear: parts.some((p) => partOf(p) === 'year'),
    parse(value) {
      const regExpExecArray = pattern.exec(value);
      if (!regExpExecArray) return undefined;
      const out: DateParts = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, frac: '' };
      let afterNoon = false;
      for (let partIndex = 0; partIndex < parts.length; partIndex++) {
        const part = parts[partIndex]!;
        const text = regExpExecArray[partIndex + 1]!;
        if (part === 'frac') out.frac = text;
        else if (part === 'offset') {
          const offset = offsetParts(text);
          if (offset === undefined) return undefined;
          out.offset = offset;
        } else if (part === 'yy') {
          const twoDigitYear = Number(text);
          out.year = twoDigitYear >= TWO_DIGIT_YEAR_PIVOT ? 1900 + twoDigitYear : 2000 + twoDigitYear;
        } else if (part === 'hour12') {
          const hour = Number(text);
          if (hour < 1 || hour > 12) return undefined;
          out.hour = hour % 12;
        } else if (part === 'dayPeriod') {
          afterNoon = periodOf(text) === 1;
        } else if (part === 'monthShort' || part === 'monthLong') {
          const month = table!.months.get(monthKey(text));
          if (month === undefined) return undefined;
          out.month = month;
        } else out[part] = Number(text);
      }
      // 12 AM is midnight (0), 12 PM noon (12); `hour12` has read 12 as 0
      if (afterNoon) out.hour += 12;
      return out;
    },
  };
}
