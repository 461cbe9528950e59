/**
 * Month names as `Intl.DateTimeFormat` writes them, for the `MMM` (abbreviated) and `MMMM`
 * (full) tokens of date formats: English always (the US and the British forms, `Sep` and
 * `Sept`), and the languages a layout's `locale` names. Both the form a month takes inside a
 * date (German `März`, Czech `listopadu`) and the one it takes alone (`Mär`, `listopad`) are
 * known. Matched without regard to case, a trailing dot not part of the name (`févr.` and
 * `févr` alike).
 */

/** English, always accepted: `en` writes `Sep`, `en-GB` `Sept`. */
export const ENGLISH = ['en', 'en-GB'] as const;

export type MonthWidth = 'short' | 'long';

/** The canonical tag of a BCP 47 language tag Intl can write dates in, or why it cannot. */
export function languageTag(tag: unknown): { tag: string } | { problem: string } {
  if (typeof tag !== 'string' || tag.trim() === '') return { problem: 'must be a BCP 47 language tag such as "de" or "fr-CH"' };
  let canonical: string;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0]!;
  } catch {
    return { problem: `${JSON.stringify(tag)} is not a BCP 47 language tag (like "de" or "fr-CH")` };
  }
  if (Intl.DateTimeFormat.supportedLocalesOf([canonical]).length === 0)
    return { problem: `${JSON.stringify(tag)} is not a language whose month names Intl knows` };
  return { tag: canonical };
}

/** How a name is compared: lower case, composed, without a trailing dot. */
export function monthKey(name: string): string {
  return name.normalize('NFC').toLowerCase().replace(/\.$/, '');
}

/** The twelve names of one language in one width, as dates write them and as they stand alone. */
function namesOf(language: string, width: MonthWidth): string[][] {
  const alone = new Intl.DateTimeFormat(language, { month: width, timeZone: 'UTC' });
  const inDate = new Intl.DateTimeFormat(language, { month: width, day: 'numeric', timeZone: 'UTC' });
  const months: string[][] = [];
  for (let month = 0; month < 12; month++) {
    const day = new Date(Date.UTC(2021, month, 15));
    const written = [alone.format(day), inDate.formatToParts(day).find((p) => p.type === 'month')?.value ?? ''];
    // some languages write the month as a number inside a date (Czech `15. 1.`): no name
    months.push([...new Set(written.filter((n) => n !== '' && !/\d/.test(n)).map(monthKey))]);
  }
  return months;
}

export interface MonthTable {
  /** the month (1 to 12) a name stands for, by its `monthKey` */
  months: ReadonlyMap<string, number>;
  /** a name two of the languages give to different months, said in full */
  problem?: string;
}

const MONTH_NAMES = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const tables = new Map<string, MonthTable>();

/**
 * Every name of the width in English and `languages` (canonical tags), each with its month. A
 * name that two languages give to different months (Czech `listopad` is November, Croatian
 * October) cannot be read: the table says so.
 */
export function monthTable(width: MonthWidth, languages: readonly string[] = []): MonthTable {
  const all = [...ENGLISH, ...languages.filter((l) => !(ENGLISH as readonly string[]).includes(l))];
  const cacheKey = `${width} ${all.join(' ')}`;
  const cached = tables.get(cacheKey);
  if (cached) return cached;
  const months = new Map<string, number>();
  const givenBy = new Map<string, string>();
  let problem: string | undefined;
  for (const language of all) {
    namesOf(language, width).forEach((names, i) => {
      for (const name of names) {
        const before = months.get(name);
        if (before === undefined) {
          months.set(name, i + 1);
          givenBy.set(name, language);
        } else if (before !== i + 1) {
          problem ??= `"${name}" is ${MONTH_NAMES[before - 1]} in ${givenBy.get(name)} and ${MONTH_NAMES[i]} in ${language}: a date cannot say which (name fewer languages in "locale")`;
        }
      }
    });
  }
  const table: MonthTable = { months, ...(problem ? { problem } : {}) };
  tables.set(cacheKey, table);
  return table;
}
