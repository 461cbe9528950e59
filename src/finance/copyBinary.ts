import pg from 'pg';
import { RejectError } from '../errors.js';
import { PROVENANCE_COLUMNS, type ColumnSpec } from '../layout/model/layout.js';
import { quoteValue } from '../layout/values/quoteValue.js';
import type { CopyBatches } from './copyBatches.js';
import { describedType, tableColumnsSql } from './layoutTable.js';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier, escapeLiteral } = pg;

/**
 * COPY's binary format (PostgreSQL manual, "COPY", "Binary Format"): each value goes in its
 * type's wire form, so the server stores it without parsing text. Every value is built from the
 * checked value string the text path would send (columnValues.ts), with integer arithmetic only:
 * a numeric from its decimal digits, a date as days and a time stamp as microseconds since
 * 2000-01-01 (UTC), exactly what the server's own input functions make of that text. The
 * differential test (test/integration/copyFormats.test.ts) holds the two paths to the same rows.
 */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** How one column's values are sent. */
const enum Wire {
  /** the value's UTF-8 bytes: text, character(n), and any layout column kept in a text column */
  Text,
  Numeric,
  Date,
  Timestamptz,
  Int8,
}

/** The wire form a layout column takes in a table column of `actual` type, if this encoder has it. */
function wireFor(spec: ColumnSpec, actual: string): Wire | undefined {
  // a text column holds any value as the reader wrote it (layoutTable.ts allows one for every type)
  if (actual === 'text') return Wire.Text;
  if (actual !== describedType(spec)) return undefined;
  switch (spec.type) {
    case 'text':
    case 'currency':
      return Wire.Text;
    case 'decimal':
      return Wire.Numeric;
    case 'date':
      return Wire.Date;
    case 'timestamp':
      return Wire.Timestamptz;
    case 'integer':
      return Wire.Int8;
  }
}

/**
 * The binary rows of the layout's table, or null when one of its columns is not of a type this
 * encoder writes (a table changed by hand): that file goes by text COPY. Takes the lock the COPY
 * would take first, so that no column can change type between this look and the load's commit.
 */
export async function binaryRowsFor(financeTarget: FinanceTarget): Promise<BinaryRows | null> {
  const { client, schema, layout } = financeTarget;
  const table = `${escapeIdentifier(schema)}.${escapeIdentifier(layout.table)}`;
  // one round trip: the lock, then the columns (simple protocol, so no parameters)
  const results = (await client.query(
    `LOCK TABLE ${table} IN ROW EXCLUSIVE MODE;
     ${tableColumnsSql(`${escapeLiteral(table)}::regclass`)}`,
  )) as unknown as pg.QueryResult<{ name: string; type: string }>[];
  const types = new Map(results[1]!.rows.map((r) => [r.name, r.type]));
  const wires: Wire[] = [];
  for (const spec of layout.columns) {
    const wire = wireFor(spec, types.get(spec.name) ?? '');
    if (wire === undefined) return null;
    wires.push(wire);
  }
  if (PROVENANCE_COLUMNS.some((c) => types.get(c) !== 'integer')) return null;
  return new BinaryRows(wires, layout.columns);
}

const TWO_20 = 2 ** 20;
const TWO_12 = 2 ** 12;
/** days from 1970-01-01 (JavaScript's epoch) to 2000-01-01 (PostgreSQL's) */
const PG_EPOCH_DAYS = 10_957;
/** PostgreSQL refuses a time zone offset of more than 15:59 (datetime.h, MAX_TZDISP_HOUR) */
const MAX_OFFSET_HOURS = 15;

/** Days since 1970-01-01 of a proleptic Gregorian date, as PostgreSQL counts them (date2j), in integers. */
function daysFromCivil(y: number, m: number, d: number): number {
  const year = m <= 2 ? y - 1 : y;
  const era = Math.floor(year / 400);
  const yearOfEra = year - era * 400;
  const dayOfYear = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const twoDigits = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);

/** `yyyy-MM-dd` (as the date converter writes it) as days since 2000-01-01. */
function pgDays(value: string): number {
  const y = twoDigits(value, 0) * 100 + twoDigits(value, 2);
  return daysFromCivil(y, twoDigits(value, 5), twoDigits(value, 8)) - PG_EPOCH_DAYS;
}

// Big-endian integers written byte by byte: Buffer's writeInt32BE and kin check their
// arguments on every call, which costs more than the write at millions of values a file.
function int16(buf: Buffer, at: number, v: number): number {
  buf[at] = v >>> 8;
  buf[at + 1] = v;
  return at + 2;
}

function int32(buf: Buffer, at: number, v: number): number {
  buf[at] = v >>> 24;
  buf[at + 1] = v >>> 16;
  buf[at + 2] = v >>> 8;
  buf[at + 3] = v;
  return at + 4;
}

/** The most bytes a value's wire form takes beyond the length in front of it: 3 per UTF-16 unit covers all. */
const boundOf = (value: string | null) => (value === null ? 0 : 8 + value.length * 3);

/** A decimal's base-10000 digits: at most 16 integer and 12 fraction digits make 7 groups. */
const groups = new Int32Array(16);

/**
 * Writes one row's values at a time into the COPY's batches. `values` are the checked row's
 * (columnValues.ts: an amount with a dot and no grouping, `yyyy-MM-dd`, `yyyy-MM-dd HH:mm:ss[.f]±hh:mm`,
 * an upper-case currency, up to 18 digits), null for an empty optional value.
 */
export class BinaryRows {
  private readonly fieldCount: number;
  /** the last date text and its day number: a file repeats few dates, mostly in runs */
  private lastDate = '';
  private lastDays = 0;
  private readonly int8s = new Map<string, bigint>();

  constructor(
    private readonly wires: readonly Wire[],
    private readonly columns: readonly ColumnSpec[],
  ) {
    this.fieldCount = wires.length + PROVENANCE_COLUMNS.length;
  }

  /** The signature, no flags and no header extension. */
  header(out: CopyBatches): void {
    out.room(SIGNATURE.length + 8);
    SIGNATURE.copy(out.buf, out.used);
    out.buf.fill(0, out.used + SIGNATURE.length, out.used + SIGNATURE.length + 8);
    out.used += SIGNATURE.length + 8;
  }

  /** The end of the data: a field count of -1. */
  trailer(out: CopyBatches): void {
    out.room(2);
    out.used = int16(out.buf, out.used, 0xffff);
  }

  row(out: CopyBatches, values: readonly (string | null)[], loadId: number, line: number): void {
    const wires = this.wires;
    const columnCount = wires.length;
    // one look for room per row: the field count, each field's length and value, the provenance
    let bound = 2 + 16;
    for (let i = 0; i < columnCount; i++) bound += 4 + boundOf(values[i]!);
    out.room(bound);
    const buf = out.buf;
    let at = int16(buf, out.used, this.fieldCount);
    for (let i = 0; i < columnCount; i++) {
      const value = values[i]!;
      if (value === null) {
        at = int32(buf, at, -1);
        continue;
      }
      switch (wires[i]) {
        case Wire.Text:
          at = writeText(buf, at, value);
          break;
        case Wire.Numeric:
          at = writeNumeric(buf, at, value);
          break;
        case Wire.Date:
          if (value !== this.lastDate) {
            this.lastDays = pgDays(value);
            this.lastDate = value;
          }
          at = int32(buf, int32(buf, at, 4), this.lastDays);
          break;
        case Wire.Timestamptz:
          at = this.writeTimestamptz(buf, at, value, line, i);
          break;
        case Wire.Int8:
          at = this.writeInt8(buf, at, value);
          break;
      }
    }
    // the provenance, in PROVENANCE_COLUMNS' order: load_id, source_line
    at = int32(buf, int32(buf, at, 4), loadId);
    out.used = int32(buf, int32(buf, at, 4), line);
  }

  /**
   * `yyyy-MM-dd HH:mm:ss[.f{1,6}]±hh:mm` as microseconds since 2000-01-01 00:00 UTC: the wall
   * time less its offset, as PostgreSQL reads that text. An offset PostgreSQL's text input
   * refuses (more than 15:59, minutes over 59) is refused here too, as the text path's load is.
   */
  private writeTimestamptz(buf: Buffer, at: number, value: string, line: number, column: number): number {
    const end = value.length - 6;
    const offsetHours = twoDigits(value, end + 1);
    const offsetMinutes = twoDigits(value, end + 4);
    if (offsetHours > MAX_OFFSET_HOURS || offsetMinutes > 59) {
      const field = this.columns[column]!.name;
      throw new RejectError(
        `line ${line}, field ${field}: ${quoteValue(value)} has an offset from UTC beyond ±15:59, which PostgreSQL refuses`,
        { line, field },
      );
    }
    const offsetSeconds = (value.charCodeAt(end) === 45 ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60);
    const seconds = pgDays(value) * 86_400 + twoDigits(value, 11) * 3600 + twoDigits(value, 14) * 60 + twoDigits(value, 17) - offsetSeconds;
    let micros = 0;
    if (value.charCodeAt(19) === 46) {
      // `.f` to `.ffffff`: the digits written, then zeros to six places
      for (let i = 20; i < 26; i++) micros = micros * 10 + (i < end ? digit(value, i) : 0);
    }
    // seconds * 1e6 + micros is up to 2.6e17, beyond a double's exact integers: built from
    // two parts that are each exact, seconds = high * 2^20 + low (low < 2^20)
    const high = Math.floor(seconds / TWO_20);
    const low = seconds - high * TWO_20;
    const lowMicros = low * 1e6 + micros; // < 2^20 * 1e6 + 1e6 < 2^53
    const carry = Math.floor(lowMicros / TWO_20);
    const upper = high * 1e6 + carry; // total = upper * 2^20 + (lowMicros mod 2^20)
    const highWord = Math.floor(upper / TWO_12);
    const lowWord = (upper - highWord * TWO_12) * TWO_20 + (lowMicros - carry * TWO_20);
    return int32(buf, int32(buf, int32(buf, at, 8), highWord), lowWord);
  }

  private writeInt8(buf: Buffer, at: number, value: string): number {
    let n = this.int8s.get(value);
    if (n === undefined) {
      n = BigInt(value);
      if (this.int8s.size >= 10_000) this.int8s.clear();
      this.int8s.set(value, n);
    }
    buf.writeBigInt64BE(n, int32(buf, at, 8));
    return at + 12;
  }
}

/** A value's UTF-8 bytes after their length; ASCII (most ids and names) is copied without a call into C++. */
function writeText(buf: Buffer, at: number, value: string): number {
  const n = value.length;
  const start = at + 4;
  let i = 0;
  for (; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c > 0x7f) break;
    buf[start + i] = c;
  }
  const bytes = i === n ? n : i + buf.write(value.slice(i), start + i, 'utf8');
  int32(buf, at, bytes);
  return start + bytes;
}

/**
 * A checked decimal (`-?\d+(\.\d+)?`) as PostgreSQL's numeric: base-10000 digits with the
 * weight of the first, the sign, and the places written as its display scale (the column's
 * type then rounds nothing and sets the scale, as for text). Zero, also `-0.00`, is positive,
 * as the server makes it.
 */
function writeNumeric(buf: Buffer, at: number, value: string): number {
  const len = value.length;
  let position = value.charCodeAt(0) === 45 ? 1 : 0;
  const negative = position === 1;
  let intEnd = position;
  while (intEnd < len && value.charCodeAt(intEnd) !== 46) intEnd++;
  while (position < intEnd && value.charCodeAt(position) === 48) position++;
  const fracStart = intEnd === len ? len : intEnd + 1;
  const intDigits = intEnd - position;
  const intGroups = (intDigits + 3) >> 2;
  let groupCount = 0;
  // the integer digits from the right in fours: the first group has what is left over
  let width = intDigits - (intGroups - 1) * 4;
  for (let groupIndex = 0; groupIndex < intGroups; groupIndex++, width = 4) {
    let groupValue = 0;
    for (let digitCount = 0; digitCount < width; digitCount++) groupValue = groupValue * 10 + value.charCodeAt(position++) - 48;
    groups[groupCount++] = groupValue;
  }
  // the fraction from the left in fours, the last filled with zeros
  for (let chunkStart = fracStart; chunkStart < len; chunkStart += 4) {
    let groupValue = 0;
    for (let digitAt = chunkStart; digitAt < chunkStart + 4; digitAt++)
      groupValue = groupValue * 10 + (digitAt < len ? value.charCodeAt(digitAt) - 48 : 0);
    groups[groupCount++] = groupValue;
  }
  let weight = intGroups - 1;
  let first = 0;
  while (first < groupCount && groups[first] === 0) {
    first++;
    weight--;
  }
  let last = groupCount;
  while (last > first && groups[last - 1] === 0) last--;
  const count = last - first;
  at = int32(buf, at, 8 + count * 2);
  at = int16(buf, at, count);
  at = int16(buf, at, count === 0 ? 0 : weight);
  at = int16(buf, at, negative && count > 0 ? 0x4000 : 0);
  at = int16(buf, at, len - fracStart);
  for (let groupIndex = first; groupIndex < last; groupIndex++) at = int16(buf, at, groups[groupIndex]!);
  return at;
}
