import Holidays from 'date-holidays';

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
  const [country, region] = split(code);
  const countries = new Holidays().getCountries() as Record<string, string>;
  if (!countries[country]) return `"${code}" is not a country code date-holidays knows (such as NL, DE, GB, US)`;
  if (region === undefined) return undefined;
  const regions = (new Holidays().getStates(country) ?? {}) as Record<string, string>;
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
      calendar = region ? new Holidays(country, region) : new Holidays(country);
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
  const found = (region ? new Holidays(country, region) : new Holidays(country)).isHoliday(new Date(`${day}T12:00:00Z`));
  const publicOne = Array.isArray(found) ? found.find((h) => h.type === 'public') : undefined;
  return publicOne?.name ?? 'public holiday';
}
