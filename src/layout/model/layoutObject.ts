import {
  DELIMITERS,
  DELIVERY_YEAR,
  type Capture,
  GROUP_SEPARATORS,
  LAYOUT_DEFAULTS,
  MAX_FOOTER_LINES,
  MAX_LAYOUT_COLUMNS,
  RESERVED_COLUMNS,
  type ColumnSpec,
  type ColumnType,
  type Footer,
  type Layout,
  type RecordRole,
  type SkipRule,
  type Trailer,
} from './layout.js';
import { checkColumns, IDENTIFIER, parseColumn } from './layoutColumns.js';
import { isActiveCurrency } from '../values/currencies.js';
import { languageTag } from '../values/monthNames.js';
import { encodingName, UTF16_BY_BOM } from '../values/encodings.js';
import { zoneProblem } from '../values/timeZones.js';
import { parseTotals, totalsJson } from './totalsRules.js';

/**
 * The types a natural key may hold: every one, each compared exactly as PostgreSQL keeps it (a
 * decimal as its value, `10.5` and `10.50` one key; a timestamp as the instant, whatever offset
 * the file wrote it with; see naturalKeys.ts and finance/keyLookup.ts).
 */
export const KEY_TYPES: readonly ColumnType[] = ['text', 'integer', 'decimal', 'date', 'currency', 'timestamp'];
export const LAYOUT_KEYS = [
  'extends',
  'table',
  'delimiter',
  'encoding',
  'decimalMark',
  'groupSeparator',
  'skipLines',
  'header',
  'timeZone',
  'locale',
  'currencyAliases',
  'columns',
  'naturalKey',
  'occurrence',
  'seenBefore',
  'extraColumns',
  'skipRows',
  'trailer',
  'footer',
  'recordTypes',
  'leadingRecords',
  'nullPadding',
  'spaceAfterQuote',
  'whiteLinesBlank',
  'captures',
  'continuationLines',
  'totals',
];
export const ROLES = ['data', 'header', 'skip', 'info'] as const;

export type Fail = (what: string) => never;

/**
 * A layout object from configuration (docs/DESIGN.md "Layouts"), every mistake a usage error naming
 * the key. `name`: the preset's, or `custom`.
 */
export function readLayoutObject(raw: Record<string, unknown>, fail: Fail, name: string): Layout {
  for (const key of Object.keys(raw)) if (!LAYOUT_KEYS.includes(key)) fail(`key "${key}" is unknown (keys: ${LAYOUT_KEYS.join(', ')})`);

  const table = raw.table ?? 'settlement_rows';
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) fail('"table" must be a lower-case SQL identifier');
  if (['file_loads', 'loads', 'schema_migrations'].includes(table))
    fail(`"table" may not be "${String(table)}": it is settle-ingest's own`);
  const delimiter = raw.delimiter ?? LAYOUT_DEFAULTS.delimiter;
  if (typeof delimiter !== 'string' || !DELIMITERS.includes(delimiter)) fail('"delimiter" must be one of "," ";" "|" or a tab');
  const encoding = parseEncoding(raw.encoding, fail);
  const decimalMark = raw.decimalMark ?? LAYOUT_DEFAULTS.decimalMark;
  if (decimalMark !== '.' && decimalMark !== ',') fail('"decimalMark" must be "." or ","');
  const groupSeparator = raw.groupSeparator ?? LAYOUT_DEFAULTS.groupSeparator;
  if (typeof groupSeparator !== 'string' || !GROUP_SEPARATORS.includes(groupSeparator)) {
    fail('"groupSeparator" must be "" (none), ",", ".", " " (any space, no-break and thin ones too) or "\'" (Swiss: 11\'373.94)');
  }
  if (groupSeparator === decimalMark) fail('"groupSeparator" and "decimalMark" must differ');
  // a decimal mark or group separator that is also the delimiter is read from quoted values
  // only: unquoted, the value splits into more fields and the row is refused for its width
  const skipLines = raw.skipLines ?? 0;
  if (!Number.isInteger(skipLines) || (skipLines as number) < 0 || (skipLines as number) > 1000)
    fail('"skipLines" must be a whole number, 0 to 1000');
  const header = raw.header ?? true;
  if (typeof header !== 'boolean') fail('"header" must be true (columns by header name) or false (columns by position)');
  const timeZone = raw.timeZone;
  if (timeZone !== undefined) {
    const problem = typeof timeZone === 'string' ? zoneProblem(timeZone) : 'must be a string';
    if (problem) fail(`"timeZone" ${problem}`);
  }
  const extraColumns = raw.extraColumns ?? 'ignore';
  if (extraColumns !== 'ignore' && extraColumns !== 'reject') fail('"extraColumns" must be "ignore" or "reject"');

  if (!Array.isArray(raw.columns) || raw.columns.length === 0) fail('"columns" must be a non-empty array');
  if (raw.columns.length > MAX_LAYOUT_COLUMNS)
    fail(`"columns" has ${raw.columns.length}: a table holds at most ${MAX_LAYOUT_COLUMNS} (PostgreSQL's 1600 less the provenance)`);
  const locale = parseLocale(raw.locale, fail);
  const currencyAliases = raw.currencyAliases !== undefined ? parseCurrencyAliases(raw.currencyAliases, fail) : undefined;
  const columns = (raw.columns as unknown[]).map((c, i) => parseColumn(c, i, header, fail, locale));
  checkColumns(columns, timeZone as string | undefined, fail);

  const keyRaw = raw.naturalKey ?? 'transaction_id';
  const naturalKey = typeof keyRaw === 'string' ? [keyRaw] : keyRaw;
  if (
    !Array.isArray(naturalKey) ||
    naturalKey.length === 0 ||
    naturalKey.some((k) => typeof k !== 'string' || !columns.some((columnSpec) => columnSpec.name === k))
  ) {
    fail('"naturalKey" must name one of its columns, or a list of them');
  }
  const keys = naturalKey as string[];
  if (new Set(keys).size !== keys.length) fail('"naturalKey" names a column twice');
  for (const keyColumn of keys) {
    const spec = columns.find((c) => c.name === keyColumn)!;
    if (!KEY_TYPES.includes(spec.type)) fail(`natural key column "${keyColumn}" must be of type ${KEY_TYPES.join(', ')}`);
    // an empty optional part is kept as '' (UNIQUE never compares NULLs): only text has one. An
    // optional typed part stays refused: NULLS NOT DISTINCT is PostgreSQL 15's, and a NULL-safe
    // comparison is no index look-up (docs/LAYOUTS.md, "naturalKey")
    if (!spec.required && spec.type !== 'text')
      fail(
        `natural key column "${keyColumn}" is optional and of type ${spec.type}: an empty one would be NULL, which a UNIQUE key never finds equal to another, so the row would load again with every resend. Make it required, leave it out of the key, or key on the field read a second time as text ({ "name": "${keyColumn}_text", "from": ${JSON.stringify(spec.from)}, "type": "text", "required": false }: an empty one is kept as '')`,
      );
  }
  if (keys.every((k) => !columns.find((c) => c.name === k)!.required)) fail('"naturalKey" needs at least one required column');
  const occurrence = parseOccurrence(raw.occurrence, columns, fail);
  const seenBefore = raw.seenBefore ?? occurrence !== undefined;
  if (typeof seenBefore !== 'boolean')
    fail('"seenBefore" must be true (a row whose key another file loaded is compared with it) or false (refused as a key loaded before)');

  const recordTypes = raw.recordTypes !== undefined ? parseRecordTypes(raw.recordTypes, header, fail) : undefined;
  const trailer = raw.trailer !== undefined ? parseTrailer(raw.trailer, columns, fail) : undefined;
  if (trailer && recordTypes?.has(trailer.firstField))
    fail(`recordTypes: "${trailer.firstField}" is the trailer's type: leave it to "trailer"`);
  const leadingRecords = raw.leadingRecords ?? 0;
  if (!Number.isInteger(leadingRecords) || (leadingRecords as number) < 0 || (leadingRecords as number) > 100)
    fail('"leadingRecords" must be a whole number, 0 to 100 (the summary records above the header)');
  if (leadingRecords !== 0 && (!header || recordTypes))
    fail('"leadingRecords" needs a header line and no "recordTypes" (a file of record types names its summary records by type)');
  const nullPadding = raw.nullPadding ?? false;
  if (typeof nullPadding !== 'boolean')
    fail('"nullPadding" must be true (a row shorter than the header has its last fields empty) or false');
  if (nullPadding && !header) fail('"nullPadding" needs a header line (its names say how wide a row is)');
  for (const key of ['spaceAfterQuote', 'whiteLinesBlank', 'continuationLines'] as const)
    if (raw[key] !== undefined && typeof raw[key] !== 'boolean') fail(`"${key}" must be true or false`);
  if (raw.continuationLines === true && (!header || raw.recordTypes !== undefined || leadingRecords !== 0))
    fail('"continuationLines" needs a header line first (its names say how wide a record is), and no "recordTypes" or "leadingRecords"');
  const footer = raw.footer !== undefined ? parseFooter(raw.footer, fail) : undefined;
  if (footer && trailer)
    fail(
      '"footer" and "trailer" both say how the file ends: a closing total record is a "trailer"; free-text lines after the rows are a "footer", their figures read by "captures" (use one)',
    );
  if (footer && recordTypes)
    fail(
      '"footer" needs a file without "recordTypes": a file of record types tells what follows its rows by their type ("info", a total record)',
    );
  const captures =
    raw.captures !== undefined
      ? parseCaptures(raw.captures, { skipLines: skipLines as number, leadingRecords: leadingRecords as number, footer }, fail)
      : undefined;
  checkCaptureUses(columns, captures ?? [], fail);
  const totals =
    raw.totals !== undefined
      ? parseTotals(
          raw.totals,
          columns,
          leadingRecords as number,
          fail,
          (captures ?? []).map((c) => c.name),
        )
      : undefined;
  for (const type of totals?.flatMap((t) => (t.kind === 'record' ? [t] : [])) ?? []) {
    if (type.at === 'footer' && recordTypes && !recordTypes.has(type.record))
      fail(`totals: "${type.record}" must be one of the "recordTypes" (an "info" record), as its footer`);
  }
  return {
    name,
    table: table,
    delimiter: delimiter,
    ...(encoding !== undefined ? { encoding } : {}),
    decimalMark: decimalMark,
    groupSeparator: groupSeparator as Layout['groupSeparator'],
    skipLines: skipLines as number,
    header: header,
    ...(timeZone !== undefined ? { timeZone: timeZone as string } : {}),
    ...(locale ? { locale } : {}),
    ...(currencyAliases ? { currencyAliases } : {}),
    columns,
    naturalKey: keys,
    ...(occurrence !== undefined ? { occurrence } : {}),
    ...(seenBefore ? { seenBefore: true } : {}),
    extraColumns: extraColumns,
    skipRows: parseSkipRows(raw.skipRows, columns, header, fail),
    ...(trailer ? { trailer } : {}),
    ...(footer ? { footer } : {}),
    ...(recordTypes ? { recordTypes } : {}),
    ...(leadingRecords !== 0 ? { leadingRecords: leadingRecords as number } : {}),
    ...(nullPadding ? { nullPadding: true } : {}),
    ...(raw.spaceAfterQuote === true ? { spaceAfterQuote: true } : {}),
    ...(raw.whiteLinesBlank === true ? { whiteLinesBlank: true } : {}),
    ...(captures ? { captures } : {}),
    ...(raw.continuationLines === true ? { continuationLines: true } : {}),
    ...(totals ? { totals } : {}),
  };
}

/** A regular expression (JavaScript, Unicode) from configuration, or the layout error naming where. */
function layoutPattern(raw: unknown, where: string, what: string, fail: Fail): RegExp {
  if (typeof raw !== 'string' || raw === '') return fail(`${where} must be ${what}`);
  try {
    return new RegExp(raw, 'u');
  } catch (err) {
    return fail(`${where} is not a regular expression: ${(err as Error).message}`);
  }
}

/**
 * A capture's pattern: a regular expression (Unicode) with a group holding the figure, the first
 * unless `group` names another (its number, or its name: `(?<count>\d+)`).
 */
function capturePattern(raw: unknown, group: unknown, where: string, fail: Fail): RegExp {
  const pattern = layoutPattern(raw, where, 'a regular expression whose first group (or its "group") is the figure', fail);
  // the groups a pattern has: an alternative that matches the empty text shows them all
  const empty = new RegExp(`${pattern.source}|`, 'u').exec('')!;
  if (empty.length < 2) fail(`${where} has no group: put the figure in one, e.g. "共(\\d+)笔记录"`);
  if (group === undefined) return pattern;
  const names = Object.keys(empty.groups ?? {});
  if (typeof group === 'string') {
    if (!names.includes(group))
      fail(
        `${where}: "group" ${JSON.stringify(group)} is not a named group of the pattern (${names.length > 0 ? `its names: ${names.join(', ')}` : 'it has none: write (?<name>…)'})`,
      );
  } else if (!Number.isInteger(group) || (group as number) < 1 || (group as number) >= empty.length) {
    fail(`${where}: "group" must be a group's number, 1 to ${empty.length - 1}, or its name`);
  }
  return pattern;
}

/**
 * `footer`: `{"startsAt": PATTERN}` (the first line after the header that it matches begins the
 * footer) or `{"lines": N}` (the file's last N lines that are not blank): free text after the
 * rows, never read as records (docs/LAYOUTS.md).
 */
function parseFooter(raw: unknown, fail: Fail): Footer {
  const shapes =
    '{"startsAt": PATTERN} (the first line after the header that it matches, and every line after it) or {"lines": N} (the last N lines that are not blank)';
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail(`"footer" must be ${shapes}`);
  const entry = raw as Record<string, unknown>;
  const keys = Object.keys(entry).sort().join(',');
  if (keys === 'startsAt') {
    const startsAt = layoutPattern(entry.startsAt, 'footer: "startsAt"', "a regular expression matching the footer's first line", fail);
    if (startsAt.test(''))
      fail(
        `footer: "startsAt" /${startsAt.source}/ matches an empty text, so it would match the first row: make it match the footer's first line only, e.g. "^#-+交易记录明细列表结束"`,
      );
    return { startsAt };
  }
  if (keys === 'lines') {
    if (!Number.isInteger(entry.lines) || (entry.lines as number) < 1 || (entry.lines as number) > MAX_FOOTER_LINES)
      fail(`footer: "lines" must be a whole number, 1 to ${MAX_FOOTER_LINES} (the last lines that are not blank)`);
    return { lines: entry.lines as number };
  }
  return fail(`"footer" must be ${shapes}`);
}

/**
 * `captures`: `{"NAME": {"line": PATTERN, "at", "group"} | {"fileName": PATTERN, "group"} | {"record": TYPE, "field": N}}`,
 * the figures a file states once, outside its rows (reader/captures.ts).
 */
function parseCaptures(
  raw: unknown,
  file: { skipLines: number; leadingRecords: number; footer: Footer | undefined },
  fail: Fail,
): Capture[] {
  const { skipLines, leadingRecords, footer } = file;
  const shapes =
    '{"line": PATTERN} (with "at": "footer" for the lines after the rows), {"fileName": PATTERN} or {"record": TYPE, "field": N}';
  if (!raw || typeof raw !== 'object' || Array.isArray(raw) || Object.keys(raw).length === 0)
    fail(`"captures" must name the figures a file states once, each ${shapes}`);
  return Object.entries(raw as Record<string, unknown>).map(([name, spec]): Capture => {
    const where = `captures "${name}"`;
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) fail(`${where}: a capture's name must be a lower-case identifier`);
    if (name === DELIVERY_YEAR) fail(`${where}: "${DELIVERY_YEAR}" is the year's own source (the day the file was delivered)`);
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) return fail(`${where} must be ${shapes}`);
    const { at, group, ...entry } = spec as Record<string, unknown>;
    const keys = Object.keys(entry).sort().join(',');
    const grouped = group !== undefined ? { group: group as number | string } : {};
    if (at !== undefined && keys !== 'line') fail(`${where}: "at" is where a "line" pattern reads: give "line"`);
    if (keys === 'line') {
      if (at !== undefined && at !== 'top' && at !== 'footer')
        fail(`${where}: "at" must be "top" (the preamble and leading records, the default) or "footer" (the lines after the rows)`);
      if (at === 'footer') {
        if (!footer) fail(`${where}: "at": "footer" reads the lines after the rows: the layout has no "footer" saying where they begin`);
        return { name, line: capturePattern(entry.line, group, `${where}: "line"`, fail), at: 'footer', ...grouped };
      }
      if (skipLines === 0 && leadingRecords === 0)
        fail(
          `${where}: "line" reads the preamble ("skipLines") or the leading records ("leadingRecords"): the layout has neither (a line after the rows: "at": "footer")`,
        );
      return { name, line: capturePattern(entry.line, group, `${where}: "line"`, fail), ...grouped };
    }
    if (keys === 'fileName') return { name, fileName: capturePattern(entry.fileName, group, `${where}: "fileName"`, fail), ...grouped };
    if (group !== undefined) fail(`${where}: "group" is a pattern's group: "record" takes a "field"`);
    if (keys === 'field,record') {
      if (leadingRecords === 0) fail(`${where}: "record" is one of the leading records: the layout has no "leadingRecords"`);
      if (typeof entry.record !== 'string' || entry.record === '')
        fail(`${where}: "record" must be the record's first field, e.g. "HEADER"`);
      if (!Number.isInteger(entry.field) || (entry.field as number) < 2) fail(`${where}: "field" must be a field position, 2 or more`);
      return { name, record: { type: entry.record, field: entry.field as number } };
    }
    return fail(`${where} must be ${shapes}`);
  });
}

/** A column's `capture` and `year` name captures there are. */
function checkCaptureUses(columns: readonly ColumnSpec[], captures: readonly Capture[], fail: Fail): void {
  const known = captures.map((c) => c.name);
  const listed = known.length > 0 ? `(captures: ${known.join(', ')})` : '(the layout has no "captures")';
  const inFooter = (name: string) => captures.find((c) => c.name === name)?.at === 'footer';
  const late = (name: string) =>
    `"${name}" is read from the footer, after the rows: a figure known only then cannot fill or date them (the footer's figures are for "totals")`;
  for (const column of columns) {
    if (column.capture && !known.includes(column.capture.name))
      fail(`column "${column.name}": "capture" must name one of the layout's captures ${listed}`);
    if (column.capture && inFooter(column.capture.name)) fail(`column "${column.name}": "capture" ${late(column.capture.name)}`);
    if (column.year !== undefined && column.year !== DELIVERY_YEAR && !known.includes(column.year))
      fail(`column "${column.name}": "year" must be "${DELIVERY_YEAR}" or name one of the layout's captures ${listed}`);
    if (column.year !== undefined && inFooter(column.year)) fail(`column "${column.name}": "year" ${late(column.year)}`);
  }
}

/** The occurrence column when no name is given (`"occurrence": true`). */
export const OCCURRENCE_COLUMN = 'occurrence';

/**
 * `occurrence`: `true` (the column `occurrence`) or the name of the table column that numbers the
 * rows of a file with the same key values; a column of the table's own, never one of the layout's.
 */
function parseOccurrence(raw: unknown, columns: ColumnSpec[], fail: Fail): string | undefined {
  if (raw === undefined || raw === false) return undefined;
  const name = raw === true ? OCCURRENCE_COLUMN : raw;
  if (typeof name !== 'string' || !IDENTIFIER.test(name))
    fail('"occurrence" must be true (a column "occurrence") or the lower-case SQL name of the column numbering repeated keys');
  if (columns.some((c) => c.name === name))
    fail(`"occurrence": "${name}" is one of the layout's columns: the occurrence is a column of its own (give it another name)`);
  if (RESERVED_COLUMNS.includes(name)) fail(`"occurrence": "${name}" is reserved for provenance`);
  return name;
}

/**
 * `currencyAliases`: the codes a partner writes for an ISO 4217 currency, such as `{"RUR": "RUB"}`
 * (the rouble's code before 1998, which Russian banks still write). Each alias is no active code
 * itself (an alias never turns one currency into another) and names an active one; every other
 * code is checked against ISO 4217 as ever.
 */
function parseCurrencyAliases(raw: unknown, fail: Fail): Record<string, string> {
  const example = 'e.g. {"RUR": "RUB"}';
  if (!raw || typeof raw !== 'object' || Array.isArray(raw) || Object.keys(raw).length === 0)
    fail(`"currencyAliases" must map the codes the partner writes to ISO 4217 codes, ${example}`);
  const aliases: Record<string, string> = {};
  for (const [alias, code] of Object.entries(raw as Record<string, unknown>)) {
    if (!/^[A-Z]{2,8}$/.test(alias)) fail(`"currencyAliases": "${alias}" must be 2 to 8 capital letters (matched in any case)`);
    if (isActiveCurrency(alias)) fail(`"currencyAliases": "${alias}" is an ISO 4217 currency of its own: it cannot stand for another`);
    if (typeof code !== 'string' || !isActiveCurrency(code))
      fail(`"currencyAliases": "${alias}" must name an active ISO 4217 currency code, ${example}`);
    aliases[alias] = code;
  }
  return aliases;
}

/** `locale`: a BCP 47 tag or a list of them, each a language Intl writes month names in. */
function parseLocale(raw: unknown, fail: Fail): string[] | undefined {
  if (raw === undefined) return undefined;
  const tags = Array.isArray(raw) ? raw : [raw];
  if (tags.length === 0) fail('"locale" must be a BCP 47 language tag such as "de", or a list of them');
  const locale = tags.map((tag) => {
    const known = languageTag(tag);
    return 'tag' in known ? known.tag : fail(`"locale" ${known.problem}`);
  });
  return [...new Set(locale)];
}

/**
 * `encoding`: a label `TextDecoder` knows (`iso-8859-1`, `windows-1250`, `utf-16le`…), or
 * `utf-16` for "by its byte-order mark"; kept as `TextDecoder` names it. UTF-8, the default,
 * is kept as no encoding at all.
 */
function parseEncoding(raw: unknown, fail: Fail): string | undefined {
  if (raw === undefined) return undefined;
  const name = typeof raw === 'string' ? encodingName(raw) : undefined;
  if (name === undefined) {
    fail(
      `"encoding" must be an encoding label as WHATWG names it, e.g. "utf-8" (the default), "iso-8859-1", "iso-8859-15", "windows-1250", "windows-1252", "utf-16le", "utf-16be" or "${UTF16_BY_BOM}" (by its byte-order mark)`,
    );
  }
  return name === 'utf-8' ? undefined : name;
}

function parseSkipRows(raw: unknown, columns: ColumnSpec[], header: boolean, fail: Fail): SkipRule[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return fail('"skipRows" must be a list of {"column", "values"}');
  return raw.map((r, i) => {
    const { column, values } = (r ?? {}) as Record<string, unknown>;
    if (typeof column !== 'string' || column === '') fail(`skipRows ${i + 1}: "column" must name a column or a header`);
    if (!header && !columns.some((c) => c.name === column)) fail(`skipRows ${i + 1}: "column" must name one of the layout's columns`);
    if (!Array.isArray(values) || values.length === 0 || values.some((v) => typeof v !== 'string')) {
      fail(`skipRows ${i + 1}: "values" must be a non-empty list of strings ("" for an empty field)`);
    }
    return { column: column, values: values as string[] };
  });
}

function parseTrailer(raw: unknown, columns: ColumnSpec[], fail: Fail): Trailer {
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
    firstField: firstField,
    ...(rowCountField !== undefined ? { rowCountField: rowCountField as number } : {}),
    ...(sumField !== undefined ? { sumField: sumField as number, sumOf: sumOf as string } : {}),
  };
}

/** `{"SB": "data", "CH": "header", "SC": {"count": 2}, …}`: each record type by its first field. */
function parseRecordTypes(raw: unknown, header: boolean, fail: Fail): ReadonlyMap<string, RecordRole> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return fail('"recordTypes" must be an object: each type (the first field) and its role (data, header, skip, info or {"count": FIELD})');
  const types = new Map<string, RecordRole>();
  for (const [type, role] of Object.entries(raw as Record<string, unknown>)) {
    const where = `recordTypes "${type}"`;
    if (type === '') fail('recordTypes: a type must be the text of a first field');
    if (typeof role === 'string' && (ROLES as readonly string[]).includes(role)) {
      types.set(type, { role } as RecordRole);
      continue;
    }
    const field = (role as { count?: unknown } | null)?.count;
    if (role && typeof role === 'object' && Object.keys(role).length === 1 && Number.isInteger(field) && (field as number) >= 2) {
      types.set(type, { role: 'count', field: field as number });
      continue;
    }
    fail(`${where} must be "data", "header", "skip", "info" or {"count": FIELD} (the field holding the number of data records, 2 or more)`);
  }
  const roles = [...types.values()].map((r) => r.role);
  if (!roles.includes('data')) fail('recordTypes: name the type of the data records ("data")');
  const headers = roles.filter((r) => r === 'header').length;
  if (header && headers !== 1) fail('recordTypes: name the one type whose record is the header ("header"), or set "header": false');
  if (!header && headers > 0) fail('recordTypes: a "header" type needs "header": true');
  return types;
}

/** A layout as configuration writes it: what `layout suggest` prints and what `extends` starts from. */
export function toLayoutJson(layout: Layout): Record<string, unknown> {
  const out: Record<string, unknown> = { table: layout.table };
  if (layout.delimiter !== LAYOUT_DEFAULTS.delimiter) out.delimiter = layout.delimiter;
  if (layout.encoding !== undefined) out.encoding = layout.encoding;
  if (layout.decimalMark !== LAYOUT_DEFAULTS.decimalMark) out.decimalMark = layout.decimalMark;
  if (layout.groupSeparator !== LAYOUT_DEFAULTS.groupSeparator) out.groupSeparator = layout.groupSeparator;
  if (layout.skipLines !== 0) out.skipLines = layout.skipLines;
  if (!layout.header) out.header = false;
  if (layout.timeZone !== undefined) out.timeZone = layout.timeZone;
  if (layout.locale !== undefined) out.locale = layout.locale.length === 1 ? layout.locale[0] : layout.locale;
  if (layout.currencyAliases !== undefined) out.currencyAliases = { ...layout.currencyAliases };
  out.columns = layout.columns.map(columnJson);
  out.naturalKey = layout.naturalKey.length === 1 ? layout.naturalKey[0] : layout.naturalKey;
  if (layout.occurrence !== undefined) out.occurrence = layout.occurrence === OCCURRENCE_COLUMN ? true : layout.occurrence;
  // a layout with an occurrence compares rows seen before unless it says not to
  if (layout.occurrence !== undefined && !layout.seenBefore) out.seenBefore = false;
  if (layout.occurrence === undefined && layout.seenBefore) out.seenBefore = true;
  if (layout.extraColumns !== 'ignore') out.extraColumns = layout.extraColumns;
  if (layout.skipRows.length > 0) out.skipRows = layout.skipRows.map((skipRule) => ({ column: skipRule.column, values: skipRule.values }));
  if (layout.trailer) out.trailer = { ...layout.trailer };
  if (layout.footer) out.footer = layout.footer.startsAt ? { startsAt: layout.footer.startsAt.source } : { lines: layout.footer.lines };
  if (layout.recordTypes)
    out.recordTypes = Object.fromEntries([...layout.recordTypes].map(([t, r]) => [t, r.role === 'count' ? { count: r.field } : r.role]));
  if (layout.leadingRecords) out.leadingRecords = layout.leadingRecords;
  if (layout.nullPadding) out.nullPadding = true;
  if (layout.spaceAfterQuote) out.spaceAfterQuote = true;
  if (layout.whiteLinesBlank) out.whiteLinesBlank = true;
  if (layout.captures) out.captures = Object.fromEntries(layout.captures.map((c) => [c.name, captureJson(c)]));
  if (layout.continuationLines) out.continuationLines = true;
  if (layout.totals) out.totals = totalsJson(layout.totals);
  return out;
}

function captureJson(c: Capture): Record<string, unknown> {
  const group = c.group !== undefined ? { group: c.group } : {};
  if (c.line) return { line: c.line.source, ...(c.at ? { at: c.at } : {}), ...group };
  if (c.fileName) return { fileName: c.fileName.source, ...group };
  return { record: c.record!.type, field: c.record!.field };
}

function columnJson(c: ColumnSpec): Record<string, unknown> {
  const { name, from, alternatives, required, scale, minorUnits, capture, ...rest } = c;
  const out: Record<string, unknown> = { name };
  // a column checked against a capture reads its field: its `from` is written even when it is its name
  const checked = capture !== undefined && !capture.fills;
  if (capture?.fills !== true && c.position === undefined && (from !== name || alternatives || checked)) {
    out.from = alternatives ? [from, ...alternatives.map((a) => (a.timeZone ? { ...a } : a.header))] : from;
  }
  out.type = c.type;
  if (!required) out.required = false;
  if (c.type === 'decimal' && minorUnits === undefined && scale !== 2) out.scale = scale;
  if (minorUnits !== undefined) out.minorUnits = minorUnits;
  for (const [k, v] of Object.entries(rest)) if (v !== undefined && k !== 'type') out[k] = v;
  if (capture) out.capture = capture.name;
  return out;
}
