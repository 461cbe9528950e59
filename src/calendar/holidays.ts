import { createRequire } from 'node:module';
import type HolidaysClass from 'date-holidays';

type Holidays = HolidaysClass;

/**
 * date-holidays is loaded on first use, not with the command: its rules of every country take
 * about 0.25 s to load, which a run or `status` without `"expect"` should not pay (the idle run's
 * budget is 0.4 s, docs/BENCHMARKS.md).
 */
let library: typeof HolidaysClass | undefined;
function holidaysLibrary(): typeof HolidaysClass {
  // in the shipped bundle (a .cjs chunk) its own chunk, holidays.cjs, which bin/codeCache.cjs
  // compiles with its cache (scripts/bundle.mjs); elsewhere the package
  const here = import.meta.url;
  library ??= createRequire(here)(here.endsWith('.cjs') ? './holidays.cjs' : 'date-holidays') as typeof HolidaysClass;
  return library;
}
const newHolidays = (country?: string, region?: string): Holidays => {
  const Library = holidaysLibrary();
  return country === undefined ? new Library() : region ? new Library(country, region) : new Library(country);
};

/**
 * Public holidays from date-holidays, a well-kept library of the world's holiday rules (countries
 * and their regions, movable feasts, substitute days), so that no one keeps a list by hand. Only
 * its `public` holidays count: its `bank`, `school`, `optional` and `observance` days are working
 * days for a settlement partner unless its region says otherwise.
 */
const calendars = new Map<string, Holidays>();
const years = new Map<string, Set<string>>();

/** `NL`, `DE-BY`, `us-ca`: the country and its region, upper-cased. */
function split(code: string): [string, string | undefined] {
  const [country, region] = code.trim().toUpperCase().split('-');
  return [country!, region];
}

/** Why a holiday code is not one date-holidays knows, if it is not. */
export function holidayCodeProblem(code: string): string | undefined {
  // asked once per code: the library's lists cost ~1 ms to make, and a config of 20,000 partners asks it of each
  if (!codeProblems.has(code)) codeProblems.set(code, codeProblem(code));
  return codeProblems.get(code);
}

const codeProblems = new Map<string, string | undefined>();

function codeProblem(code: string): string | undefined {
  const [country, region] = split(code);
  const countries = newHolidays().getCountries() as Record<string, string>;
  if (!countries[country]) return `"${code}" is not a country code date-holidays knows (such as NL, DE, GB, US)`;
  if (region === undefined) return undefined;
  const regions = (newHolidays().getStates(country) ?? {}) as Record<string, string>;
  if (!regions[region]) {
    const known = Object.keys(regions);
    return `"${code}": ${country} has no region ${region}${known.length ? ` (known: ${known.join(', ')})` : ''}`;
  }
  return undefined;
}

/** The public holidays of `code` in `year`, as local days `YYYY-MM-DD`. */
function publicHolidays(code: string, year: number): Set<string> {
  const key = `${code.toUpperCase()}|${year}`;
  let days = years.get(key);
  if (!days) {
    const [country, region] = split(code);
    let calendar = calendars.get(code.toUpperCase());
    if (!calendar) {
      calendar = newHolidays(country, region);
      calendars.set(code.toUpperCase(), calendar);
    }
    days = new Set(
      calendar
        .getHolidays(year)
        .filter((h) => h.type === 'public')
        .map((h) => h.date.slice(0, 10)),
    );
    years.set(key, days);
  }
  return days;
}

/** The name of the public holiday on `day` (`YYYY-MM-DD`) in `code`, or undefined on a working day. */
export function holidayOn(code: string, day: string): string | undefined {
  if (!publicHolidays(code, Number(day.slice(0, 4))).has(day)) return undefined;
  const [country, region] = split(code);
  const found = newHolidays(country, region).isHoliday(new Date(`${day}T12:00:00Z`));
  const publicOne = Array.isArray(found) ? found.find((h) => h.type === 'public') : undefined;
  return publicOne?.name ?? 'public holiday';
}
