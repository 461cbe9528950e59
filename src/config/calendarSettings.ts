import { UsageError } from '../errors.js';
import { minutesOfDay, weekdaysOf, type Expect } from '../calendar/expect.js';
import { holidayCodeProblem } from '../calendar/holidays.js';
import { parseDuration } from '../durations.js';
import { isIanaZone, zoneGuess } from '../layout/values/timeZones.js';
import { isObject, refuseUnknownKeys } from './configFile.js';
import type { Picked } from './settingPicker.js';
import { wholeNumber, type NumberRange } from './valueRules.js';

export const EXPECT_KEYS = ['every', 'by', 'timeZone', 'holidays', 'files', 'warnAfter', 'errorAfter'];
/** How many files a day's delivery may be. */
export const EXPECT_FILES: NumberRange = { min: 1, max: 10_000 };
const EXPECT_EXAMPLE = '{"every": "business day", "by": "04:00", "timeZone": "Europe/Amsterdam", "holidays": "NL"}';

/** A partner's expected deliveries (calendar/expect.ts), each key checked and named when wrong. */
export function parseExpect(picked: Picked): Expect | null {
  if (picked.value === null) return null;
  if (!isObject(picked.value)) throw new UsageError(`${picked.from}: expected an object such as ${EXPECT_EXAMPLE}`);
  const expectation = picked.value;
  refuseUnknownKeys(expectation, EXPECT_KEYS, picked.from);
  const at = (key: string) => `${picked.from}."${key}"`;
  const weekdays = weekdaysOf(expectation.every ?? 'day');
  if (!weekdays) {
    throw new UsageError(
      `${at('every')}: expected "day", "business day" or a list of weekdays such as ["Mon", "Thu"], got ${JSON.stringify(expectation.every)}`,
    );
  }
  if (expectation.by === undefined) throw new UsageError(`${at('by')}: required: the local time a day's files are due by, such as "04:00"`);
  if (minutesOfDay(expectation.by) === null)
    throw new UsageError(`${at('by')}: expected a time of day such as "04:00", got ${JSON.stringify(expectation.by)}`);
  const zone = expectation.timeZone;
  if (zone === undefined) throw new UsageError(`${at('timeZone')}: required: the partner's zone, an IANA name such as "Europe/Amsterdam"`);
  if (typeof zone !== 'string' || !isIanaZone(zone)) {
    const guess = typeof zone === 'string' ? zoneGuess(zone) : undefined;
    throw new UsageError(
      `${at('timeZone')}: expected an IANA time zone such as "Europe/Amsterdam" or "UTC", got ${JSON.stringify(zone)}${guess ? ` (${guess})` : ''}`,
    );
  }
  let holidays: string | undefined;
  if (expectation.holidays !== undefined) {
    const problem =
      typeof expectation.holidays === 'string'
        ? holidayCodeProblem(expectation.holidays)
        : 'expected a country or region code such as "NL" or "DE-BY"';
    if (problem) throw new UsageError(`${at('holidays')}: ${problem}`);
    holidays = (expectation.holidays as string).trim().toUpperCase();
  }
  const files = expectation.files === undefined ? 1 : wholeNumber(expectation.files);
  if (!(files >= EXPECT_FILES.min && files <= EXPECT_FILES.max)) {
    throw new UsageError(
      `${at('files')}: expected a whole number from ${EXPECT_FILES.min} to ${EXPECT_FILES.max}, got ${JSON.stringify(expectation.files)}`,
    );
  }
  const duration = (key: string, fallback: number) => {
    if (expectation[key] === undefined) return fallback;
    const n = parseDuration(expectation[key]);
    if (n === null) throw new UsageError(`${at(key)}: expected a duration such as 30m, 1h or 24h, got ${JSON.stringify(expectation[key])}`);
    return n;
  };
  const warnAfterSeconds = duration('warnAfter', 0);
  const errorAfterSeconds = duration('errorAfter', 24 * 3600);
  if (errorAfterSeconds < warnAfterSeconds) {
    throw new UsageError(`${at('errorAfter')}: must not be shorter than "warnAfter" (${JSON.stringify(expectation.warnAfter)})`);
  }
  const by = String(expectation.by).trim().padStart(5, '0');
  const every =
    typeof expectation.every === 'string' || expectation.every === undefined
      ? String(expectation.every ?? 'day')
      : (expectation.every as string[]).join(', ');
  return { every, weekdays, holidays, by, timeZone: zone, files, warnAfterSeconds, errorAfterSeconds };
}
