import { isActiveCurrency, minorUnitsOf } from '../values/currencies.js';
import type { CompiledFormat, DateParts } from '../values/dateFormat.js';
import type { YearOf } from '../values/yearOf.js';
import { AS_WRITTEN, GROUP_SEPARATORS, OWN_CURRENCY, type AmountNotation, type ColumnSpec, type Layout } from '../model/layout.js';
import { compileColumnFormat, currencyColumnOf } from '../model/layoutColumns.js';
import { codePoint, HIDDEN_CHARACTER, quoteValue } from '../values/quoteValue.js';
import { offsetText, parseZone, wallClockOffset, type Zone } from '../values/timeZones.js';

/** PostgreSQL's btree refuses index rows over about 2.7 kB; a key this long is no partner's id anyway. */
export const MAX_KEY_BYTES = 256;
/** up to 16 integer digits: a numeric(16 + scale, scale) column holds every amount that passes */
export const MAX_INTEGER_DIGITS = 16;

/**
 * Turns one field as the file wrote it into the text COPY receives (an amount with a dot and no
 * grouping, an ISO date, a timestamp with its offset, an upper-case currency), or says why it
 * cannot: a string is the value, an object the problem. `row` is the record, for a zone that
 * comes from another column.
 */
export type Converter = (value: string, row: readonly string[]) => string | { problem: string };

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Years 0001 to 9999 only: year 0 does not exist and PostgreSQL refuses it without naming the line. */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

/**
 * Why a natural key is not clean, if it is not: two ids that look the same to a person
 * (a trailing space, a zero-width space, an NBSP, a BOM) must never be two rows.
 */
export function keyProblem(value: string): string | undefined {
  // most ids are short printable ASCII without a space at either end: clean without further looks
  if (value.length <= MAX_KEY_BYTES && PLAIN_KEY.test(value)) return undefined;
  const padding = paddingProblem(value);
  if (padding) return padding;
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_KEY_BYTES) return `is ${bytes} bytes long; a key may have at most ${MAX_KEY_BYTES}`;
  const hidden = HIDDEN_CHARACTER.exec(value);
  if (hidden) return `contains an invisible or control character (${codePoint(hidden[0])})`;
  return undefined;
}

/** Spaces a value may be padded with: U+0020, tabs, and every other space separator (no-break, thin, narrow no-break…). */
const PADDING = /^[\t\p{Zs}]+|[\t\p{Zs}]+$/gu;
const SPACE = /[\t\p{Zs}]/u;

/** A space of any kind, told by its code unit (every space separator is in the Basic Multilingual Plane). */
const isSpace = (code: number) => code === 0x20 || code === 0x09 || (code >= 0xa0 && SPACE.test(String.fromCharCode(code)));

/** Whether a value begins or ends with a space: two code units looked at for the usual value. */
const isPadded = (value: string) => isSpace(value.charCodeAt(0)) || isSpace(value.charCodeAt(value.length - 1));

/**
 * A field as a column takes it: a value of spaces only is blank, so empty (with or without
 * `trim`); a column with `trim` takes the value without the spaces around it; any other value
 * is as written.
 */
export function unpadded(value: string, trim: boolean): string {
  if (value === '' || !isPadded(value)) return value;
  const bare = value.replace(PADDING, '');
  return bare === '' || trim ? bare : value;
}

/** Why a key value with spaces around it is refused: two ids that differ by padding are one id, and only `trim` may say so. */
function paddingProblem(value: string): string | undefined {
  if (!isPadded(value)) return undefined;
  const begins = isSpace(value.charCodeAt(0));
  const ch = begins ? value[0]! : value[value.length - 1]!;
  const space = ch === ' ' ? 'a space' : ch === '\t' ? 'a tab' : `a space (${codePoint(ch)})`;
  return `${begins ? 'begins' : 'ends'} with ${space}: "trim": true would remove the padding`;
}

const PLAIN_KEY = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * A settlement file repeats few distinct dates, times and currency codes over many rows: each
 * distinct text is converted once (the cache is bounded, so a file of all-distinct values costs
 * only the lookups).
 */
function remembered(convert: Converter): Converter {
  const seen = new Map<string, string | { problem: string }>();
  return (value, row) => {
    let out = seen.get(value);
    if (out === undefined) {
      out = convert(value, row);
      if (seen.size >= 10_000) seen.clear();
      seen.set(value, out);
    }
    return out;
  };
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The spaces around a value (and between an amount and its symbol or sign): space, no-break, thin and narrow no-break space. */
const SPACES = ' \u00a0\u2009\u202f';
const SURROUNDING_SPACES = new RegExp(`^[${SPACES}]+|[${SPACES}]+$`, 'g');
const LEADING_SPACES = new RegExp(`^[${SPACES}]+`);
const TRAILING_SPACES = new RegExp(`[${SPACES}]+$`);

/** What a layout's group separator stands for in a value: `'` the typographic apostrophe too, `' '` every space. */
const GROUP_CHARACTERS: Readonly<Record<string, string>> = { ' ': SPACES, "'": "'\u2019" };
const groupClass = (group: string) => `[${escapeRe(GROUP_CHARACTERS[group] ?? group)}]`;

/** The most places a decimal of scale `asWritten` may have: an exchange rate's 15, and room to spare. */
export const MAX_WRITTEN_SCALE = 30;

const isDigit = (code: number) => code >= 48 && code <= 57;

/**
 * The usual decimal, `-?\d{1,16}` then a mark and 1 to `places` digits or nothing, told by its
 * code units: three amounts a row, where a regular expression cost as much as the rest of the row's check.
 */
function isPlainDecimal(value: string, markCode: number, places: number): boolean {
  const length = value.length;
  let at = value.charCodeAt(0) === 45 ? 1 : 0;
  const digitsFrom = at;
  while (at < length && isDigit(value.charCodeAt(at))) at++;
  const integerDigits = at - digitsFrom;
  if (integerDigits < 1 || integerDigits > MAX_INTEGER_DIGITS) return false;
  if (at === length) return true;
  if (places === 0 || value.charCodeAt(at) !== markCode) return false;
  const fractionFrom = ++at;
  while (at < length && isDigit(value.charCodeAt(at))) at++;
  const fractionDigits = at - fractionFrom;
  return at === length && fractionDigits >= 1 && fractionDigits <= places;
}

/**
 * A decimal as the file wrote it, checked as a string (money never passes through a float):
 * an optional minus, digits (grouped by threes when the layout has a group separator, the same
 * mark between every group), and at most `scale` places after the layout's decimal mark. No
 * exponent, no plus sign. A leading mark without a zero (`.11`, `-.5`, as some exporters write)
 * reads as `0.11`; spaces around the value (no-break ones too) are no part of it. With
 * `currencySymbols`, one of them may stand before or after the number, spaces between or not,
 * and the sign (`-`, or `+`) before the symbol or apart from the digits: `- $220.00`, `-$5`,
 * `$-5`, `-123,45 €`, `+ $1,350.00`. Each unusual form is looked at only when the plain one does
 * not match, so the usual value costs one pass over its characters.
 */
export function decimalReader(
  layout: Pick<Layout, 'decimalMark' | 'groupSeparator'>,
  scale: number | typeof AS_WRITTEN,
  currencySymbols: readonly string[] = [],
): (value: string) => string | undefined {
  const places = scale === AS_WRITTEN ? MAX_WRITTEN_SCALE : scale;
  const mark = escapeRe(layout.decimalMark);
  const fraction = places === 0 ? '' : `(?:${mark}\\d{1,${places}})?`;
  const markCode = layout.decimalMark.charCodeAt(0);
  const leadingMark = places === 0 ? undefined : new RegExp(`^(-?)${mark}(\\d{1,${places}})$`);
  const group = layout.groupSeparator;
  const grouped = group ? new RegExp(`^-?\\d{1,3}(${groupClass(group)})\\d{3}(?:\\1\\d{3})*${fraction}$`) : undefined;
  const groupMarks = group ? new RegExp(groupClass(group), 'g') : undefined;
  const comma = layout.decimalMark === ',';
  // the longest first: `US$` before `$`
  const symbols = [...currencySymbols].sort((a, b) => b.length - a.length);
  const number = (value: string): string | undefined => {
    if (isPlainDecimal(value, markCode, places)) return comma ? value.replace(',', '.') : value;
    const lead = leadingMark?.exec(value);
    if (lead) return `${lead[1]}0.${lead[2]}`;
    if (grouped?.test(value)) {
      const digits = value.replace(groupMarks!, '');
      const normal = comma ? digits.replace(',', '.') : digits;
      const whole = normal.replace('-', '').split('.')[0]!;
      return whole.length <= MAX_INTEGER_DIGITS ? normal : undefined;
    }
    return undefined;
  };
  const withSymbol = (value: string): string | undefined => {
    let rest = value;
    let sign = '';
    const takeSign = () => {
      if (sign !== '' || (rest[0] !== '-' && rest[0] !== '+')) return;
      sign = rest[0];
      rest = rest.slice(1).replace(LEADING_SPACES, '');
    };
    takeSign();
    const before = symbols.find((s) => rest.startsWith(s));
    const after = before === undefined ? symbols.find((s) => rest.endsWith(s)) : undefined;
    if (before !== undefined) rest = rest.slice(before.length).replace(LEADING_SPACES, '');
    else if (after !== undefined) rest = rest.slice(0, -after.length).replace(TRAILING_SPACES, '');
    else return undefined;
    takeSign();
    if (rest[0] === '-' || rest[0] === '+') return undefined; // one sign only
    const amount = number(rest);
    return amount === undefined || sign !== '-' ? amount : `-${amount}`;
  };
  return (value) => {
    const amount = number(value);
    if (amount !== undefined) return amount;
    const trimmed = value.replace(SURROUNDING_SPACES, '');
    if (trimmed === '') return undefined;
    return (trimmed !== value ? number(trimmed) : undefined) ?? (symbols.length > 0 ? withSymbol(trimmed) : undefined);
  };
}

/** A currency sign or an ISO code at either end of a value (`€12.00`, `12.00 EUR`, `US$5`): what `currencySymbols` would list. */
function currencySymbolIn(value: string): string | undefined {
  const text = value.replace(SURROUNDING_SPACES, '').replace(/^[-+]/, '').replace(LEADING_SPACES, '');
  const ends = [/^[^\d\s+\-.,'\u2019\u00a0\u2009\u202f]+/u.exec(text)?.[0], /[^\d\s+\-.,'\u2019\u00a0\u2009\u202f]+$/u.exec(text)?.[0]];
  return ends.find((end) => end !== undefined && (/\p{Sc}/u.test(end) || isActiveCurrency(end)));
}

/**
 * Why a value is no amount of the column, naming the key that would read it when one change
 * would: a currency symbol the column does not list, another group separator, the other decimal
 * mark. `otherwise`: the problem when none would. The readers that try each change are built
 * when a first value is refused: a file of good amounts costs nothing here.
 */
function amountProblems(
  layout: Pick<Layout, 'decimalMark' | 'groupSeparator'>,
  scale: number | typeof AS_WRITTEN,
  symbols: readonly string[],
  otherwise: string,
): (value: string) => string {
  const otherMark = layout.decimalMark === '.' ? ',' : '.';
  type Fix = { reads: (value: string) => string | undefined; fix: string };
  // by the symbols they read with: the column's own, or those with the one a refused value carries
  const fixes = new Map<string, Fix[]>();
  const layoutFixes = (list: readonly string[]): Fix[] => {
    const key = list.join('\n');
    let found = fixes.get(key);
    if (found === undefined) {
      found = [
        ...GROUP_SEPARATORS.filter((g) => g !== '' && g !== layout.groupSeparator && g !== layout.decimalMark).map((g) => ({
          reads: decimalReader({ ...layout, groupSeparator: g as Layout['groupSeparator'] }, scale, list),
          fix: `it is grouped by "${g}": set the layout's "groupSeparator" to "${g}"`,
        })),
        {
          reads: decimalReader(
            { decimalMark: otherMark, groupSeparator: layout.groupSeparator === otherMark ? '' : layout.groupSeparator },
            scale,
            list,
          ),
          fix: `its decimal mark is "${otherMark}": set the layout's "decimalMark" to "${otherMark}"`,
        },
      ];
      if (fixes.size >= 100) fixes.clear();
      fixes.set(key, found);
    }
    return found;
  };
  return (value) => {
    const symbol = currencySymbolIn(value);
    if (symbol !== undefined && !symbols.includes(symbol)) {
      const list = [...symbols, symbol];
      const add =
        symbols.length === 0
          ? `has a currency symbol: add "currencySymbols": ${JSON.stringify([symbol])} to the column`
          : `has the currency symbol ${JSON.stringify(symbol)}: add it to the column's "currencySymbols" (${JSON.stringify(symbols)})`;
      if (decimalReader(layout, scale, list)(value) !== undefined) return add;
      const also = layoutFixes(list).find((f) => f.reads(value) !== undefined);
      if (also) return `${add}, and ${also.fix}`;
    }
    const fix = layoutFixes(symbols).find((f) => f.reads(value) !== undefined);
    return fix ? `${otherwise}: ${fix.fix}` : otherwise;
  };
}

/** `10400` minor units with 2 places implied as `104.00`; undefined when the value is no whole number. */
function fromMinorUnits(value: string, places: number): string | undefined {
  if (!/^-?\d{1,30}$/.test(value)) return undefined;
  const negative = value.startsWith('-');
  const digits = (negative ? value.slice(1) : value).replace(/^0+(?=\d)/, '').padStart(places + 1, '0');
  if (digits.length - places > MAX_INTEGER_DIGITS) return undefined;
  const text = places === 0 ? digits : `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  return negative ? `-${text}` : text;
}

const INTEGER = /^-?\d{1,18}$/;
const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));
const pad4 = (n: number) => String(n).padStart(4, '0');

function dateText(p: DateParts): string {
  return `${pad4(p.year)}-${pad2(p.month)}-${pad2(p.day)}`;
}

function timeOk(p: DateParts): boolean {
  return p.hour < 24 && p.minute < 60 && p.second < 60;
}

/**
 * One converter per layout column, in the layout's order. `specs` are the columns as one
 * file's header resolved them (a zone found in the file name, an alternative header's zone);
 * by default the layout's own.
 */
export function columnConverters(layout: Layout, specs: readonly FileColumn[] = layout.columns): Converter[] {
  return specs.map((spec) => converter(layout, spec));
}

/** A column as one file reads it: a date written without its year has that file's year rule (values/yearOf.ts). */
export type FileColumn = ColumnSpec & { yearOf?: YearOf };

/** The parts of a date or time stamp, the year given where the format writes none; undefined when there is no such day. */
function dated(compiled: CompiledFormat, spec: FileColumn): (value: string) => DateParts | undefined {
  const parse = compiled.parse!;
  if (compiled.hasYear) return parse;
  return (value) => {
    const parts = parse(value);
    if (!parts) return undefined;
    const year = spec.yearOf?.(parts.month, parts.day);
    return year === undefined ? undefined : { ...parts, year };
  };
}

function converter(layout: Layout, spec: FileColumn): Converter {
  switch (spec.type) {
    case 'text':
      return (v) => v;
    case 'integer':
      return (v) => (INTEGER.test(v) ? v : { problem: 'is not a whole number (at most 18 digits, no separators)' });
    case 'currency': {
      const code = currencyCode(layout);
      if (spec.inAmount !== undefined) {
        const problem = { problem: `has no ISO 4217 currency code beside its amount (like "JPY 1000.00"), for ${spec.inAmount}` };
        return remembered((v) => codeInAmount(v, code) ?? problem);
      }
      const problem = { problem: 'is not an active ISO 4217 currency code' };
      return remembered((v) => code(v) ?? problem);
    }
    case 'decimal':
      return decimalConverter(layout, spec);
    case 'date': {
      const parse = dated(compileColumnFormat(spec, layout.locale), spec);
      const problem = { problem: `is not a date (${spec.format ?? 'YYYY-MM-DD'}, 0001-01-01 to 9999-12-31)` };
      return remembered((v) => {
        const dateParts = parse(v);
        return dateParts && isCalendarDate(dateParts.year, dateParts.month, dateParts.day) ? dateText(dateParts) : problem;
      });
    }
    case 'timestamp':
      // a zone or a time from another column makes the same text two instants: only a fixed zone is remembered
      return spec.timeZoneFrom !== undefined || spec.timeFrom !== undefined
        ? timestampConverter(layout, spec)
        : remembered(timestampConverter(layout, spec));
  }
}

/**
 * A currency as written, as its ISO 4217 code: any case, or one of the layout's
 * `currencyAliases` (`RUR` for `RUB`); undefined when it is no active code.
 */
function currencyCode(layout: Pick<Layout, 'currencyAliases'>): (written: string) => string | undefined {
  const aliases = layout.currencyAliases ?? {};
  return (written) => {
    const upper = written.toUpperCase();
    const code = aliases[upper] ?? upper;
    return isActiveCurrency(code) ? code : undefined;
  };
}

/** Three letters standing apart (not part of a longer word): where a code may be written beside an amount. */
const THREE_LETTERS = /(?<![A-Za-z])[A-Za-z]{3}(?![A-Za-z])/g;

/** The one currency code written inside an amount (`JPY 1000.00`, `-12.50 eur`), undefined when none or two. */
function codeInAmount(value: string, code: (written: string) => string | undefined): string | undefined {
  const codes = [...value.matchAll(THREE_LETTERS)].map((m) => code(m[0])).filter((c) => c !== undefined);
  return codes.length === 1 ? codes[0] : undefined;
}

/** A debit or credit mark before or after an amount, any case: `0.80Dr`, `15.00 CR`, `D 100`, `c12.00`. */
const MARK_AFTER = /^(.*?)[\s\u00a0]*(?<![A-Za-z])(dr|cr|d|c)\.?$/i;
const MARK_BEFORE = /^(dr|cr|d|c)\.?(?![A-Za-z])[\s\u00a0]*(.*)$/i;

/**
 * An amount reader that also reads the sign notations a column declares (`notation`):
 * `(300.00)`, `+10000.00`, `0.80Dr` / `15.00Cr`, `300.00-`. One sign only: a notation around a
 * value that is signed already is no amount. `inner` reads what the notation leaves.
 */
function notedAmount(notation: readonly AmountNotation[], inner: (value: string) => string | undefined) {
  const has = new Set(notation);
  const unsigned = (text: string) => {
    const amount = inner(text.replace(SURROUNDING_SPACES, ''));
    return amount === undefined || amount.startsWith('-') ? undefined : amount;
  };
  const negative = (amount: string | undefined) => (amount === undefined ? undefined : `-${amount}`);
  return (value: string): string | undefined => {
    const text = value.replace(SURROUNDING_SPACES, '');
    if (has.has('brackets') && text.startsWith('(') && text.endsWith(')')) return negative(unsigned(text.slice(1, -1)));
    if (has.has('plus') && text.startsWith('+')) return unsigned(text.slice(1));
    if (has.has('trailingMinus') && text.endsWith('-')) return negative(unsigned(text.slice(0, -1)));
    if (has.has('debitCredit')) {
      const after = MARK_AFTER.exec(text);
      const before = after ? undefined : MARK_BEFORE.exec(text);
      const [mark, rest] = after ? [after[2]!, after[1]!] : before ? [before[1]!, before[2]!] : [undefined, ''];
      if (mark !== undefined) {
        const amount = unsigned(rest);
        return mark[0] === 'd' || mark[0] === 'D' ? negative(amount) : amount;
      }
    }
    return undefined;
  };
}

/** An amount with an ISO code at either end (`JPY 1000.00`, `-12.50 EUR`), the code read by its currency column (`inAmount`). */
function withoutCode(code: (written: string) => string | undefined, inner: (value: string) => string | undefined) {
  const codeFirst = /^([-+]?)[\s\u00a0]*([A-Za-z]{3})(?![A-Za-z])[\s\u00a0]*(.*)$/;
  const codeLast = /^(.*?)[\s\u00a0]*(?<![A-Za-z])([A-Za-z]{3})$/;
  return (value: string): string | undefined => {
    const text = value.replace(SURROUNDING_SPACES, '');
    const first = codeFirst.exec(text);
    // one sign, before the code or after it: `-USD 5.00`, `USD-5.00`
    if (first && code(first[2]!) !== undefined && !(first[1] && /^[-+]/.test(first[3]!))) return inner(`${first[1]}${first[3]}`);
    const last = codeLast.exec(text);
    if (last && code(last[2]!) !== undefined) return inner(last[1]!);
    return undefined;
  };
}

const columnIndex = (layout: Layout, name: string | undefined) =>
  name === undefined ? -1 : layout.columns.findIndex((c) => c.name === name);

function decimalConverter(layout: Layout, spec: ColumnSpec): Converter {
  const read = amountConverter(layout, spec);
  const sign = spec.sign;
  if (sign === undefined) return read;
  // written unsigned: the other column says debit (negative) or credit
  const at = columnIndex(layout, sign.from);
  const negative = new Set(sign.negative);
  const positive = new Set(sign.positive);
  const marks = [...sign.negative, ...sign.positive].map((m) => `"${m}"`).join(' or ');
  return (v, row) => {
    const amount = read(v, row);
    if (typeof amount !== 'string') return amount;
    if (amount.startsWith('-')) return { problem: `is signed, but its sign comes from ${sign.from}` };
    const mark = row[at] ?? '';
    if (negative.has(mark)) return `-${amount}`;
    if (positive.has(mark)) return amount;
    return { problem: `has no sign: ${sign.from} is "${mark.slice(0, 40)}", not ${marks}` };
  };
}

const TIMESTAMP_TEXT = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2}):(\d{2})$/;

/**
 * The instant a timestamp converter's text names, as a text two writings of one instant share
 * (`10:00:00+01:00` and `09:00:00+00:00`): microseconds since 1970, as PostgreSQL compares
 * `timestamptz`. A text of another shape is its own identity.
 */
export function timestampIdentity(text: string): string {
  const m = TIMESTAMP_TEXT.exec(text);
  if (!m) return text;
  const [, y, mo, d, h, mi, s, frac = '', sign, oh, om] = m;
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999
  const wall = new Date(0);
  wall.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  wall.setUTCHours(Number(h), Number(mi), Number(s));
  const offset = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return `${wall.getTime() - offset}.${frac.padEnd(6, '0')}`;
}

const minorUnitsProblem = (places: number, currency = '') => ({
  problem: `is not a whole number of minor units (${currency}${places} places implied, like 10400 for ${fromMinorUnits('10400', places)})`,
});

/** A decimal column's amount, signed as the file wrote it: with its decimal mark, or in minor units. */
function amountConverter(layout: Layout, spec: ColumnSpec): Converter {
  const minor = spec.minorUnits;
  if (minor === OWN_CURRENCY) return ownMinorUnits(layout, spec);
  if (minor !== undefined) {
    const problem = minorUnitsProblem(minor);
    return (v) => fromMinorUnits(v, minor) ?? problem;
  }
  const scale = spec.scale ?? 2;
  const symbols = spec.currencySymbols ?? [];
  const read = amountReader(layout, spec, decimalReader(layout, scale, symbols));
  const places = scale === AS_WRITTEN ? 'as many places as written' : `at most ${scale} places`;
  const digits = scale === AS_WRITTEN ? 4 : scale;
  const example = `${layout.groupSeparator ? `1${layout.groupSeparator}250` : '1250'}${digits > 0 ? `${layout.decimalMark}${'0'.repeat(digits)}` : ''}`;
  const why = amountProblems(layout, scale, symbols, `is not a decimal amount with ${places} (like ${example})`);
  return (v) => read(v) ?? { problem: why(v) };
}

/**
 * The column's reader with what it declares beyond the plain amount: its sign notations, and
 * an ISO code beside the number where a currency column reads it from there (`inAmount`). The
 * plain value is read first, so a file of plain amounts costs nothing more.
 */
function amountReader(layout: Layout, spec: ColumnSpec, plain: (value: string) => string | undefined) {
  const coded = layout.columns.some((c) => c.inAmount === spec.name);
  const notation = spec.notation ?? [];
  if (!coded && notation.length === 0) return plain;
  const code = currencyCode(layout);
  // what a notation leaves may carry the code: `(JPY 1000.00)`; a code may stand outside one: `JPY (1000.00)`
  const inner = coded ? (text: string) => plain(text) ?? withoutCode(code, plain)(text) : plain;
  const noted = notation.length > 0 ? notedAmount(notation, inner) : () => undefined;
  const outside = coded ? withoutCode(code, noted) : () => undefined;
  return (value: string) => inner(value) ?? noted(value) ?? outside(value);
}

/** `minorUnits: "currency"`: each row's amount in whole minor units of the currency its currency column names (ISO 4217). */
function ownMinorUnits(layout: Layout, spec: ColumnSpec): Converter {
  const currency = currencyColumnOf(layout.columns, spec)!;
  const at = columnIndex(layout, currency);
  return (v, row) => {
    const written = row[at] ?? '';
    const code = layout.currencyAliases?.[written.toUpperCase()] ?? written.toUpperCase();
    const places = minorUnitsOf(code);
    if (places !== undefined) return fromMinorUnits(v, places) ?? minorUnitsProblem(places, `${code}: `);
    const what =
      written === ''
        ? 'is empty'
        : isActiveCurrency(code)
          ? `is ${code}, which has no minor unit in ISO 4217`
          : `is ${quoteValue(written)}, not an ISO 4217 currency code`;
    return { problem: `is in minor units of its row's currency, and ${currency} ${what}` };
  };
}

function timestampConverter(layout: Layout, spec: FileColumn): Converter {
  const format = spec.format ?? 'yyyy-MM-dd HH:mm:ss';
  const parse = dated(compileColumnFormat(spec, layout.locale), spec);
  const problem = { problem: `is not a time stamp (${format})` };
  const fixedZone = spec.timeZone !== undefined ? parseZone(spec.timeZone)! : undefined;
  const zoneIndex = columnIndex(layout, spec.timeZoneFrom);
  const timeIndex = columnIndex(layout, spec.timeFrom);
  const zoneCache = new Map<string, Zone | undefined>();
  return (written, row) => {
    const v = timeIndex === -1 ? written : `${written} ${row[timeIndex] ?? ''}`;
    const dateParts = parse(v);
    if (!dateParts || !isCalendarDate(dateParts.year, dateParts.month, dateParts.day) || !timeOk(dateParts))
      return timeIndex === -1 ? problem : { problem: `with ${spec.timeFrom} "${(row[timeIndex] ?? '').slice(0, 40)}" ${problem.problem}` };
    const wall = `${dateText(dateParts)} ${pad2(dateParts.hour)}:${pad2(dateParts.minute)}:${pad2(dateParts.second)}${dateParts.frac ? `.${dateParts.frac}` : ''}`;
    if (dateParts.offset !== undefined) return `${wall}${dateParts.offset}`;
    let zone = fixedZone;
    if (zone === undefined) {
      const text = row[zoneIndex] ?? '';
      zone = zoneCache.get(text);
      if (zone === undefined && !zoneCache.has(text)) {
        zone = parseZone(text);
        zoneCache.set(text, zone);
      }
      if (zone === undefined) return { problem: `has no known time zone: ${spec.timeZoneFrom} is "${text.slice(0, 40)}"` };
    }
    return `${wall}${offsetText(wallClockOffset(zone, dateParts.year, dateParts.month, dateParts.day, dateParts.hour, dateParts.minute))}`;
  };
}
