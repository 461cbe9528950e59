import { isCalendarDate } from '../reader/columnValues.js';
import { compileDateFormat, type DateParts } from '../values/dateFormat.js';

/** The format every sampled value of a column reads with, and what the sample could not decide. */
export interface DateGuess {
  type: 'date' | 'timestamp';
  format: string;
  /** languages besides English whose month names the values use (the layout's `locale`) */
  locale?: string;
  /** what the sample leaves open, said plainly (day-first or month-first, a language) */
  unsure?: string;
}

/** Languages whose month names `layout suggest` recognises, besides English (always read). */
const LOCALES = ['de', 'fr', 'it', 'es', 'pt', 'nl', 'pl', 'cs', 'sk', 'hu', 'ro', 'hr', 'sl', 'sv', 'da', 'nb', 'fi', 'tr', 'ca'];

interface MonthName {
  month: number;
  /** written in full (`MMMM`) rather than abbreviated (`MMM`); both when they are the same text */
  full: boolean;
  short: boolean;
  locales: Set<string>;
}

const stripDot = (word: string) => word.toLowerCase().replace(/\.$/, '');

let monthNames: Map<string, MonthName> | undefined;

/** Every month name Intl knows in English and LOCALES, abbreviated and in full, lower case and without a trailing dot. */
function monthNameTable(): Map<string, MonthName> {
  if (monthNames) return monthNames;
  const table = new Map<string, MonthName>();
  for (const locale of ['en', ...LOCALES])
    for (const style of ['short', 'long'] as const)
      for (const options of [{ month: style }, { month: style, day: 'numeric' }] as Intl.DateTimeFormatOptions[]) {
        const format = new Intl.DateTimeFormat(locale, { ...options, timeZone: 'UTC' });
        for (let month = 1; month <= 12; month++) {
          const part = format.formatToParts(Date.UTC(2021, month - 1, 15)).find((p) => p.type === 'month');
          if (!part) continue;
          const word = stripDot(part.value);
          const entry = table.get(word) ?? { month, full: false, short: false, locales: new Set<string>() };
          if (style === 'long') entry.full = true;
          else entry.short = true;
          entry.locales.add(locale);
          table.set(word, entry);
        }
      }
  monthNames = table;
  return table;
}

const NUMERIC_DATES = [
  'yyyy-MM-dd',
  'dd/MM/yyyy',
  'MM/dd/yyyy',
  'd/M/yyyy',
  'M/d/yyyy',
  'dd.MM.yyyy',
  'd.M.yyyy',
  'dd.MM.yy',
  'yyyy/MM/dd',
  'yyyy.MM.dd.',
  'yyyy.MM.dd',
  'dd-MM-yyyy',
  'MM-dd-yyyy',
  'dd/MM/yy',
  'MM/dd/yy',
  'd/M/yy',
  'M/d/yy',
  'yyyyMMdd',
];
const NAMED_DATES = ['dd MMM yyyy', 'd MMM yyyy', 'dd-MMM-yyyy', 'd-MMM-yyyy', 'dd MMM yy', 'dd-MMM-yy', 'MMM d, yyyy', 'd. MMM yyyy'];
const DATES = [...NUMERIC_DATES, ...NAMED_DATES.flatMap((f) => [f, `${f}.`, f.replace('MMM', 'MMMM'), `${f.replace('MMM', 'MMMM')}.`])];
const CLOCKS = ['HH:mm:ss', 'HH:mm:ss.SSS', 'HH:mm', 'H:mm:ss', 'H:mm'];
const ZONES = ['', 'X', 'XXX', 'XX', ' X', ' XX', ' XXX', " 'UTC'", " 'Z'"];
const TIMESTAMPS = DATES.flatMap((date) =>
  ["'T'", ' ', ', '].flatMap((between) =>
    CLOCKS.filter((clock) => between !== "'T'" || clock.startsWith('HH')).flatMap((clock) =>
      ZONES.map((zone) => `${date}${between}${clock}${zone}`),
    ),
  ),
);

/** A format with its month names read as numbers, so that the parser on main reads it (`MMM` as `MM`). */
const numericFormat = (format: string) => format.replace(/M{3,4}/, 'MM');
const parsers = new Map<string, (value: string) => DateParts | undefined>();
function parserFor(format: string, timestamp: boolean) {
  const key = `${timestamp}${format}`;
  let parse = parsers.get(key);
  if (!parse) parsers.set(key, (parse = compileDateFormat(numericFormat(format), timestamp).parse!));
  return parse;
}

const MONTH_WORD = /\p{L}{3,}\.?/u;

/** A value with its month name (if it has one) as a two-digit number, and that name. */
function withMonthNumber(value: string): { text: string; name?: MonthName & { word: string } } {
  const m = MONTH_WORD.exec(value);
  if (!m) return { text: value };
  const name = monthNameTable().get(stripDot(m[0]));
  if (!name) return { text: value };
  // a dot after the letters is the abbreviation's own (`Sept.`): the month token takes it
  const word = m[0];
  return {
    text: `${value.slice(0, m.index)}${String(name.month).padStart(2, '0')}${value.slice(m.index + word.length)}`,
    name: { ...name, word },
  };
}

const reads = (parse: (value: string) => DateParts | undefined, value: string, timestamp: boolean) => {
  const p = parse(value);
  return p !== undefined && isCalendarDate(p.year, p.month, p.day) && (!timestamp || (p.hour < 24 && p.minute < 60 && p.second < 60));
};

/** `dd/MM` for `MM/dd` and back: the format that reads the same values the other way round. */
const swapDayMonth = (format: string) => format.replace(/(?<!M)(MM|M)(?!M)|dd|d/g, (t) => ({ MM: 'dd', M: 'd', dd: 'MM', d: 'M' })[t]!);
const dayFirst = (format: string) => format.indexOf('d') < format.indexOf('M');

/**
 * The date or timestamp format all of a column's sampled values read with (never the first
 * value alone), or undefined. Month names are looked up in English and, failing that, the
 * languages Intl names them in; a numeric day and month both 12 or below in every row is said
 * to be undecided, and read day-first only where the file's amounts have a decimal comma.
 */
export function guessDateFormat(values: readonly string[], decimalComma: boolean): DateGuess | undefined {
  if (values.length === 0 || !values.every((v) => /\d/.test(v) && v.length >= 6 && v.length <= 40)) return undefined;
  const converted = values.map(withMonthNumber);
  const named = converted.filter((c) => c.name).length;
  if (named !== 0 && named !== values.length) return undefined;
  const texts = converted.map((c) => c.text);
  for (const [timestamp, formats] of [
    [false, DATES],
    [true, TIMESTAMPS],
  ] as const) {
    const fitting = formats.filter(
      (format) => /M{3,4}/.test(format) === named > 0 && texts.every((t) => reads(parserFor(format, timestamp), t, timestamp)),
    );
    if (fitting.length === 0) continue;
    // `X` reads `Z` and any offset; where the values write one, the token of its own shape (`XX` for -0700, `XXX` for -07:00)
    if (texts.some((t) => /[+-]\d{2}:?\d{2}$/.test(t))) fitting.sort((a, b) => Number(/(?<!X)X$/.test(a)) - Number(/(?<!X)X$/.test(b)));
    const names = converted.map((c) => c.name!).filter(Boolean);
    // abbreviated unless a name is written in full where its abbreviation differs
    const full = names.length > 0 && names.every((n) => n.full) && names.some((n) => !n.short);
    const byStyle = fitting.filter((f) => !/MMM/.test(f) || /MMMM/.test(f) === full);
    let format = byStyle[0] ?? fitting[0]!;
    let unsure: string | undefined;
    const swapped = swapDayMonth(format);
    if (named === 0 && swapped !== format && byStyle.includes(swapped)) {
      const first = decimalComma ? (dayFirst(format) ? format : swapped) : dayFirst(format) ? swapped : format;
      format = first;
      unsure =
        `${values[0]}: no day over 12 in ${values.length} rows; read as ${dayFirst(first) ? 'dd/MM (the amounts have a decimal comma)' : 'MM/dd (a US export?)'}` +
        ` — check, and write "${swapDayMonth(first)}" if it is ${dayFirst(first) ? 'month' : 'day'}-first`;
    }
    let locale: string | undefined;
    if (names.length > 0 && !names.every((n) => n.locales.has('en'))) {
      const shared = LOCALES.filter((l) => names.every((n) => n.locales.has(l)));
      locale = shared[0];
      if (locale === undefined) return undefined;
      if (shared.length > 1)
        unsure = `month names like "${names[0]!.word}" are ${shared.join(', ')}: "${locale}" taken, name the partner's language in "locale" if it is another`;
    }
    return { type: timestamp ? 'timestamp' : 'date', format, ...(locale ? { locale } : {}), ...(unsure ? { unsure } : {}) };
  }
  return undefined;
}

/** Values that are a time of day alone (`11:05:56`, `6:11:59`): the format that reads them. */
export function guessClockFormat(values: readonly string[]): string | undefined {
  if (values.length === 0) return undefined;
  return CLOCKS.find((clock) => {
    const parse = parserFor(`yyyy-MM-dd ${clock}`, true);
    return values.every((v) => reads(parse, `2000-01-01 ${v}`, true));
  });
}
