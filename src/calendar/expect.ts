/**
 * The deliveries a partner owes (`"expect"` in its settings), as dbt says a source's freshness:
 * which days, by what local time, in which zone, less which public holidays, how many files,
 * and how late a day may be before it is a warning and then an error. config/calendarSettings.ts reads
 * it from the config file; report/deliveries.ts judges the ledger against it.
 */
export interface Expect {
  /** as written: `day`, `business day`, or the weekdays */
  every: string;
  /** the ISO weekdays owed (1 Monday … 7 Sunday) */
  weekdays: number[];
  /** a country or region code of date-holidays (`NL`, `DE-BY`): its public holidays are never owed */
  holidays: string | undefined;
  /** the local time of day a day's files are due by, `HH:mm` */
  by: string;
  /** an IANA zone name: the partner's days and `by` are read there */
  timeZone: string;
  /** how many files make a day's delivery */
  files: number;
  warnAfterSeconds: number;
  errorAfterSeconds: number;
}

export const WEEKDAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

export const LONG_NAMES = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

/** `Mon`, `monday`, `MON` as an ISO weekday; null for anything else. */
export function weekdayNumber(text: string): number | null {
  const t = text.trim().toLowerCase();
  const at = LONG_NAMES.findIndex((name) => name === t || name.slice(0, 3) === t);
  return at < 0 ? null : at + 1;
}

/** The weekdays `every` owes: `day` all seven, `business day` Monday to Friday, or the list given; null when it is none of these. */
export function weekdaysOf(every: unknown): number[] | null {
  if (every === 'day') return [1, 2, 3, 4, 5, 6, 7];
  if (every === 'business day') return [1, 2, 3, 4, 5];
  if (!Array.isArray(every) || every.length === 0) return null;
  const days = every.map((d) => (typeof d === 'string' ? weekdayNumber(d) : null));
  if (days.some((d) => d === null)) return null;
  return [...new Set(days as number[])].sort();
}

/** `04:00`, `4:30`, `23:59`, white space around allowed: the one grammar of a time of day (the config's JSON Schema gives its source). */
export const TIME_OF_DAY = /^\s*([01]?\d|2[0-3]):([0-5]\d)\s*$/;

/** A time of day as TIME_OF_DAY writes it, as minutes after midnight; null otherwise. */
export function minutesOfDay(text: unknown): number | null {
  const m = typeof text === 'string' ? TIME_OF_DAY.exec(text) : null;
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}
