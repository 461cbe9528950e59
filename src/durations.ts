/**
 * Every duration the tool writes for a person goes through formatDuration: an option's default
 * (`1h30m`), how long a run took (`3m05s`), how long ago a run worked (`45m`), how late a
 * delivery is (`4d`), how far a transfer log's clock is off (`5 h 30 min`). The styles differ
 * only in the options below.
 */

type Unit = 'd' | 'h' | 'm' | 's';

const UNITS: readonly { unit: Unit; seconds: number; spaced: string }[] = [
  { unit: 'd', seconds: 86_400, spaced: 'd' },
  { unit: 'h', seconds: 3600, spaced: 'h' },
  { unit: 'm', seconds: 60, spaced: 'min' },
  { unit: 's', seconds: 1, spaced: 's' },
];

export interface DurationStyle {
  /** How many units at most, from the largest that is not zero: 1 for `6h`, 2 for `3m05s`; all when absent. */
  parts?: number;
  /** The largest unit: `h` (the default) writes 30 hours `30h`, `d` allows days (see daysFrom). */
  largest?: 'd' | 'h';
  /** With `largest: 'd'`: from how many seconds on days are counted (default two days: `47h`, then `2d`). */
  daysFrom?: number;
  /** With `largest: 'd'`: days only for a whole number of them (`2d`, but `49h`). */
  wholeDaysOnly?: boolean;
  /** The smallest unit (default `s`); what is less is cut off. */
  smallest?: 'm' | 's';
  /** Every part after the first of two digits, zeros kept: `1h02m`, `3m05s`, `1h00m`. */
  padded?: boolean;
  /** Under a minute, seconds with one decimal: `4.2s`. */
  tenthsUnderMinute?: boolean;
  /** Units as words apart: `5 h 30 min`, `2 min 5 s`. */
  spaced?: boolean;
  /** The text when every part shown is zero (default `0` and the smallest unit: `0s`, `0 s`). */
  zero?: string;
}

/**
 * `seconds` as the style says: rounded to whole seconds, then cut into units from the largest
 * down, each taking what it holds whole (never rounded up: 59m59s is `59m` in one part).
 */
export function formatDuration(seconds: number, style: DurationStyle = {}): string {
  if (style.tenthsUnderMinute && seconds < 60) return `${seconds.toFixed(1)}s`;
  const total = Math.round(Math.abs(seconds));
  const withDays = style.largest === 'd' && total >= (style.daysFrom ?? 2 * 86_400) && (!style.wholeDaysOnly || total % 86_400 === 0);
  const smallest = UNITS.find((u) => u.unit === (style.smallest ?? 's'))!;
  const units = UNITS.filter((u) => (u.unit !== 'd' || withDays) && u.seconds >= smallest.seconds);
  let rest = total;
  const counts = units.map((u) => {
    const count = Math.floor(rest / u.seconds);
    rest -= count * u.seconds;
    return { ...u, count };
  });
  const first = counts.findIndex((c) => c.count > 0);
  if (first === -1) return style.zero ?? (style.spaced ? `0 ${smallest.spaced}` : `0${smallest.unit}`);
  const shown = counts.slice(first, first + (style.parts ?? counts.length)).filter((c, i) => style.padded || i === 0 || c.count > 0);
  return shown
    .map((c, i) => {
      const number = style.padded && i > 0 ? String(c.count).padStart(2, '0') : String(c.count);
      return style.spaced ? `${number} ${c.spaced}` : `${number}${c.unit}`;
    })
    .join(style.spaced ? ' ' : '');
}

/** A number as a duration's part writes it: `30`, `1.5`. */
const DURATION_NUMBER = '(\\d+(?:\\.\\d+)?)';
/** Each unit in either case (JSON Schema's patterns take no flags, so the case is in the text). */
const unitPart = (unit: string) => `(?:${DURATION_NUMBER}\\s*[${unit}${unit.toUpperCase()}]\\s*)?`;

/**
 * The one grammar of a duration written as text: a number of seconds (`30`, `1.5`), or parts
 * largest unit first, each at most once, spaces allowed around each (`30s`, `30 s`, `90m`,
 * `1h30m`, `1h 30m`, `26H`, `2d`). `parseDuration` reads by it, and the config file's JSON Schema
 * (config/jsonSchema.ts) gives its source as the pattern, so an editor and settle-ingest take the
 * same texts. Written without flags, as a JSON Schema pattern must be.
 */
export const DURATION_TEXT = new RegExp(`^\\s*(?:${DURATION_NUMBER}|(?=\\d)${['d', 'h', 'm', 's'].map(unitPart).join('')})\\s*$`);

const UNIT_SECONDS = [86_400, 3600, 60, 1];

/** A duration as DURATION_TEXT writes it, or a JSON number of seconds, as seconds; null when it is neither (or negative, or not finite). */
export function parseDuration(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : null;
  if (typeof value !== 'string') return null;
  const match = DURATION_TEXT.exec(value);
  if (!match) return null;
  if (match[1] !== undefined) return Number(match[1]);
  return UNIT_SECONDS.reduce((total, seconds, i) => total + Number(match[i + 2] ?? 0) * seconds, 0);
}
