import { RejectError } from '../errors.js';
import type { ColumnSpec, Layout } from './layout.js';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const CURRENCY = /^[A-Z]{3}$/;
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

function isCalendarDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return d <= days;
}

function checkValue(spec: ColumnSpec, value: string): string | undefined {
  switch (spec.type) {
    case 'date': {
      const m = DATE.exec(value);
      if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return 'is not a date (YYYY-MM-DD)';
      return undefined;
    }
    case 'decimal':
      if (!decimalPattern(spec.scale ?? 2).test(value)) {
        return `is not a decimal amount with at most ${spec.scale ?? 2} places`;
      }
      return undefined;
    case 'currency':
      return CURRENCY.test(value) ? undefined : 'is not a three-letter ISO 4217 currency code';
    case 'text':
      return undefined;
  }
}

function show(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
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
    const problem = checkValue(spec, value);
    if (problem) {
      throw new RejectError(`line ${line}, field ${spec.name}: ${show(value)} ${problem}`, { line, field: spec.name });
    }
    values[i] = value;
  }
  return values;
}

/** The header must name the layout's columns, in order. */
export function validateHeader(layout: Layout, fields: string[], line: number): void {
  const got = fields.map((f) => f.trim());
  const want = layout.columns.map((c) => c.name);
  if (got.length !== want.length || got.some((g, i) => g !== want[i])) {
    throw new RejectError(
      `line ${line}: header ${JSON.stringify(got.join(','))} does not match the layout ${JSON.stringify(want.join(','))}`,
      { line, field: 'header' },
    );
  }
}
