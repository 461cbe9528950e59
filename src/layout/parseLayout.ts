import { UsageError } from '../errors.js';
import { LAYOUT_DEFAULTS, RESERVED_COLUMNS, type ColumnSpec, type ColumnType, type Layout, type SkipRule, type Trailer } from './layout.js';
import { PRESETS } from './presets.js';
import { compileDateFormat } from './dateFormat.js';
import { zoneProblem } from './timeZones.js';

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const TYPES: readonly ColumnType[] = ['text', 'decimal', 'date', 'timestamp', 'currency', 'integer'];
const DELIMITERS = [',', ';', '|', '\t'];
const GROUP_SEPARATORS = ['', ',', '.', ' '];
/** key columns are compared as text when a clash is explained: only types whose text is canonical */
const KEY_TYPES: readonly ColumnType[] = ['text', 'integer', 'date', 'currency'];
const KNOWN_KEYS = [
  'table',
  'delimiter',
  'decimalMark',
  'groupSeparator',
  'skipLines',
  'columns',
  'naturalKey',
  'extraColumns',
  'skipRows',
  'trailer',
];
const COLUMN_KEYS = ['name', 'from', 'type', 'required', 'scale', 'format', 'timeZone', 'timeZoneFrom'];

/**
 * A layout from configuration: a preset's name, or an object (DESIGN.md "Layouts"). Every
 * mistake is a usage error naming the key, reported before any work.
 */
export function parseLayout(raw: unknown, where: string): Layout {
  const fail = (what: string): never => {
    throw new UsageError(`${where}: layout ${what}`);
  };
  if (typeof raw === 'string') {
    const preset = PRESETS.get(raw);
    if (!preset) fail(`"${raw}" is not a preset (presets: ${[...PRESETS.keys()].join(', ')})`);
    return preset!;
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) fail('must be a preset name or an object with "columns" and "naturalKey"');
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!KNOWN_KEYS.includes(k)) fail(`key "${k}" is unknown (keys: ${KNOWN_KEYS.join(', ')})`);

  const table = o.table ?? 'settlement_rows';
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) fail('"table" must be a lower-case SQL identifier');
  if (['file_loads', 'loads', 'schema_migrations'].includes(table as string))
    fail(`"table" may not be "${String(table)}": it is settle-ingest's own`);
  const delimiter = o.delimiter ?? LAYOUT_DEFAULTS.delimiter;
  if (typeof delimiter !== 'string' || !DELIMITERS.includes(delimiter)) fail('"delimiter" must be one of "," ";" "|" or a tab');
  const decimalMark = o.decimalMark ?? LAYOUT_DEFAULTS.decimalMark;
  if (decimalMark !== '.' && decimalMark !== ',') fail('"decimalMark" must be "." or ","');
  const groupSeparator = o.groupSeparator ?? LAYOUT_DEFAULTS.groupSeparator;
  if (typeof groupSeparator !== 'string' || !GROUP_SEPARATORS.includes(groupSeparator)) {
    fail('"groupSeparator" must be "" (none), ",", "." or " "');
  }
  if (groupSeparator === decimalMark) fail('"groupSeparator" and "decimalMark" must differ');
  if (groupSeparator === delimiter || decimalMark === delimiter) fail('"delimiter" may not be the decimal mark or the group separator');
  const skipLines = o.skipLines ?? 0;
  if (!Number.isInteger(skipLines) || (skipLines as number) < 0 || (skipLines as number) > 1000)
    fail('"skipLines" must be a whole number, 0 to 1000');
  const extraColumns = o.extraColumns ?? 'ignore';
  if (extraColumns !== 'ignore' && extraColumns !== 'reject') fail('"extraColumns" must be "ignore" or "reject"');

  if (!Array.isArray(o.columns) || o.columns.length === 0) fail('"columns" must be a non-empty array');
  const columns = (o.columns as unknown[]).map((c, i) => parseColumn(c, i, fail));
  const names = new Set<string>();
  const froms = new Set<string>();
  for (const c of columns) {
    if (names.has(c.name)) fail(`column "${c.name}" appears twice`);
    if (froms.has(c.from)) fail(`header "${c.from}" is taken by two columns`);
    names.add(c.name);
    froms.add(c.from);
  }
  for (const c of columns) {
    if (c.timeZoneFrom !== undefined && (!names.has(c.timeZoneFrom) || c.timeZoneFrom === c.name)) {
      fail(`column "${c.name}": "timeZoneFrom" must name another of its columns`);
    }
  }

  const keyRaw = o.naturalKey ?? 'transaction_id';
  const naturalKey = typeof keyRaw === 'string' ? [keyRaw] : keyRaw;
  if (!Array.isArray(naturalKey) || naturalKey.length === 0 || naturalKey.some((k) => typeof k !== 'string' || !names.has(k))) {
    fail('"naturalKey" must name one of its columns, or a list of them');
  }
  const keys = naturalKey as string[];
  if (new Set(keys).size !== keys.length) fail('"naturalKey" names a column twice');
  for (const k of keys) {
    const spec = columns.find((c) => c.name === k)!;
    if (!spec.required) fail(`natural key column "${k}" must be required`);
    if (!KEY_TYPES.includes(spec.type)) fail(`natural key column "${k}" must be of type ${KEY_TYPES.join(', ')}`);
  }

  return {
    name: 'custom',
    table: table as string,
    delimiter: delimiter as string,
    decimalMark: decimalMark as Layout['decimalMark'],
    groupSeparator: groupSeparator as Layout['groupSeparator'],
    skipLines: skipLines as number,
    columns,
    naturalKey: keys,
    extraColumns: extraColumns as Layout['extraColumns'],
    skipRows: parseSkipRows(o.skipRows, fail),
    ...(o.trailer !== undefined ? { trailer: parseTrailer(o.trailer, columns, fail) } : {}),
  };
}

function parseColumn(c: unknown, i: number, fail: (what: string) => never): ColumnSpec {
  if (!c || typeof c !== 'object') return fail(`column ${i + 1} must be an object`);
  const o = c as Record<string, unknown>;
  const { name, from, type, required, scale, format, timeZone, timeZoneFrom } = o;
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) return fail(`column ${i + 1}: "name" must be a lower-case SQL identifier`);
  for (const k of Object.keys(o))
    if (!COLUMN_KEYS.includes(k)) fail(`column "${name}": key "${k}" is unknown (keys: ${COLUMN_KEYS.join(', ')})`);
  if (RESERVED_COLUMNS.includes(name)) fail(`column "${name}" is reserved for provenance`);
  if (typeof type !== 'string' || !TYPES.includes(type as ColumnType)) fail(`column "${name}": "type" must be one of ${TYPES.join(', ')}`);
  if (from !== undefined && (typeof from !== 'string' || from.trim() === '')) fail(`column "${name}": "from" must be the header's text`);
  if (required !== undefined && typeof required !== 'boolean') fail(`column "${name}": "required" must be true or false`);
  if (scale !== undefined && (type !== 'decimal' || !Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > 12)) {
    fail(`column "${name}": "scale" is for decimal columns, 0 to 12`);
  }
  const timed = type === 'date' || type === 'timestamp';
  if (format !== undefined) {
    if (!timed || typeof format !== 'string') fail(`column "${name}": "format" is for date and timestamp columns`);
    const problem = compileDateFormat(format as string, type === 'timestamp').problem;
    if (problem) fail(`column "${name}": "format" ${problem}`);
  }
  if ((timeZone !== undefined || timeZoneFrom !== undefined) && type !== 'timestamp') {
    fail(`column "${name}": "timeZone" and "timeZoneFrom" are for timestamp columns`);
  }
  if (timeZone !== undefined && timeZoneFrom !== undefined) fail(`column "${name}": give "timeZone" or "timeZoneFrom", not both`);
  if (timeZone !== undefined) {
    const problem = typeof timeZone === 'string' ? zoneProblem(timeZone) : 'must be a string';
    if (problem) fail(`column "${name}": "timeZone" ${problem}`);
  }
  if (timeZoneFrom !== undefined && typeof timeZoneFrom !== 'string') fail(`column "${name}": "timeZoneFrom" must name a column`);
  const ownOffset = type === 'timestamp' && typeof format === 'string' && compileDateFormat(format, true).hasOffset === true;
  if (type === 'timestamp' && timeZone === undefined && timeZoneFrom === undefined && !ownOffset) {
    fail(`column "${name}": a timestamp needs "timeZone" (e.g. "UTC", "Europe/Amsterdam") or "timeZoneFrom"`);
  }
  return {
    name,
    from: ((from as string | undefined) ?? name).trim(),
    type: type as ColumnType,
    required: (required as boolean | undefined) ?? true,
    ...(type === 'decimal' ? { scale: (scale as number | undefined) ?? 2 } : {}),
    ...(format !== undefined ? { format: format as string } : {}),
    ...(timeZone !== undefined ? { timeZone: timeZone as string } : {}),
    ...(timeZoneFrom !== undefined ? { timeZoneFrom: timeZoneFrom as string } : {}),
  };
}

function parseSkipRows(raw: unknown, fail: (what: string) => never): SkipRule[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return fail('"skipRows" must be a list of {"column", "values"}');
  return raw.map((r, i) => {
    const { column, values } = (r ?? {}) as Record<string, unknown>;
    if (typeof column !== 'string' || column === '') fail(`skipRows ${i + 1}: "column" must name a column or a header`);
    if (!Array.isArray(values) || values.length === 0 || values.some((v) => typeof v !== 'string')) {
      fail(`skipRows ${i + 1}: "values" must be a non-empty list of strings`);
    }
    return { column: column as string, values: values as string[] };
  });
}

function parseTrailer(raw: unknown, columns: ColumnSpec[], fail: (what: string) => never): Trailer {
  if (!raw || typeof raw !== 'object') return fail('"trailer" must be an object with "firstField"');
  const { firstField, rowCountField, sumField, sumOf } = raw as Record<string, unknown>;
  if (typeof firstField !== 'string' || firstField === '')
    fail('trailer: "firstField" must be the text that opens the trailer line, e.g. "Total"');
  const position = (v: unknown, key: string) => {
    if (v !== undefined && (!Number.isInteger(v) || (v as number) < 2)) fail(`trailer: "${key}" must be a field position, 2 or more`);
  };
  position(rowCountField, 'rowCountField');
  position(sumField, 'sumField');
  if (rowCountField === undefined && sumField === undefined) fail('trailer: give "rowCountField", "sumField" or both');
  if ((sumField === undefined) !== (sumOf === undefined)) fail('trailer: "sumField" and "sumOf" go together');
  if (sumOf !== undefined && !columns.some((c) => c.name === sumOf && c.type === 'decimal')) {
    fail('trailer: "sumOf" must name a decimal column');
  }
  return {
    firstField: firstField as string,
    ...(rowCountField !== undefined ? { rowCountField: rowCountField as number } : {}),
    ...(sumField !== undefined ? { sumField: sumField as number, sumOf: sumOf as string } : {}),
  };
}
