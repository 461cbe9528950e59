import { UsageError } from '../errors.js';
import { parseZone, wallClockOffset, wallClockOffsets, type Zone } from '../layout/values/timeZones.js';

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
  const m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?\s?(Z|[+-]\d\d:?\d\d)?$/i.exec(text);
  if (!m) return NaN;
  const ms = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (m[8] === undefined) return wallClock(zone, y, mo, d, h, mi, s, ms);
  const offset = parseZone(m[8].toUpperCase() === 'Z' ? 'Z' : m[8].replace(/^([+-]\d\d)(\d\d)$/, '$1:$2'));
  if (!offset || !('fixed' in offset)) return NaN;
  return wallClock({ fixed: offset.fixed }, y, mo, d, h, mi, s, ms);
}

/**
 * The year of a syslog line that does not write one (`Dec  1 02:00:01`): the year of the file's
 * last change, or the one before for a date that would fall after it (a December line in a file
 * last written in January).
 */
export function yearBefore(reference: number, zone: Zone, month: number, day: number): number {
  const ref = new Date(reference + wallClockOffsetAt(zone, reference) * 60_000);
  const year = ref.getUTCFullYear();
  const sameYear = Date.UTC(year, month - 1, day);
  return sameYear > Date.UTC(ref.getUTCFullYear(), ref.getUTCMonth(), ref.getUTCDate()) + 86_400_000 ? year - 1 : year;
}

function wallClockOffsetAt(zone: Zone, utcMs: number): number {
  const d = new Date(utcMs);
  return wallClockOffset(zone, d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes());
}

/** A time for people: `2026-12-01 02:00:01 UTC`. */
export function utcText(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
