/**
 * Instants as `Date.prototype.toISOString` writes them (`2026-12-01T02:00:01.500Z`), written and
 * read back by arithmetic on the time of day, each day's date written once: an audit of a year's
 * uploads writes and reads some six million of them, over a few hundred days, and a `Date` and its
 * text for each was a tenth of its CPU. The text is `toISOString`'s, character for character
 * (test/unit/isoInstants.test.ts holds the two equal).
 */

const DAY_MS = 86_400_000;
/** The latest instant a Date holds, and minus it the earliest. */
const MAX_MS = 8.64e15;
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));
const COLON = 0x3a;
const DOT = 0x2e;
const ZULU = 0x5a;

/** The dates of the days written lately (`2026-12-01`, `+275760-09-13`), by the day's number since the epoch. */
const dates = new Map<number, string>();
/** More than an audit's uploads and runs touch at once; past it the dates are forgotten and found again. */
const DATES_KEPT = 4096;

/** The day last read (exactIsoMs): its first millisecond, and its date as `toISOString` writes it. */
let readDayStart = Number.NaN;
let readDate = '';

/** The date of an instant `toISOString` writes (an integer in the Date range: a Date drops a fraction, and NaN has no text), else null. */
function dateOf(day: number, epochMs: number): string | null {
  if (!Number.isInteger(epochMs) || Math.abs(epochMs) > MAX_MS) return null;
  let date = dates.get(day);
  if (date === undefined) {
    if (dates.size >= DATES_KEPT) dates.clear();
    const text = new Date(day * DAY_MS).toISOString();
    date = text.slice(0, text.length - 14);
    dates.set(day, date);
  }
  return date;
}

/** `new Date(epochMs).toISOString()`: the same text, and the same RangeError for an instant it has none for. */
export function isoText(epochMs: number): string {
  const day = Math.floor(epochMs / DAY_MS);
  const date = dateOf(day, epochMs);
  if (date === null) return new Date(epochMs).toISOString();
  const { hours, minutes, seconds, millis } = timeOfDay(epochMs - day * DAY_MS);
  return `${date}T${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[millis]}Z`;
}

/** `2026-12-01 02:00:01 UTC`: an instant for people, to the second (`toISOString`'s first 19 characters, a space for its `T`). */
export function utcText(epochMs: number): string {
  const day = Math.floor(epochMs / DAY_MS);
  const date = dateOf(day, epochMs);
  // a year of other than four digits (before 0, after 9999) keeps the cut at 19 characters
  if (date === null || date.length !== 10) return `${isoText(epochMs).slice(0, 19).replace('T', ' ')} UTC`;
  const { hours, minutes, seconds } = timeOfDay(epochMs - day * DAY_MS);
  return `${date} ${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]} UTC`;
}

function timeOfDay(msOfDay: number): { hours: number; minutes: number; seconds: number; millis: number } {
  const millis = msOfDay % 1000;
  const totalSeconds = (msOfDay - millis) / 1000;
  const seconds = totalSeconds % 60;
  const totalMinutes = (totalSeconds - seconds) / 60;
  const minutes = totalMinutes % 60;
  return { hours: (totalMinutes - minutes) / 60, minutes, seconds, millis };
}

/** A digit's value, NaN for any other character (so a sum of them is NaN). */
function digitAt(text: string, at: number): number {
  const value = text.charCodeAt(at) - 0x30;
  return value >= 0 && value <= 9 ? value : Number.NaN;
}

/**
 * The instant `text` is, when it is exactly what `toISOString` writes for it (so writing the
 * instant back gives the same text), else NaN: `Date.parse` alone takes `2026-02-30` and
 * `2026-12-01T02:00Z` too, and gives instants whose text is another.
 */
export function exactIsoMs(text: string): number {
  const at = readDate.length + 1;
  if (text.length === at + 13 && text.charCodeAt(at - 1) === 0x54 && text.startsWith(readDate)) {
    if (text.charCodeAt(at + 2) !== COLON || text.charCodeAt(at + 5) !== COLON || text.charCodeAt(at + 8) !== DOT) return Number.NaN;
    if (text.charCodeAt(at + 12) !== ZULU) return Number.NaN;
    const hours = digitAt(text, at) * 10 + digitAt(text, at + 1);
    const minutes = digitAt(text, at + 3) * 10 + digitAt(text, at + 4);
    const seconds = digitAt(text, at + 6) * 10 + digitAt(text, at + 7);
    const millis = digitAt(text, at + 9) * 100 + digitAt(text, at + 10) * 10 + digitAt(text, at + 11);
    // NaN (a character not a digit) fails each test
    if (!(hours < 24 && minutes < 60 && seconds < 60 && millis >= 0)) return Number.NaN;
    return readDayStart + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis;
  }
  const epochMs = Date.parse(text);
  if (Number.isNaN(epochMs) || new Date(epochMs).toISOString() !== text) return Number.NaN;
  // the records read next are of this day too, nearly always
  readDayStart = Math.floor(epochMs / DAY_MS) * DAY_MS;
  readDate = text.slice(0, text.length - 14);
  return epochMs;
}
