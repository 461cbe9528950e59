import { RejectError } from '../errors.js';
import { isActiveCurrency } from './currencies.js';
import type { ColumnSpec, Layout } from './layout.js';
import { codePoint, HIDDEN_CHARACTER, quoteValue } from './quoteValue.js';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** PostgreSQL's btree refuses index rows over about 2.7 kB; a key this long is no partner's id anyway. */
export const MAX_KEY_BYTES = 256;
const decimalPatterns = new Map<number, RegExp>();

/** A decimal as the file wrote it, checked as a string: money never passes through a float. */
function decimalPattern(scale: number): RegExp {
  let re = decimalPatterns.get(scale);
  if (!re) {
    // up to 16 integer digits keeps numeric(18,2) safe; no exponent, no thousands separator
    re = scale === 0 ? /^-?\d{1,16}$/ : new RegExp(`^-?\\d{1,16}(\\.\\d{1,${scale}})?$`);
    decimalPatterns.set(scale, re);
  }
  return re;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Years 0001 to 9999 only: year 0 does not exist and PostgreSQL refuses it without naming the line. */
export function isCalendarDate(y: number, m: number, d: number): boolean {
  if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1) return false;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= (m === 2 && leap ? 29 : DAYS_IN_MONTH[m - 1]!);
}

/**
 * Why a natural key is not clean, if it is not: two ids that look the same to a person
 * (a trailing space, a zero-width space, an NBSP, a BOM) must never be two rows.
 */
export function keyProblem(value: string): string | undefined {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_KEY_BYTES) return `is ${bytes} bytes long; a key may have at most ${MAX_KEY_BYTES}`;
  const hidden = HIDDEN_CHARACTER.exec(value);
  if (hidden) return `contains an invisible or control character (${codePoint(hidden[0])})`;
  // every other white space character is hidden: only a plain space is left to find here
  if (value.startsWith(' ')) return 'begins with a space';
  if (value.endsWith(' ')) return 'ends with a space';
  return undefined;
}

function checkValue(spec: ColumnSpec, value: string): string | undefined {
  switch (spec.type) {
    case 'date': {
      const m = DATE.exec(value);
      if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return 'is not a date (YYYY-MM-DD, 0001-01-01 to 9999-12-31)';
      return undefined;
    }
    case 'decimal':
      if (!decimalPattern(spec.scale ?? 2).test(value)) {
        return `is not a decimal amount with at most ${spec.scale ?? 2} places`;
      }
      return undefined;
    case 'currency':
      return isActiveCurrency(value) ? undefined : 'is not an active ISO 4217 currency code';
    case 'text':
      return undefined;
  }
}

/**
 * Checks one data row and returns its values, or throws a RejectError naming the line and
 * the field. Empty optional values come back as null. (UTF-8 is checked on the raw bytes.)
 */
export function validateRow(layout: Layout, fields: string[], line: number): (string | null)[] {
  const { columns } = layout;
  if (fields.length !== columns.length) {
    throw new RejectError(`line ${line}: expected ${columns.length} fields, found ${fields.length}`, { line });
  }
  const values: (string | null)[] = new Array(columns.length);
  const keyIndex = columns.findIndex((c) => c.name === layout.naturalKey);
  for (let i = 0; i < columns.length; i++) {
    const spec = columns[i]!;
    const value = fields[i]!;
    if (value.includes('\0')) {
      // PostgreSQL text cannot hold it; caught here so the message can name the line
      throw new RejectError(`line ${line}, field ${spec.name}: contains a NUL character`, { line, field: spec.name });
    }
    if (value === '') {
      if (spec.required) {
        throw new RejectError(`line ${line}, field ${spec.name}: required value is missing`, { line, field: spec.name });
      }
      values[i] = null;
      continue;
    }
    const problem = checkValue(spec, value) ?? (i === keyIndex ? keyProblem(value) : undefined);
    if (problem) {
      throw new RejectError(`line ${line}, field ${spec.name}: ${quoteValue(value)} ${problem}`, { line, field: spec.name });
    }
    values[i] = value;
  }
  return values;
}

/**
 * The header must name the layout's columns, in order. The message names the first column
 * that differs, never the whole line: a header can be any length.
 */
export function validateHeader(layout: Layout, fields: string[], line: number): void {
  const want = layout.columns.map((c) => c.name);
  const fail = (what: string): never => {
    throw new RejectError(`line ${line}: header ${what}`, { line, field: 'header' });
  };
  for (let i = 0; i < Math.max(want.length, fields.length); i++) {
    const got = fields[i]?.trim();
    if (got === want[i]) continue;
    if (got === undefined) fail(`ends after column ${i}; the layout expects ${quoteValue(want[i]!)} next`);
    if (want[i] === undefined) fail(`column ${i + 1} ${quoteValue(got!)} is not in the layout, which has ${want.length} columns`);
    fail(`column ${i + 1} is ${quoteValue(got!)}; the layout expects ${quoteValue(want[i]!)}`);
  }
}
