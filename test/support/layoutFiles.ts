import { AS_WRITTEN, type ColumnSpec, type Layout, type RecordRole } from '../../src/layout/model/layout.js';
import { COLUMN_TYPES } from '../../src/layout/model/layoutColumns.js';

/**
 * Synthetic settlement files for any layout, from a seed: every column type in the partner's own
 * spelling (decimal marks and grouping, date and time patterns, zones, lower-case currencies),
 * the values that sit at the edges of each type (zero written as -0.00, sixteen integer digits,
 * twelve places, years 0001 and 9999, leap days, times in the hour a zone's clocks skip or repeat,
 * offsets written in the value, fractions of a second), text in many scripts with the
 * characters CSV must quote, empty optional values, optional columns left out of the header,
 * columns in another order, a column the layout does not know, preamble lines, skipped rows and
 * a trailer when the layout has them. Deterministic: the same seed gives the same bytes.
 */
export interface GeneratedFile {
  text: string;
  /** data rows that load (the skipped ones and the trailer are not counted) */
  rows: number;
}

export interface GenerateOptions {
  rows: number;
  seed: number;
  /** the line end: `\n` unless told */
  eol?: string;
  /** plain values only (words, amounts, times), as most real files are: for measuring, not for proving */
  plain?: boolean;
}

/** A small, seeded generator (mulberry32): tests must be repeatable. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const TEXTS = [
  'plain',
  'Zürich Hauptbahnhof',
  'naïve café',
  '日本語のテキスト',
  'Ελληνικά',
  'עברית',
  'العربية',
  'emoji 😀🇳🇱',
  'e\u0301 combining',
  'comma, inside',
  'semi;colon',
  'pipe|bar',
  'tab\there',
  'say "hello"',
  'line\nbreak',
  'carriage\r\nreturn',
  'back\\slash \\N',
  '  padded  ',
  "it's",
  'x'.repeat(300),
];
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'KWD', 'BHD', 'XAU', 'eur', 'usd', 'Gbp'];
/** zones as partners write them in a column of their own, with the days their clocks change */
const ZONES = [
  'CET',
  'CEST',
  'UTC',
  'GMT',
  'BST',
  'EST',
  'EDT',
  'PST',
  'JST',
  'AEDT',
  '+05:30',
  '-03:00',
  '+14:00',
  'Europe/Amsterdam',
  'America/New_York',
  'Australia/Lord_Howe',
  'Asia/Kathmandu',
  'Pacific/Chatham',
];
/** wall times at a zone's changes and at the calendar's edges (year, month, day, hour, minute, second) */
const EDGE_TIMES: [number, number, number, number, number, number][] = [
  [2026, 3, 29, 2, 30, 0], // Europe: the skipped hour
  [2026, 10, 25, 2, 30, 0], // Europe: the repeated hour
  [2026, 3, 8, 2, 15, 0], // United States
  [2026, 11, 1, 1, 45, 59],
  [2026, 4, 5, 1, 50, 0], // Lord Howe's half hour
  [1890, 6, 1, 12, 0, 0], // local mean time, before zones
  [1900, 2, 28, 23, 59, 59],
  [1901, 12, 13, 20, 45, 52],
  [2000, 1, 1, 0, 0, 0],
  [2000, 2, 29, 12, 0, 0],
  [2038, 1, 19, 3, 14, 8],
  [2099, 12, 31, 23, 59, 59],
  [2100, 3, 1, 0, 0, 0],
  [1, 1, 1, 0, 0, 0],
  [9999, 12, 31, 23, 59, 59],
  [1969, 12, 31, 23, 59, 59],
];

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** A date or time in a layout's pattern (the tokens of layout/values/dateFormat.ts). */
function formatted(
  format: string,
  t: { y: number; mo: number; d: number; h: number; mi: number; s: number; frac: string; offset: string },
): string {
  let out = '';
  for (let i = 0; i < format.length;) {
    if (format[i] === "'") {
      const end = format.indexOf("'", i + 1);
      out += format.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    const rest = format.slice(i);
    const token = ['yyyy', 'MM', 'M', 'dd', 'd', 'HH', 'H', 'mm', 'ss', 'SSS', 'XXX', 'XX'].find((tk) => rest.startsWith(tk));
    if (!token) {
      out += format[i];
      i++;
      continue;
    }
    out += {
      yyyy: pad(t.y, 4),
      MM: pad(t.mo, 2),
      M: String(t.mo),
      dd: pad(t.d, 2),
      d: String(t.d),
      HH: pad(t.h, 2),
      H: String(t.h),
      mm: pad(t.mi, 2),
      ss: pad(t.s, 2),
      SSS: t.frac,
      XXX: t.offset,
      XX: t.offset.replace(':', ''),
    }[token];
    i += token.length;
  }
  return out;
}

/** A CSV field: quoted when it must be (and now and then when it need not). */
function field(value: string, delimiter: string, random: () => number, plain = false): string {
  if (/["\r\n]/.test(value) || value.includes(delimiter) || (!plain && random() < 0.05)) return `"${value.replaceAll('"', '""')}"`;
  return value;
}

class ValueMaker {
  /** the columns that give another column its sign (PayPal's `DR`/`CR`), and the marks they may hold */
  private readonly signMarks = new Map<string, string[]>();

  constructor(
    private readonly layout: Layout,
    private readonly random: () => number,
    private readonly plain = false,
  ) {
    for (const c of layout.columns) if (c.sign) this.signMarks.set(c.sign.from, [...c.sign.negative, ...c.sign.positive]);
  }

  /** whether this column gives another its sign: never left empty, or its amount has none */
  givesSign(name: string): boolean {
    return this.signMarks.has(name);
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  private digits(count: number): string {
    let s = '';
    for (let i = 0; i < count; i++) s += String(Math.floor(this.random() * 10));
    return s;
  }

  /** The integer part as the partner writes it: grouped by threes now and then when the layout has a separator. */
  private grouped(whole: string): string {
    const sep = this.layout.groupSeparator;
    if (!sep || whole.length <= 3 || this.random() < 0.4) return whole;
    const trimmed = whole.replace(/^0+(?=\d)/, '');
    const parts: string[] = [];
    for (let end = trimmed.length; end > 0; end -= 3) parts.unshift(trimmed.slice(Math.max(0, end - 3), end));
    return parts.join(sep);
  }

  decimal(scale: number): string {
    const r = this.random();
    let whole: string;
    let frac: string;
    let negative = this.random() < 0.3;
    if (this.plain) {
      whole = String(Math.floor(this.random() * 10 ** (1 + Math.floor(this.random() * 6))));
      frac = this.digits(scale);
    } else if (r < 0.15) {
      // the edges: zero in every spelling, the largest and smallest amounts, leading zeros
      const edges: [string, string][] = [
        ['0', ''],
        ['0', '0'.repeat(scale)],
        ['9'.repeat(16), '9'.repeat(scale)],
        ['1' + '0'.repeat(15), ''],
        ['0', scale > 0 ? '0'.repeat(scale - 1) + '1' : ''],
        ['0000000000000007', scale > 0 ? '5' : ''],
        ['10000', '0'.repeat(Math.min(scale, 1))],
        ['9999', scale >= 4 ? '9999' : '9'.repeat(scale)],
        ['10000', scale >= 4 ? '0001' : ''],
      ];
      [whole, frac] = this.pick(edges);
    } else {
      const length = this.random() < 0.8 ? 1 + Math.floor(this.random() * 6) : 1 + Math.floor(this.random() * 16);
      whole = this.digits(length).replace(/^0+(?=\d)/, '');
      frac = this.digits(Math.floor(this.random() * (scale + 1)));
    }
    if (whole === '0' && /^0*$/.test(frac) && this.random() < 0.5) negative = true; // -0, -0.00
    const mark = this.layout.decimalMark;
    return `${negative ? '-' : ''}${this.grouped(whole)}${frac === '' ? '' : mark + frac}`;
  }

  private civil(): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
    if (this.plain) {
      // a month of settlements
      const r = () => this.random();
      return { y: 2026, mo: 3, d: 1 + Math.floor(r() * 31), h: Math.floor(r() * 24), mi: Math.floor(r() * 60), s: Math.floor(r() * 60) };
    }
    if (this.random() < 0.25) {
      const [y, mo, d, h, mi, s] = this.pick(EDGE_TIMES);
      return { y, mo, d, h, mi, s };
    }
    const y = this.random() < 0.7 ? 1990 + Math.floor(this.random() * 50) : 1 + Math.floor(this.random() * 9999);
    const mo = 1 + Math.floor(this.random() * 12);
    const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
    const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
    return {
      y,
      mo,
      d: 1 + Math.floor(this.random() * days),
      h: Math.floor(this.random() * 24),
      mi: Math.floor(this.random() * 60),
      s: Math.floor(this.random() * 60),
    };
  }

  date(spec: ColumnSpec): string {
    return formatted(spec.format ?? 'yyyy-MM-dd', { ...this.civil(), frac: '', offset: '' });
  }

  timestamp(spec: ColumnSpec): string {
    const format = spec.format ?? 'yyyy-MM-dd HH:mm:ss';
    const t = this.civil();
    const frac = this.digits(1 + Math.floor(this.random() * 6));
    // offsets written in the value stay within what PostgreSQL takes (up to 15:59)
    const hours = Math.floor(this.random() * 16);
    const offset =
      this.random() < 0.15 ? 'Z' : `${this.random() < 0.5 ? '-' : '+'}${pad(hours, 2)}:${pad(this.pick([0, 15, 30, 45, 59]), 2)}`;
    // a zone whose offset depends on the date is asked about years from 1000 on (2000 years later keeps a leap day one)
    const dated = spec.timeZone?.includes('/') || spec.timeZoneFrom !== undefined;
    return formatted(format, { ...t, y: dated && t.y < 1000 ? t.y + 2000 : t.y, frac, offset });
  }

  integer(): string {
    if (this.plain) return String(1 + Math.floor(this.random() * 50)); // batch numbers and the like
    const r = this.random();
    if (r < 0.1) return this.pick(['0', '-0', '007', '999999999999999999', '-999999999999999999', '9007199254740993']);
    return `${this.random() < 0.2 ? '-' : ''}${this.digits(1 + Math.floor(this.random() * 12)).replace(/^0+(?=\d)/, '')}`;
  }

  text(): string {
    return this.plain || this.random() < 0.5
      ? `${this.pick(['alpha', 'beta', 'gamma', 'delta'])}-${Math.floor(this.random() * 1000)}`
      : this.pick(TEXTS);
  }

  value(spec: ColumnSpec, zoneColumns: Set<string>): string {
    if (zoneColumns.has(spec.name)) return this.pick(ZONES);
    const marks = this.signMarks.get(spec.name);
    if (marks) return this.pick(marks);
    if (spec.type === 'decimal' && spec.minorUnits !== undefined) {
      // whole minor units: an integer, unsigned when another column gives the sign
      const units = this.integer().replace(/^-?0*(?=\d)/, this.random() < 0.3 && !spec.sign ? '-' : '');
      return units;
    }
    if (spec.type === 'decimal' && spec.sign) return this.decimal(typeof spec.scale === 'number' ? spec.scale : 2).replace(/^-/, '');
    switch (spec.type) {
      case 'text':
        return this.text();
      case 'decimal':
        // as many places as the file writes: any number of them, up to the most a value may have
        return this.decimal(spec.scale === AS_WRITTEN ? Math.floor(this.random() * 16) : (spec.scale ?? 2));
      case 'date':
        return this.date(spec);
      case 'timestamp':
        return this.timestamp(spec);
      case 'currency':
        return this.pick(CURRENCIES);
      case 'integer':
        return this.integer();
    }
  }
}

/**
 * What of a layout this generator knows how to write (true) and what it cannot yet (false): keyed
 * by the layout model's own types, so a key added to the layout language fails to compile here
 * until it is taught or refused, and no list of the model's keys is kept twice.
 */
const LAYOUT_KEYS_WRITTEN: Record<keyof Layout, boolean> = {
  name: true,
  table: true,
  delimiter: true,
  encoding: false,
  decimalMark: true,
  groupSeparator: true,
  skipLines: true,
  header: true,
  timeZone: false,
  locale: false,
  currencyAliases: false,
  columns: true,
  naturalKey: true,
  // how rows are keyed and compared in the table, nothing a file shows
  occurrence: true,
  seenBefore: true,
  extraColumns: true,
  skipRows: true,
  trailer: true,
  footer: false,
  recordTypes: true,
  leadingRecords: true,
  nullPadding: false,
  spaceAfterQuote: false,
  whiteLinesBlank: false,
  // a leading record's field only (a pattern over a preamble line or the file name is refused below)
  captures: true,
  continuationLines: false,
  totals: false,
  maxRecordBytes: true,
};
const COLUMN_KEYS_WRITTEN: Record<keyof ColumnSpec, boolean> = {
  name: true,
  from: true,
  alternatives: true,
  occurrence: true,
  position: true,
  type: true,
  required: true,
  scale: true,
  minorUnits: true,
  currencyFrom: false,
  currencySymbols: false,
  sign: true,
  notation: false,
  noAmount: false,
  inAmount: false,
  format: true,
  timeZone: true,
  timeZoneFrom: true,
  timeFrom: false,
  trim: false,
  capture: true,
  year: false,
  dayPeriods: false,
};
const written = (keys: Record<string, boolean>) => new Set(Object.keys(keys).filter((key) => keys[key]));
const KNOWN_LAYOUT_KEYS = written(LAYOUT_KEYS_WRITTEN);
const KNOWN_COLUMN_KEYS = written(COLUMN_KEYS_WRITTEN);
const KNOWN_TYPES = new Set<string>(COLUMN_TYPES);

/**
 * Refuses, loudly, a layout with a feature this generator cannot write (a new key of the layout
 * language): a file without it would prove nothing about it. Teach `generatedFile` the feature.
 */
function assertKnown(layout: Layout): void {
  const unknown = [
    ...Object.keys(layout).filter((k) => !KNOWN_LAYOUT_KEYS.has(k)),
    ...layout.columns.flatMap((c) => [
      ...Object.keys(c)
        .filter((k) => !KNOWN_COLUMN_KEYS.has(k))
        .map((k) => `columns.${k}`),
      ...(KNOWN_TYPES.has(c.type) ? [] : [`type ${c.type}`]),
    ]),
  ];
  for (const capture of layout.captures ?? []) if (!capture.record) unknown.push(`captures.${capture.name} (a pattern)`);
  if (unknown.length > 0) {
    throw new Error(`layout ${layout.name} has what test/support/layoutFiles.ts cannot write yet: ${[...new Set(unknown)].join(', ')}`);
  }
}

/** Columns found under one header text several times keep their turn (`occurrence`) in a shuffled order. */
function sameHeadersInTurn(order: ColumnSpec[]): ColumnSpec[] {
  const out = [...order];
  const byHeader = new Map<string, number[]>();
  order.forEach((c, i) => byHeader.set(c.from, [...(byHeader.get(c.from) ?? []), i]));
  for (const places of byHeader.values()) {
    const inTurn = places.map((i) => order[i]!).sort((a, b) => (a.occurrence ?? 1) - (b.occurrence ?? 1));
    places.forEach((place, k) => (out[place] = inTurn[k]!));
  }
  return out;
}

/** A file in `layout`'s shape whose every row is good: what both COPY formats must load alike. */
export function generatedFile(layout: Layout, opts: GenerateOptions): GeneratedFile {
  assertKnown(layout);
  const random = seeded(opts.seed);
  const maker = new ValueMaker(layout, random, opts.plain);
  const eol = opts.eol ?? '\n';
  const d = layout.delimiter;
  const keys = new Set(layout.naturalKey);
  const zoneColumns = new Set(layout.columns.flatMap((c) => (c.timeZoneFrom ? [c.timeZoneFrom] : [])));
  const skipColumns = new Set(layout.skipRows.map((r) => r.column));
  // optional columns are sometimes absent from the header altogether; the others in a shuffled order
  // (a plain file has every column, in the layout's order, as a partner's export does; a file
  // without a header has every column at its place)
  const headerless = !layout.header;
  // a column filled from a figure the file states once reads no field of its own
  const present = layout.columns.filter(
    (c) =>
      !c.capture?.fills && (headerless || opts.plain || c.required || zoneColumns.has(c.name) || skipColumns.has(c.name) || random() < 0.8),
  );
  // the figures the leading records state, each as the column that captures it writes its values
  const captured = new Map<string, string>();
  for (const c of layout.columns) if (c.capture && !captured.has(c.capture.name)) captured.set(c.capture.name, maker.value(c, zoneColumns));
  const order = headerless
    ? [...present].sort((a, b) => a.position! - b.position!)
    : opts.plain
      ? present
      : sameHeadersInTurn([...present].sort(() => random() - 0.5));
  // a column that is one of several of the same header text: the others are there, before and after it
  const slots: (ColumnSpec | string)[] = [];
  for (const spec of order) {
    if (spec.occurrence !== undefined) {
      const before = slots.filter((slot) => (typeof slot === 'string' ? slot : slot.from) === spec.from).length;
      for (let k = before + 1; k < spec.occurrence; k++) slots.push(spec.from);
    }
    slots.push(spec);
  }
  for (const spec of order) if (spec.occurrence !== undefined) slots.push(spec.from);
  const extra = layout.extraColumns === 'ignore' && !opts.plain && !headerless ? ['Unknown Column'] : [];
  const headers = [...slots.map((slot) => (typeof slot === 'string' ? slot : slot.from)), ...extra];
  // a file of record types: each record begins with its type; what is neither header nor data comes around them
  const types = [...(layout.recordTypes ?? new Map<string, RecordRole>())];
  const typeOf = (role: RecordRole['role']) => types.filter(([, r]) => r.role === role).map(([code]) => code);
  const [headerType] = typeOf('header');
  const [dataType] = typeOf('data');
  const typed = (code: string | undefined, fields: string[]) => (code === undefined ? fields : [code, ...fields]);
  const lines: string[] = [];
  for (let i = 0; i < layout.skipLines; i++) lines.push(`preamble line ${i + 1}, exported by the partner`);
  for (const code of typeOf('info').slice(0, 1)) lines.push(`${code}${d}report information`);
  // summary records above the header (their totals are not stated: a generated file proves its rows' form)
  const stating = (layout.captures ?? []).filter((c) => c.record && captured.has(c.name));
  for (let i = 0; i < (layout.leadingRecords ?? 0); i++) {
    const capture = stating[i];
    if (!capture) lines.push(`SUMMARY${d}leading record ${i + 1}`);
    else
      lines.push(
        Array.from({ length: capture.record!.field }, (_, k) =>
          k === 0 ? capture.record!.type : k + 1 === capture.record!.field ? captured.get(capture.name)! : 'x',
        ).join(d),
      );
  }
  if (!headerless)
    lines.push(
      typed(headerType, headers)
        .map((h) => field(h, d, () => 1))
        .join(d),
    );
  let rows = 0;
  let written = 0;
  for (let i = 0; i < opts.rows; i++) {
    const rule = layout.skipRows.length > 0 && random() < 0.1 ? layout.skipRows[0]! : undefined;
    const valueOf = (spec: ColumnSpec) => {
      if (rule && (spec.name === rule.column || spec.from === rule.column)) return rule.values[Math.floor(random() * rule.values.length)]!;
      // a natural key is clean (no spaces at its ends, nothing hidden); its first column makes each row's unique
      if (keys.has(spec.name)) {
        if (spec.type === 'integer') return String(1_000_000 + i);
        if (spec.name === layout.naturalKey[0]) return `K${opts.seed}-${i}`;
        if (spec.type === 'text') return `k${Math.floor(random() * 100)}`;
      }
      if (!spec.required && !zoneColumns.has(spec.name) && !maker.givesSign(spec.name) && random() < 0.2) return '';
      // a row that names a figure the file states: the same one
      if (spec.capture) return captured.get(spec.capture.name)!;
      return maker.value(spec, zoneColumns);
    };
    let values: string[];
    if (headerless) {
      values = Array.from({ length: Math.max(...order.map((c) => c.position!)) }, () => '');
      for (const spec of order) values[spec.position! - 1] = valueOf(spec);
    } else values = slots.map((slot) => (typeof slot === 'string' ? maker.text() : valueOf(slot)));
    lines.push(
      typed(dataType, [...values, ...extra.map(() => maker.text())])
        .map((v) => field(v, d, random, opts.plain))
        .join(d),
    );
    written++;
    if (!rule) rows++;
  }
  // count records say how many data records came (since the file's start: each is written once)
  for (const [code, role] of types) {
    if (role.role !== 'count') continue;
    lines.push(Array.from({ length: role.field }, (_, k) => (k === 0 ? code : k + 1 === role.field ? String(written) : '')).join(d));
  }
  for (const code of typeOf('info').slice(1)) lines.push(`${code}${d}section information`);
  if (layout.trailer) {
    const t = layout.trailer;
    const width = Math.max(t.rowCountField ?? 1, 1);
    const trailer = Array.from({ length: width }, (_, k) => (k === 0 ? t.firstField : k + 1 === t.rowCountField ? String(written) : ''));
    lines.push(trailer.join(d));
  }
  return { text: lines.join(eol) + eol, rows };
}
