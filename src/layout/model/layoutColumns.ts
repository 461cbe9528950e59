import {
  AMOUNT_NOTATIONS,
  DELIVERY_YEAR,
  AS_WRITTEN,
  LOCAL_ZONE,
  OWN_CURRENCY,
  RESERVED_COLUMNS,
  type ColumnSource,
  type ColumnSpec,
  type AmountNotation,
  type ColumnType,
  type SignRule,
} from './layout.js';
import { mostMinorUnits } from '../values/currencies.js';
import { compileDateFormat, type CompiledFormat } from '../values/dateFormat.js';
import { zoneProblem } from '../values/timeZones.js';

export const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
export const COLUMN_TYPES: readonly ColumnType[] = ['text', 'decimal', 'date', 'timestamp', 'currency', 'integer'];
export const COLUMN_KEYS = [
  'name',
  'from',
  'occurrence',
  'position',
  'type',
  'required',
  'scale',
  'minorUnits',
  'currencyFrom',
  'currencySymbols',
  'sign',
  'notation',
  'noAmount',
  'inAmount',
  'format',
  'timeZone',
  'timeZoneFrom',
  'timeFrom',
  'trim',
  'capture',
  'year',
  'dayPeriods',
];

type Fail = (what: string) => never;

/** A date or timestamp column's format compiled as the column declares it (its AM/PM markers, a year from elsewhere). */
export function compileColumnFormat(spec: ColumnSpec, languages: readonly string[] = []): CompiledFormat {
  const fallback = spec.type === 'timestamp' ? 'yyyy-MM-dd HH:mm:ss' : 'yyyy-MM-dd';
  return compileDateFormat(spec.format ?? fallback, spec.type === 'timestamp', languages, {
    ...(spec.dayPeriods ? { dayPeriods: spec.dayPeriods } : {}),
    yearless: spec.year !== undefined,
  });
}

/** Why a configured zone is not usable (`local` too, where a column may take the report's own zone). */
function columnZoneProblem(zone: unknown): string | undefined {
  if (typeof zone !== 'string') return 'must be a string';
  return zone === LOCAL_ZONE ? undefined : zoneProblem(zone);
}

/**
 * `from` as a layout writes it: the header's text, or a list of texts to look for in order
 * (each a string or `{"header", "timeZone"}`): the first is the column's own header, the rest
 * its alternatives.
 */
function parseFrom(raw: unknown, name: string, timestamp: boolean, fail: Fail): { from?: string; alternatives?: ColumnSource[] } {
  if (raw === undefined) return {};
  const where = `column "${name}": "from"`;
  const entries = Array.isArray(raw) ? raw : [raw];
  if (entries.length === 0) fail(`${where} must be the header's text, or a list of header texts`);
  const sources = entries.map((e): ColumnSource => {
    if (typeof e === 'string') {
      if (e.trim() === '') fail(`${where} must be the header's text`);
      return { header: e.trim() };
    }
    if (!e || typeof e !== 'object' || Array.isArray(e)) return fail(`${where} must list header texts or {"header", "timeZone"}`);
    const { header, timeZone, ...rest } = e as Record<string, unknown>;
    if (Object.keys(rest).length > 0) fail(`${where}: key "${Object.keys(rest)[0]}" is unknown (keys: header, timeZone)`);
    if (typeof header !== 'string' || header.trim() === '') fail(`${where}: "header" must be the header's text`);
    if (timeZone !== undefined) {
      if (!timestamp) fail(`${where}: "timeZone" is for timestamp columns`);
      const problem = columnZoneProblem(timeZone);
      if (problem) fail(`${where}: "timeZone" ${problem}`);
    }
    return { header: header.trim(), ...(timeZone !== undefined ? { timeZone: timeZone as string } : {}) };
  });
  const [first, ...alternatives] = sources;
  if (first!.timeZone !== undefined) fail(`${where}: give the first header's zone as the column's "timeZone"`);
  return { from: first!.header, ...(alternatives.length > 0 ? { alternatives } : {}) };
}

function parseSign(raw: unknown, name: string, fail: Fail): SignRule {
  const where = `column "${name}": "sign"`;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail(`${where} must be {"from", "negative", "positive"}`);
  const { from, negative, positive, ...rest } = raw as Record<string, unknown>;
  if (Object.keys(rest).length > 0) fail(`${where}: key "${Object.keys(rest)[0]}" is unknown (keys: from, negative, positive)`);
  if (typeof from !== 'string') fail(`${where}: "from" must name the column holding the debit/credit mark`);
  const marks = (v: unknown, key: string) => {
    if (!Array.isArray(v) || v.length === 0 || v.some((m) => typeof m !== 'string' || m === ''))
      fail(`${where}: "${key}" must be a non-empty list of the marks, e.g. ["DR"]`);
    return v as string[];
  };
  const neg = marks(negative, 'negative');
  const pos = marks(positive, 'positive');
  if (neg.some((m) => pos.includes(m))) fail(`${where}: a mark may not be both negative and positive`);
  return { from: from, negative: neg, positive: pos };
}

/** `notation` and `noAmount` of a decimal column: each a list, declared, never guessed. */
function parseNotation(raw: Record<string, unknown>, decimal: boolean, col: Fail): { notation?: AmountNotation[]; noAmount?: string[] } {
  const { notation, noAmount } = raw;
  if (!decimal && (notation !== undefined || noAmount !== undefined)) col('"notation" and "noAmount" are for decimal columns');
  if (notation !== undefined) {
    if (
      !Array.isArray(notation) ||
      notation.length === 0 ||
      notation.some((n) => typeof n !== 'string' || !(AMOUNT_NOTATIONS as readonly string[]).includes(n))
    )
      col(`"notation" must list some of ${AMOUNT_NOTATIONS.map((n) => `"${n}"`).join(', ')}`);
    if (new Set(notation as string[]).size !== (notation as string[]).length) col('"notation" names one twice');
    if (raw.sign !== undefined && (notation as string[]).some((n) => n !== 'plus'))
      col('"notation" says a sign the value writes, "sign" one another column gives: not both (but "plus")');
    if (raw.minorUnits !== undefined) col('"notation" is for amounts written with their decimal mark, not in minor units');
  }
  if (noAmount !== undefined) {
    if (!Array.isArray(noAmount) || noAmount.length === 0 || noAmount.some((m) => typeof m !== 'string' || m.trim() === ''))
      col('"noAmount" must list the texts that mean no amount, e.g. ["-"]');
    if (raw.required !== false) col('"noAmount" needs "required": false (a value meaning no amount is an empty one)');
  }
  return {
    ...(notation !== undefined ? { notation: notation as AmountNotation[] } : {}),
    ...(noAmount !== undefined ? { noAmount: (noAmount as string[]).map((m) => m.trim()) } : {}),
  };
}

/**
 * How a decimal column writes its amounts beyond `scale`: `minorUnits` (a number of places, or
 * `"currency"`: each row's own currency's, from `currencyFrom`) and the `currencySymbols` a value
 * may carry. `scale`: the one these imply (a column in minor units has no other).
 */
function parseAmountKeys(
  raw: Record<string, unknown>,
  decimal: boolean,
  col: Fail,
): { scale?: number; currencyFrom?: string; currencySymbols?: string[] } {
  const { minorUnits, scale, currencyFrom, currencySymbols } = raw;
  if (!decimal && (currencyFrom !== undefined || currencySymbols !== undefined))
    col('"currencySymbols" and "currencyFrom" are for decimal columns');
  if (currencyFrom !== undefined) {
    if (minorUnits !== OWN_CURRENCY)
      col(`"currencyFrom" goes with "minorUnits": "${OWN_CURRENCY}" (each row in its own currency's minor unit)`);
    if (typeof currencyFrom !== 'string') col('"currencyFrom" must name a currency column');
  }
  let implied: number | undefined;
  if (minorUnits === OWN_CURRENCY) {
    implied = mostMinorUnits();
    // a preset's column of that scale may be changed to it
    if (scale !== undefined && scale !== implied)
      col(`"scale" of a column in each currency's minor unit is ${implied} (the most places ISO 4217 gives)`);
  } else if (minorUnits !== undefined) {
    if (!Number.isInteger(minorUnits) || (minorUnits as number) < 0 || (minorUnits as number) > 6)
      col(`"minorUnits" must be 0 to 6 (the places implied), or "${OWN_CURRENCY}" (each row's own currency's, by ISO 4217)`);
    if (scale !== undefined && scale !== minorUnits) col('"scale" of a column in minor units is its "minorUnits"');
    implied = minorUnits as number;
  }
  if (currencySymbols === undefined)
    return {
      ...(implied !== undefined ? { scale: implied } : {}),
      ...(currencyFrom !== undefined ? { currencyFrom: currencyFrom } : {}),
    };
  const example = '(e.g. ["€"] or ["$", "USD"])';
  if (!Array.isArray(currencySymbols) || currencySymbols.length === 0)
    col(`"currencySymbols" must be a non-empty list of the symbols or codes its values carry ${example}`);
  for (const symbol of currencySymbols as unknown[]) {
    if (typeof symbol !== 'string' || symbol.trim() === '') col(`"currencySymbols" must list texts ${example}`);
    const text = symbol;
    if (/[\d+\-]/.test(text))
      col(`"currencySymbols": ${JSON.stringify(text)} has a digit or a sign: a symbol is the text beside the number`);
    if (text.trim() !== text)
      col(`"currencySymbols": ${JSON.stringify(text)} begins or ends with a space: spaces beside a symbol are read anyway`);
  }
  const symbols = currencySymbols as string[];
  if (new Set(symbols).size !== symbols.length) col('"currencySymbols" names a symbol twice');
  if (minorUnits !== undefined) col('"currencySymbols" is for amounts written with their decimal mark, not in minor units');
  return { ...(currencyFrom !== undefined ? { currencyFrom: currencyFrom } : {}), currencySymbols: symbols };
}

/**
 * The currency column giving the minor unit of a column in each row's own currency's: the one
 * its `currencyFrom` names, else the layout's only currency column.
 */
export function currencyColumnOf(columns: readonly ColumnSpec[], amount: ColumnSpec): string | undefined {
  if (amount.currencyFrom !== undefined) return amount.currencyFrom;
  const currencies = columns.filter((c) => c.type === 'currency');
  return currencies.length === 1 ? currencies[0]!.name : undefined;
}

/** A column in its own currency's minor unit names a currency column, or the layout has exactly one. */
function checkCurrencyFrom(columns: readonly ColumnSpec[], amount: ColumnSpec, fail: Fail): void {
  if (amount.minorUnits !== OWN_CURRENCY || currencyColumnOf(columns, amount) !== undefined) return;
  const currencies = columns.filter((c) => c.type === 'currency').map((c) => `"${c.name}"`);
  fail(
    currencies.length === 0
      ? `column "${amount.name}": "minorUnits": "${OWN_CURRENCY}" needs a currency column (type "currency") giving each row's currency`
      : `column "${amount.name}": the layout has several currency columns (${currencies.join(', ')}): say which with "currencyFrom"`,
  );
}

/**
 * One column of a layout object, every mistake a usage error naming it. `header`: whether the
 * layout's files have a header (else the column needs its `position`).
 */
export function parseColumn(column: unknown, index: number, header: boolean, fail: Fail, languages: readonly string[] = []): ColumnSpec {
  if (!column || typeof column !== 'object' || Array.isArray(column)) return fail(`column ${index + 1} must be an object`);
  const raw = column as Record<string, unknown>;
  const { name, type, required, scale, minorUnits, format, timeZone, timeZoneFrom, timeFrom, occurrence, position } = raw;
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) return fail(`column ${index + 1}: "name" must be a lower-case SQL identifier`);
  for (const key of Object.keys(raw))
    if (!COLUMN_KEYS.includes(key)) fail(`column "${name}": key "${key}" is unknown (keys: ${COLUMN_KEYS.join(', ')})`);
  const col = (what: string) => fail(`column "${name}": ${what}`);
  if (RESERVED_COLUMNS.includes(name)) col('the name is reserved for provenance');
  if (typeof type !== 'string' || !COLUMN_TYPES.includes(type as ColumnType)) col(`"type" must be one of ${COLUMN_TYPES.join(', ')}`);
  const timestamp = type === 'timestamp';
  const { from, alternatives } = parseFrom(raw.from, name, timestamp, fail);
  if (required !== undefined && typeof required !== 'boolean') col('"required" must be true or false');

  const capture = raw.capture;
  if (capture !== undefined && (typeof capture !== 'string' || capture === ''))
    col('"capture" must name one of the layout\'s "captures" (the figure the file states once)');
  // a column filled from a capture reads no field: it has neither a header nor a position
  const fills = capture !== undefined && raw.from === undefined && position === undefined;
  if (header) {
    if (position !== undefined) col('"position" is for a layout with "header": false (columns by position)');
    if (occurrence !== undefined && (!Number.isInteger(occurrence) || (occurrence as number) < 1))
      col('"occurrence" must be 1 or more: which of the header\'s columns of that name');
  } else if (!fills) {
    if (!Number.isInteger(position) || (position as number) < 1 || (position as number) > 10_000)
      col('a layout with "header": false needs each column\'s "position" (1 for the first field)');
    if (raw.from !== undefined || occurrence !== undefined) col('"from" and "occurrence" name a header: this layout has none');
  }

  if (type !== 'decimal' && (scale !== undefined || minorUnits !== undefined || raw.sign !== undefined))
    col('"scale", "minorUnits" and "sign" are for decimal columns');
  if (scale !== undefined && scale !== AS_WRITTEN && (!Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > 12))
    col(`"scale" must be 0 to 12, or "${AS_WRITTEN}" (as many places as the file writes)`);
  const amount = parseAmountKeys(raw, type === 'decimal', col);
  const notation = parseNotation(raw, type === 'decimal', col);
  if (raw.inAmount !== undefined && (type !== 'currency' || typeof raw.inAmount !== 'string'))
    col('"inAmount" is for a currency column: the decimal column whose values carry the currency code');
  const sign = raw.sign !== undefined ? parseSign(raw.sign, name, fail) : undefined;

  const timed = type === 'date' || timestamp;
  const { year, dayPeriods } = raw;
  if ((year !== undefined || dayPeriods !== undefined) && !timed) col('"year" and "dayPeriods" are for date and timestamp columns');
  if (year !== undefined && (typeof year !== 'string' || year === ''))
    col(`"year" must be "${DELIVERY_YEAR}" (the day the file was delivered) or name one of the layout's "captures"`);
  if (
    dayPeriods !== undefined &&
    (!Array.isArray(dayPeriods) ||
      dayPeriods.length !== 2 ||
      dayPeriods.some((m) => typeof m !== 'string' || m.trim() === '' || /\d/.test(m)) ||
      (dayPeriods[0] as string).toLowerCase() === (dayPeriods[1] as string).toLowerCase())
  )
    col('"dayPeriods" must be the two markers of a 12-hour clock, before noon and after noon, e.g. ["上午", "下午"]');
  const formatOptions = {
    ...(dayPeriods !== undefined ? { dayPeriods: dayPeriods as [string, string] } : {}),
    yearless: year !== undefined,
  };
  if (format !== undefined) {
    if (!timed || typeof format !== 'string') col('"format" is for date and timestamp columns');
    const compiled = compileDateFormat(format as string, timestamp, languages, formatOptions);
    if (compiled.problem) col(`"format" ${compiled.problem}`);
    if (year !== undefined && compiled.hasYear) col('"year" is for a format that writes no year: this one does');
  } else if (year !== undefined) col('"year" is for a format that writes no year (e.g. "MM/dd"): give its "format"');
  if (dayPeriods !== undefined && !(format as string | undefined)?.includes('a'))
    col('"dayPeriods" are the markers the format\'s "a" reads: its "format" has none');
  if ((timeZone !== undefined || timeZoneFrom !== undefined || timeFrom !== undefined) && !timestamp)
    col('"timeZone", "timeZoneFrom" and "timeFrom" are for timestamp columns');
  if (timeZone !== undefined && timeZoneFrom !== undefined) col('give "timeZone" or "timeZoneFrom", not both');
  if (timeZone !== undefined) {
    const problem = columnZoneProblem(timeZone);
    if (problem) col(`"timeZone" ${problem}`);
  }
  if (timeZoneFrom !== undefined && typeof timeZoneFrom !== 'string') col('"timeZoneFrom" must name a column');
  if (timeFrom !== undefined && typeof timeFrom !== 'string') col('"timeFrom" must name a column');
  if (raw.trim !== undefined && typeof raw.trim !== 'boolean') col('"trim" must be true (spaces around a value removed) or false');

  return {
    name,
    from: from ?? name,
    ...(alternatives ? { alternatives } : {}),
    ...(occurrence !== undefined ? { occurrence: occurrence as number } : {}),
    ...(position !== undefined ? { position: position as number } : {}),
    type: type as ColumnType,
    required: (required as boolean | undefined) ?? true,
    ...(type === 'decimal' ? { scale: amount.scale ?? (scale as number | typeof AS_WRITTEN | undefined) ?? 2 } : {}),
    ...(minorUnits !== undefined ? { minorUnits: minorUnits as number | typeof OWN_CURRENCY } : {}),
    ...(amount.currencyFrom !== undefined ? { currencyFrom: amount.currencyFrom } : {}),
    ...(amount.currencySymbols !== undefined ? { currencySymbols: amount.currencySymbols } : {}),
    ...(sign ? { sign } : {}),
    ...notation,
    ...(raw.inAmount !== undefined ? { inAmount: raw.inAmount as string } : {}),
    ...(format !== undefined ? { format: format as string } : {}),
    ...(timeZone !== undefined ? { timeZone: timeZone as string } : {}),
    ...(timeZoneFrom !== undefined ? { timeZoneFrom: timeZoneFrom as string } : {}),
    ...(timeFrom !== undefined ? { timeFrom: timeFrom as string } : {}),
    ...(raw.trim === true ? { trim: true } : {}),
    ...(capture !== undefined ? { capture: { name: capture as string, fills } } : {}),
    ...(year !== undefined ? { year: year as string } : {}),
    ...(dayPeriods !== undefined ? { dayPeriods: [...(dayPeriods as [string, string])] as [string, string] } : {}),
  };
}

/**
 * What the columns say of each other: each name once, the columns that
 * `timeZoneFrom`, `timeFrom` and `sign` name, and a zone for every timestamp.
 */
export function checkColumns(columns: ColumnSpec[], layoutZone: string | undefined, fail: Fail): void {
  // two columns may read one header or position (a time kept as a timestamp and, for a key, as
  // text): each is a column of its own name; a header the FILE names twice still needs "occurrence"
  const names = new Set<string>();
  for (const columnSpec of columns) {
    if (names.has(columnSpec.name)) fail(`column "${columnSpec.name}" appears twice`);
    names.add(columnSpec.name);
  }
  const other = (c: ColumnSpec, key: string, ref: string | undefined, type?: ColumnType) => {
    if (ref === undefined) return;
    const target = columns.find((t) => t.name === ref);
    if (!target || ref === c.name) fail(`column "${c.name}": "${key}" must name another of its columns`);
    if (type && target.type !== type) fail(`column "${c.name}": "${key}" must name a ${type} column`);
  };
  for (const columnSpec of columns) {
    other(columnSpec, 'timeZoneFrom', columnSpec.timeZoneFrom);
    other(columnSpec, 'timeFrom', columnSpec.timeFrom, 'text');
    other(columnSpec, 'sign.from', columnSpec.sign?.from, 'text');
    other(columnSpec, 'currencyFrom', columnSpec.currencyFrom, 'currency');
    other(columnSpec, 'inAmount', columnSpec.inAmount, 'decimal');
    const amount = columns.find((c) => c.name === columnSpec.inAmount);
    if (
      amount &&
      (amount.from !== columnSpec.from || amount.position !== columnSpec.position || amount.occurrence !== columnSpec.occurrence)
    )
      fail(
        `column "${columnSpec.name}": "inAmount" reads the code from the same field as "${amount.name}": give it the same "from" (or "position")`,
      );
    if (amount?.minorUnits !== undefined) fail(`column "${columnSpec.name}": "inAmount" needs an amount written with its decimal mark`);
    checkCurrencyFrom(columns, columnSpec, fail);
    if (columnSpec.type !== 'timestamp') continue;
    const ownOffset = columnSpec.format !== undefined && compileColumnFormat(columnSpec).hasOffset === true;
    if (columnSpec.timeZone === undefined && columnSpec.timeZoneFrom === undefined && !ownOffset && layoutZone === undefined) {
      fail(
        `column "${columnSpec.name}": a timestamp needs "timeZone" (e.g. "UTC", "Europe/Amsterdam", "${LOCAL_ZONE}"), "timeZoneFrom", or the layout's "timeZone"`,
      );
    }
  }
}
