import { UsageError } from '../errors.js';
import { exactIsoMs } from '../isoInstants.js';
import { parseZone, wallClockOffset, wallClockOffsets, type Zone } from '../layout/values/timeZones.js';

/** `2026-12-01T02:00:01.500Z`: toISOString's length for a year of four digits (the pattern below takes no other). */
const ISO_TEXT_LENGTH = 24;

export const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The zone a log's times are in where a line does not say: the one configured, else this host's (as syslog writes). */
export function logZone(configured: string | undefined): { zone: Zone; name: string } {
  const name = configured ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
  const zone = parseZone(name) ?? parseZone(name.toUpperCase());
  if (!zone)
    throw new UsageError(
      `transfer log time zone "${name}" is not a time zone (an IANA name such as "Europe/Amsterdam", "UTC", or "+01:00")`,
    );
  return { zone, name };
}

/** A wall-clock time in `zone` as milliseconds since the epoch; NaN when it is no real date. */
export function wallClock(
  zone: Zone,
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millisecond = 0,
): number {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second, millisecond);
  const check = new Date(asUtc);
  if (check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 60) return NaN;
  return asUtc - wallClockOffset(zone, year, month, day, hour, minute) * 60_000;
}

/**
 * A wall-clock time in `zone` by the zone's rules: its instant, and in the hour a fall-back
 * repeats (`Oct 25 02:30` in Europe/Amsterdam is 00:30 or 01:30 UTC) the other one it may be.
 * `after`: the instant of the line before it in the same log, whose order tells the first pass
 * of the hour from the second: the earlier instant unless that line was already past it.
 * NaN when it is no real date.
 */
export function localTime(
  zone: Zone,
  wall: { y: number; mo: number; d: number; h: number; mi: number; s: number; ms?: number },
  after: number | null = null,
): { at: number; otherwise: number | null } {
  const at = wallClock(zone, wall.y, wall.mo, wall.d, wall.h, wall.mi, wall.s, wall.ms ?? 0);
  if (Number.isNaN(at)) return { at, otherwise: null };
  const offsets = wallClockOffsets(zone, wall.y, wall.mo, wall.d, wall.h, wall.mi);
  if (offsets.length < 2) return { at, otherwise: null };
  const asUtc = Date.UTC(wall.y, wall.mo - 1, wall.d, wall.h, wall.mi, wall.s, wall.ms ?? 0);
  const [earlier, later] = offsets.map((offset) => asUtc - offset * 60_000) as [number, number];
  // lines of one log keep their order but for a few seconds of skew between its writers
  return after !== null && after > earlier + 60_000 ? { at: later, otherwise: earlier } : { at: earlier, otherwise: later };
}

/**
 * A time written with its offset (`2026-12-01T02:00:01.5+01:00`, `…Z`), or without one (then in
 * `zone`); NaN when it is not such a time.
 */
export function isoTime(text: string, zone: Zone): number {
  // toISOString's own form (a CSV log's times, nearly always): read without the pattern, the same instant
  if (text.length === ISO_TEXT_LENGTH) {
    const exact = exactIsoMs(text);
    if (!Number.isNaN(exact)) return exact;
  }
  const m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\s?(Z|[+-]\d\d:?\d\d)?$/i.exec(text);
  if (!m) return NaN;
  const ms = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (m[8] === undefined) return wallClock(zone, y, mo, d, h, mi, s, ms);
  const offset = parseZone(m[8].toUpperCase() === 'Z' ? 'Z' : m[8].replace(/^([+-]\d\d)(\d\d)$/, '$1:$2'));
  if (!offset || !('fixed' in offset)) return NaN;
  return wallClock({ fixed: offset.fixed }, y, mo, d, h, mi, s, ms);
}

const DAY_MS = 86_400_000;

/**
 * The years of one log's syslog lines that do not write one (`Dec  1 02:00:01`), from the log's
 * own order, never from its file's modification time (a copied or restored log reads the same):
 * its first such line is in `base`, and a line dated more than a day before the line before it
 * (Dec 31, then Jan 1) begins the next year. A line dated far after the one before it (a
 * December line a slow writer sent after the New Year's first) is the year before. The base year
 * is the reader's to choose: see `lastLineYearBase`, and the audit's fit with the ledger's times.
 */
export class SyslogYears {
  private year: number;
  /** the last line's day as a day of a leap year (so Feb 29 has one), ms */
  private last: number | null = null;
  /** the last line's month and day, and how many New Years the lines crossed */
  lastDay: { month: number; day: number } | null = null;
  newYears = 0;

  constructor(readonly base: number) {
    this.year = base;
  }

  /** The year of a line dated `month`/`day`, the lines before it read in order. */
  of(month: number, day: number): number {
    const ordinal = Date.UTC(2000, month - 1, day);
    if (this.last !== null && ordinal > this.last + 180 * DAY_MS) return this.year - 1;
    if (this.last !== null && ordinal < this.last - DAY_MS) {
      this.year++;
      this.newYears++;
    }
    this.last = ordinal;
    this.lastDay = { month, day };
    return this.year;
  }
}

/**
 * The base year that puts a log's last yearless line no later than a day after `now` (in `zone`),
 * given the New Years its lines crossed: what a log being written now has, the year a syslog
 * reader without other evidence assumes.
 */
export function lastLineYearBase(now: number, zone: Zone, last: { month: number; day: number }, newYears: number): number {
  const today = new Date(now + wallClockOffsetAt(zone, now) * 60_000);
  const year = today.getUTCFullYear();
  const lastThisYear = Date.UTC(year, last.month - 1, last.day);
  const todayDay = Date.UTC(year, today.getUTCMonth(), today.getUTCDate());
  return (lastThisYear > todayDay + DAY_MS ? year - 1 : year) - newYears;
}

/** The year `now` is in, in `zone`: a log's first guess before its lines are read. */
export function yearIn(now: number, zone: Zone): number {
  return new Date(now + wallClockOffsetAt(zone, now) * 60_000).getUTCFullYear();
}

/** An instant moved by whole years (the same wall date and time, near enough for weighing which year fits). */
export function shiftYears(at: number, years: number): number {
  const date = new Date(at);
  date.setUTCFullYear(date.getUTCFullYear() + years);
  return date.getTime();
}

function wallClockOffsetAt(zone: Zone, utcMs: number): number {
  const d = new Date(utcMs);
  return wallClockOffset(zone, d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes());
}

/** A time for people: `2026-12-01 02:00:01 UTC` (isoInstants.ts writes it, by the day). */
export { utcText } from '../isoInstants.js';
