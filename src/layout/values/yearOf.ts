import type { Zone } from './timeZones.js';

/**
 * The year of a date written without one (`12/29`), from a place the layout declares, never
 * guessed: a year stated once (a title line, the file's name), or a day the rows are nearest
 * to (a period's end stated in the file, the day the file was delivered). "Nearest" is the rule
 * for a statement delivered early in January: delivered on 2027-01-03, `12/29` is 2026-12-29
 * (5 days before) and `01/02` is 2027-01-02; delivered on 2026-07-01, `12/31` is 2025-12-31
 * (182 days before, against 183 after). A tie goes to the earlier year.
 */
export type YearOf = (month: number, day: number) => number | undefined;

export interface Day {
  year: number;
  month: number;
  day: number;
}

const DAY_MS = 86_400_000;
const dayNumber = (d: Day) => Date.UTC(d.year, d.month - 1, d.day) / DAY_MS;
/** Whether the day exists in that year (29 February only in a leap year). */
const exists = (d: Day) => {
  const date = new Date(Date.UTC(d.year, d.month - 1, d.day));
  return date.getUTCFullYear() === d.year && date.getUTCMonth() === d.month - 1 && date.getUTCDate() === d.day;
};

/** Every date of the year stated (undefined for a day that year does not have). */
export function statedYear(year: number): YearOf {
  return (month, day) => (exists({ year, month, day }) ? year : undefined);
}

/** The year that puts the date nearest to `reference` (the year before, its own, or the next). */
export function nearestYear(reference: Day): YearOf {
  const from = dayNumber(reference);
  return (month, day) => {
    let best: number | undefined;
    let bestDistance = Infinity;
    for (const year of [reference.year - 1, reference.year, reference.year + 1]) {
      if (!exists({ year, month, day })) continue;
      const distance = Math.abs(dayNumber({ year, month, day }) - from);
      if (distance < bestDistance) {
        best = year;
        bestDistance = distance;
      }
    }
    return best;
  };
}

/** A stated figure as a year source: `2026` (that year) or `2027-01-31` (the day the rows are nearest to). */
export function yearSource(text: string): YearOf | undefined {
  const value = text.trim();
  if (/^\d{4}$/.test(value)) return statedYear(Number(value));
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!iso) return undefined;
  const reference = { year: Number(iso[1]), month: Number(iso[2]), day: Number(iso[3]) };
  return exists(reference) ? nearestYear(reference) : undefined;
}

/** The calendar day of an instant in a zone (a fixed offset in minutes, or an IANA name). */
export function dayIn(epochMs: number, zone: Zone): Day {
  if ('fixed' in zone) {
    const shifted = new Date(epochMs + zone.fixed * 60_000);
    return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
  }
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone.iana, year: 'numeric', month: 'numeric', day: 'numeric' }).formatToParts(
    new Date(epochMs),
  );
  const part = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { year: part('year'), month: part('month'), day: part('day') };
}

export const dayText = (date: Day): string =>
  `${String(date.year).padStart(4, '0')}-${String(date.month).padStart(2, '0')}-${String(date.day).padStart(2, '0')}`;
