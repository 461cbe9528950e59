import { nearest } from '../../nearest.js';

/**
 * Time zones for timestamp columns: an IANA name (`Europe/Amsterdam`), `UTC`, a fixed offset
 * (`+01:00`), or one of the abbreviations partners write in a column of their own (Adyen's
 * `TimeZone`: `CET`, `CEST`, `BST`…). An abbreviation stands for one fixed offset. Where one
 * names several zones, the table holds the meaning the partners' reports we know give it (CST
 * is US Central, −06:00, never China Standard Time; BST is British Summer Time) or leaves it out
 * (IST: India, Ireland or Israel): an abbreviation not here is refused, and such a column needs
 * an IANA name or an offset.
 */
const ABBREVIATIONS: Record<string, number> = {
  UTC: 0,
  GMT: 0,
  Z: 0,
  WET: 0,
  WEST: 60,
  BST: 60,
  CET: 60,
  CEST: 120,
  MET: 60,
  MEST: 120,
  EET: 120,
  EEST: 180,
  MSK: 180,
  AST: -240,
  ADT: -180,
  EST: -300,
  EDT: -240,
  CST: -360,
  CDT: -300,
  MST: -420,
  MDT: -360,
  PST: -480,
  PDT: -420,
  AKST: -540,
  AKDT: -480,
  HST: -600,
  SGT: 480,
  HKT: 480,
  JST: 540,
  KST: 540,
  AEST: 600,
  AEDT: 660,
  NZST: 720,
  NZDT: 780,
};

const OFFSET = /^([+-])(\d{2}):?(\d{2})$/;

/** A zone: a fixed offset in minutes, or an IANA name whose offset depends on the date. */
export type Zone = { fixed: number } | { iana: string };

export function parseZone(text: string): Zone | undefined {
  const abbreviation = ABBREVIATIONS[text.toUpperCase()];
  if (abbreviation !== undefined) return { fixed: abbreviation };
  const m = OFFSET.exec(text);
  if (m) {
    const minutes = Number(m[2]) * 60 + Number(m[3]);
    return minutes <= 18 * 60 && Number(m[3]) < 60 ? { fixed: m[1] === '-' ? -minutes : minutes } : undefined;
  }
  return text.includes('/') && isIanaZone(text) ? { iana: text } : undefined;
}

/**
 * An IANA zone name this Node's ICU knows (`Europe/Amsterdam`), or `UTC`: the one kind of zone a
 * calendar takes (`"expect"`'s `timeZone`), where a fixed offset would ignore summer time.
 */
export function isIanaZone(text: string): boolean {
  if (text !== 'UTC' && !text.includes('/')) return false;
  // asked once per name: making a formatter costs ~0.1 ms, and a config of 20,000 partners asks it of each
  let known = ianaAnswers.get(text);
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: text });
      known = true;
    } catch {
      known = false;
    }
    ianaAnswers.set(text, known);
  }
  return known;
}

const ianaAnswers = new Map<string, boolean>();

/** Why a configured zone is not usable, if it is not. */
export function zoneProblem(text: string): string | undefined {
  if (parseZone(text)) return undefined;
  return `"${text}" is not a time zone (${zoneGuess(text) ?? 'an IANA name such as "Europe/Amsterdam", "UTC", or "+01:00"'})`;
}

let ianaNames: string[] | undefined;

/** `did you mean "Europe/Amsterdam"?` for a zone name one or two letters off an IANA name Intl knows (or UTC). */
export function zoneGuess(text: string): string | undefined {
  ianaNames ??= [...Intl.supportedValuesOf('timeZone'), 'UTC'];
  const guess = nearest(text, ianaNames);
  return guess ? `did you mean "${guess}"?` : undefined;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();

/** The zone's offset from UTC, in minutes, at the instant `utcMs`. */
function offsetAt(zone: string, utcMs: number): number {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(utcMs))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const asUtc = Date.UTC(p.year!, p.month! - 1, p.day, p.hour, p.minute, p.second);
  return Math.round((asUtc - Math.floor(utcMs / 1000) * 1000) / 60000);
}

/**
 * The offset of a wall-clock time in `zone`. Zone rules change at most a few times a year, so
 * the answer is kept per zone and hour: a file of a million rows asks Intl a few hundred times.
 * A wall time in a spring-forward gap takes the offset after the change.
 */
export function wallClockOffset(zone: Zone, year: number, month: number, day: number, hour: number, minute: number): number {
  if ('fixed' in zone) return zone.fixed;
  const key = `${zone.iana}|${year}-${month}-${day}-${hour}-${minute < 30 ? 0 : 1}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const wall = Date.UTC(year, month - 1, day, hour, minute);
    const first = offsetAt(zone.iana, wall);
    offset = offsetAt(zone.iana, wall - first * 60000);
    if (offsets.size > 100_000) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/**
 * Every offset a wall-clock time has in `zone`: one, or two in the hour a fall-back repeats
 * (the earlier instant's first), none in a spring-forward gap. `wallClockOffset` takes one.
 */
export function wallClockOffsets(zone: Zone, year: number, month: number, day: number, hour: number, minute: number): number[] {
  if ('fixed' in zone) return [zone.fixed];
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  // the offsets in force a day either side hold every offset this wall time can have
  const around = new Set([offsetAt(zone.iana, wall - 86_400_000), offsetAt(zone.iana, wall + 86_400_000)]);
  return [...around].filter((offset) => offsetAt(zone.iana, wall - offset * 60_000) === offset).sort((a, b) => b - a);
}

/** The zone's offset from UTC, in minutes, at the instant `utcMs`. */
export function zoneOffsetAt(zone: Zone, utcMs: number): number {
  return 'fixed' in zone ? zone.fixed : offsetAt(zone.iana, utcMs);
}

/** `+01:00`, as PostgreSQL reads it after a time. */
export function offsetText(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const a = Math.abs(minutes);
  return `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

let dashedZones: Map<string, string> | undefined;

/** An IANA name as Stripe writes it in a file name (`/` as `-`): the canonical names first, then any spelling Intl knows. */
function dashedZone(text: string): string | undefined {
  if (!dashedZones) {
    dashedZones = new Map();
    for (const zone of ['UTC', 'Etc/UTC', ...Intl.supportedValuesOf('timeZone')]) dashedZones.set(zone.replaceAll('/', '-'), zone);
  }
  const known = dashedZones.get(text);
  if (known !== undefined || !/^[A-Z][A-Za-z_]*-[A-Za-z0-9_+-]+$/.test(text)) return known;
  // a link name (America/Argentina/Buenos_Aires) or a name holding a dash (Port-au-Prince): each dash may be a `/`
  const dashes = [...text.matchAll(/-/g)].map((m) => m.index);
  if (dashes.length > 5) return undefined;
  for (let mask = (1 << dashes.length) - 1; mask > 0; mask--) {
    const chars = [...text];
    dashes.forEach((at, k) => {
      if (mask & (1 << k)) chars[at] = '/';
    });
    const candidate = chars.join('');
    if (parseZone(candidate) !== undefined && candidate.includes('/')) return candidate;
  }
  return undefined;
}

/**
 * The IANA zone a file's name ends with, as Stripe names a Dashboard download
 * (`…_America-Chicago.csv`: the zone's `/` written `-`, after an underscore), or undefined.
 * Zones are matched whole, so `_America-New_York.csv` and `_America-Argentina-Buenos_Aires.csv`
 * read right whatever underscores and dashes their names hold; the longest match wins.
 */
export function zoneInFileName(fileName: string): string | undefined {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  // every extension goes: a download may arrive as .csv.gz or .csv.pgp
  const stem = base.replace(/(\.[A-Za-z0-9]+)+$/, '');
  for (let i = stem.indexOf('_'); i !== -1; i = stem.indexOf('_', i + 1)) {
    const zone = dashedZone(stem.slice(i + 1));
    if (zone !== undefined) return zone;
  }
  return undefined;
}
