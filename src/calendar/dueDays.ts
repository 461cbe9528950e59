import { parseZone, wallClockOffset } from '../layout/values/timeZones.js';
import { WEEKDAY_NAMES, type Expect } from './expect.js';
import { holidayOn } from './holidays.js';

/** One local day of a partner's calendar, and whether a delivery is owed for it. */
export interface DueDay {
  /** `YYYY-MM-DD` in the partner's zone */
  day: string;
  /** `Mon` … `Sun` */
  weekday: string;
  owed: boolean;
  /** why a day is not owed: `weekend`, `not a delivery day`, or the holiday's name */
  notOwedBecause?: string;
  /** the instant its files are due by (ms since the epoch) */
  dueBy: number;
}

const dayFormatters = new Map<string, Intl.DateTimeFormat>();

/** The local day (`YYYY-MM-DD`) of an instant in an IANA zone. */
export function localDay(instantMs: number, timeZone: string): string {
  let f = dayFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormatters.set(timeZone, f);
  }
  return f.format(new Date(instantMs));
}

/** `day` plus `count` days. */
export function addDays(day: string, count: number): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + count);
  return date.toISOString().slice(0, 10);
}

/** ISO weekday, 1 Monday … 7 Sunday. */
export function isoWeekday(day: string): number {
  return new Date(`${day}T00:00:00Z`).getUTCDay() || 7;
}

/** The instant of local `HH:mm` on `day` in `timeZone`. */
export function wallClock(day: string, hhmm: string, timeZone: string): number {
  const [y, mo, d] = day.split('-').map(Number) as [number, number, number];
  const [h, mi] = hhmm.split(':').map(Number) as [number, number];
  const offset = wallClockOffset(parseZone(timeZone)!, y, mo, d, h, mi);
  return Date.UTC(y, mo - 1, d, h, mi) - offset * 60_000;
}

/** One day judged by the partner's calendar: owed or not, and when its files are due. */
export function dueDay(expect: Expect, day: string): DueDay {
  const weekday = isoWeekday(day);
  const base = { day, weekday: WEEKDAY_NAMES[weekday - 1]!, dueBy: wallClock(day, expect.by, expect.timeZone) };
  if (!expect.weekdays.includes(weekday)) {
    const weekend = weekday >= 6 && expect.weekdays.every((w) => w <= 5);
    return { ...base, owed: false, notOwedBecause: weekend ? 'weekend' : 'not a delivery day' };
  }
  const holiday = expect.holidays ? holidayOn(expect.holidays, day) : undefined;
  if (holiday) return { ...base, owed: false, notOwedBecause: holiday };
  return { ...base, owed: true };
}

/** Every day from `first` to `last` (local days, both included), oldest first. */
export function daysBetween(first: string, last: string): string[] {
  const days: string[] = [];
  for (let d = first; d <= last && days.length < 5000; d = addDays(d, 1)) days.push(d);
  return days;
}
