import { isCalendarDate } from './columnValues.js';
import { isActiveCurrency } from './currencies.js';
import type { CsvRecord } from './csvRecords.js';
import { compileDateFormat } from './dateFormat.js';
import { AS_WRITTEN, RESERVED_COLUMNS, type ColumnType } from './layout.js';
import { parseZone } from './timeZones.js';

/** One column of a draft layout, with what it was inferred from. */
export interface DraftColumn {
  name: string;
  /** the header's text, or `field N` in a file without a header */
  header: string;
  type: ColumnType;
  format?: string;
  required: boolean;
  /** why this type, in a few words: what the sample's values looked like */
  why: string;
  /** the layout column as configuration writes it */
  json: Record<string, unknown>;
}

export interface Draft {
  /** the layout object, as a config file's "layout" */
  layout: Record<string, unknown>;
  columns: DraftColumn[];
  naturalKey: string[];
  /** why that key, or why none was found */
  naturalKeyWhy: string;
  /** what else the draft assumed: preamble, record types, rows left out */
  notes: string[];
}

const DATE_FORMATS = [
  'yyyy-MM-dd',
  'dd/MM/yyyy',
  'MM/dd/yyyy',
  'd/M/yyyy',
  'M/d/yyyy',
  'dd.MM.yyyy',
  'yyyy/MM/dd',
  'dd-MM-yyyy',
  'dd/MM/yy',
  'yyyyMMdd',
];
const TIMESTAMP_FORMATS = [
  'yyyy-MM-dd HH:mm:ss',
  "yyyy-MM-dd'T'HH:mm:ss",
  "yyyy-MM-dd'T'HH:mm:ss.SSS",
  "yyyy-MM-dd'T'HH:mm:ssX",
  "yyyy-MM-dd'T'HH:mm:ss.SSSX",
  "yyyy-MM-dd'T'HH:mm:ssXXX",
  "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
  'yyyy-MM-dd HH:mm:ss XX',
  'yyyy/MM/dd HH:mm:ss XX',
  'yyyy/MM/dd HH:mm:ss',
  'dd/MM/yyyy HH:mm:ss',
  'dd.MM.yyyy HH:mm:ss',
  'M/d/yyyy HH:mm:ss',
  'yyyy-MM-dd HH:mm',
  'dd/MM/yyyy HH:mm',
];
const KEY_LIKE = /(^|_)(id|ref|reference|number|no|code)$|transaction|psp|payment_id|operation/;
const RECORD_TYPE = /^[A-Z]{1,3}$/;

/** A header's text as a table column: lower case, words joined by `_`, never a reserved or duplicate name. */
function columnName(text: string, taken: Set<string>): string {
  let name = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60);
  if (name === '') name = 'column';
  if (/^[0-9]/.test(name)) name = `c_${name}`;
  if (RESERVED_COLUMNS.includes(name)) name = `${name}_value`;
  let unique = name;
  for (let i = 2; taken.has(unique); i++) unique = `${name}_${i}`;
  taken.add(unique);
  return unique;
}

/** Which decimal mark the sample's amounts use: `,` when more values end in a comma and one or two digits. */
function decimalMarkOf(values: string[]): '.' | ',' {
  let comma = 0;
  let point = 0;
  for (const v of values) {
    if (/^[+-]?[\d.\s]*\d,\d{1,4}$/.test(v)) comma++;
    else if (/^[+-]?[\d,\s]*\d\.\d{1,4}$/.test(v) || /^-?\.\d+$/.test(v)) point++;
  }
  return comma > point ? ',' : '.';
}

interface Inferred {
  type: ColumnType;
  format?: string;
  scale?: number | typeof AS_WRITTEN;
  why: string;
}

/** The type of one column's sample values (none empty): the strictest every value reads as. */
function inferType(values: string[], mark: '.' | ',', group: string): Inferred {
  if (values.length === 0) return { type: 'text', why: 'every sampled value is empty' };
  if (values.every((v) => /^-?\d{1,18}$/.test(v)) && !values.some((v) => /^-?0\d/.test(v)))
    return { type: 'integer', why: 'whole numbers' };
  const m = mark === '.' ? '\\.' : ',';
  const g = group === '' ? '' : `(?:${group === '.' ? '\\.' : group}\\d{3})*`;
  const decimal = new RegExp(`^-?(?:\\d{1,3}${g}|\\d+)?(?:${m}(\\d+))?$`);
  if (values.every((v) => decimal.test(v.trim()) && /\d/.test(v)) && !values.some((v) => /^-?0\d/.test(v.trim()))) {
    const places = values.reduce((most, v) => Math.max(most, decimal.exec(v.trim())?.[1]?.length ?? 0), 2);
    // more places than money has (an exchange rate): kept as written
    if (places > 12) return { type: 'decimal', scale: AS_WRITTEN, why: `decimals with up to ${places} places, kept as written` };
    return { type: 'decimal', scale: places, why: `amounts with up to ${places} places` };
  }
  if (values.every((v) => /^[A-Za-z]{3}$/.test(v) && isActiveCurrency(v.toUpperCase())))
    return { type: 'currency', why: 'ISO 4217 currency codes' };
  for (const format of DATE_FORMATS) {
    const parse = compileDateFormat(format, false).parse!;
    if (values.every((v) => ((p) => p !== undefined && isCalendarDate(p.y, p.mo, p.d))(parse(v))))
      return { type: 'date', format, why: `dates like ${values[0]}` };
  }
  for (const format of TIMESTAMP_FORMATS) {
    const parse = compileDateFormat(format, true).parse!;
    if (values.every((v) => ((p) => p !== undefined && isCalendarDate(p.y, p.mo, p.d) && p.h < 24 && p.mi < 60)(parse(v))))
      return { type: 'timestamp', format, why: `times like ${values[0]}` };
  }
  return { type: 'text', why: 'text' };
}

/** The widths the sample's records have, most frequent first. */
export function widths(records: readonly CsvRecord[]): number[] {
  const counts = new Map<number, number>();
  for (const r of records) counts.set(r.fields.length, (counts.get(r.fields.length) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([w]) => w);
}

const looksLikeData = (v: string) => /^[-+]?[\d.,]+$/.test(v.trim()) || /^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}/.test(v.trim());

/**
 * A draft layout for a file no preset fits, from its first records: the delimiter, a preamble
 * before the header, record types told by a short code in the first field, each column's
 * type and format, rows whose first column holds a label where the others hold dates (a
 * bank's balance lines), and a natural-key candidate. It is a draft for a person to review:
 * `check` proves it.
 */
export function draftLayout(records: readonly CsvRecord[], delimiter: string, table: string): Draft {
  const notes: string[] = [];
  let rows = [...records];
  let recordTypes: Record<string, string> | undefined;
  let headerFields: readonly string[] | undefined;
  let skipLines = 0;

  // record types: a short upper-case code first in every record, several codes, one of them most of the file
  const codes = new Map<string, number>();
  for (const r of rows) codes.set(r.fields[0] ?? '', (codes.get(r.fields[0] ?? '') ?? 0) + 1);
  if (rows.length > 2 && codes.size > 1 && [...codes.keys()].every((c) => RECORD_TYPE.test(c))) {
    const data = [...codes].sort((a, b) => b[1] - a[1])[0]![0];
    const firstData = rows.findIndex((r) => r.fields[0] === data);
    const before = rows[firstData - 1];
    const headerType =
      before && before.fields.length === rows[firstData]!.fields.length && !before.fields.some(looksLikeData)
        ? before.fields[0]!
        : undefined;
    recordTypes = Object.fromEntries([...codes.keys()].map((c) => [c, c === data ? 'data' : c === headerType ? 'header' : 'info']));
    if (headerType) headerFields = before!.fields;
    rows = rows.filter((r) => r.fields[0] === data);
    notes.push(
      `records are told by their first field: ${data} holds the rows${headerType ? `, ${headerType} names their fields` : ''}; ` +
        `${[...codes.keys()].filter((c) => c !== data && c !== headerType).join(', ') || 'no other'} are taken as information (see "recordTypes": a count record can be checked with {"count": FIELD})`,
    );
  } else {
    // the header: the first record as wide as most, whose fields are all names (none empty, none
    // data) and after which data follows; what comes before it is a preamble
    const width = widths(rows)[0] ?? 0;
    const isHeader = (r: CsvRecord, i: number) =>
      r.fields.length === width &&
      r.fields.every((f) => f.trim() !== '' && !looksLikeData(f)) &&
      new Set(r.fields).size === width &&
      rows.slice(i + 1, i + 4).some((next) => next.fields.some(looksLikeData));
    const at = rows.slice(0, 30).findIndex(isHeader);
    const candidate = rows[at];
    if (candidate) {
      headerFields = candidate.fields;
      skipLines = candidate.line - 1;
      rows = rows.slice(at + 1);
      if (skipLines > 0)
        notes.push(`the header is on line ${candidate.line}: the ${skipLines} lines before it are a preamble ("skipLines")`);
    } else notes.push('no record looks like a header: the file has none, so its columns are taken by position');
  }

  const width = headerFields?.length ?? widths(rows)[0] ?? 0;
  const taken = new Set<string>();
  const headerTexts = Array.from({ length: width }, (_, i) => (headerFields ? headerFields[i]!.trim() : `field ${i + 1}`));
  const names = headerTexts.map((h, i) => columnName(headerFields ? h : `field_${i + 1}`, taken));
  const data = rows.filter((r) => r.fields.length === width);
  const short = rows.length - data.length;
  const valuesOf = (i: number) => data.map((r) => r.fields[i]!).filter((v) => v.trim() !== '');
  const allValues = headerTexts.flatMap((_, i) => valuesOf(i));
  const mark = decimalMarkOf(allValues);
  const groupSeparator =
    mark === '.'
      ? allValues.some((v) => /^-?\d{1,3}(,\d{3})+\.\d+$/.test(v))
        ? ','
        : ''
      : allValues.some((v) => /^-?\d{1,3}(\.\d{3})+,\d+$/.test(v))
        ? '.'
        : '';

  // a label where the other rows of the first column hold dates (a bank's balance lines): counted, not loaded
  const skipRows: { column: string; values: string[] }[] = [];
  const firstValues = valuesOf(0);
  const labels = [...new Set(firstValues.filter((v) => !looksLikeData(v)))];
  if (labels.length > 0 && labels.length <= 3 && firstValues.length - labels.length >= 2) {
    const dated = inferType(
      firstValues.filter((v) => !labels.includes(v)),
      mark,
      groupSeparator,
    );
    if (dated.type === 'date' || dated.type === 'timestamp') {
      skipRows.push({ column: names[0]!, values: labels });
      notes.push(
        `rows whose ${headerTexts[0]} is ${labels.map((l) => `"${l}"`).join(' or ')} are summary lines: counted, not loaded ("skipRows")`,
      );
    }
  }
  // records of (almost) nothing but delimiters, as a spreadsheet leaves below its rows
  const blank = data.filter((r) => r.fields[0] === '' && r.fields.filter((f) => f.trim() !== '').length <= Math.max(1, width / 10));
  if (blank.length > 0 && skipRows.length === 0 && blank.length < data.length) {
    skipRows.push({ column: names[0]!, values: [''] });
    notes.push(
      `${blank.length} sampled record(s) are blank but for their delimiters: rows with no ${headerTexts[0]} are counted, not loaded ("skipRows")`,
    );
  }
  const kept = data.filter((r) => !skipRows.some((s) => s.values.includes(r.fields[0]!)));
  const keptValues = (i: number) => kept.map((r) => r.fields[i]!).filter((v) => v.trim() !== '');
  const inferred = headerTexts.map((_, i) => inferType(keptValues(i), mark, groupSeparator));
  const left = (i: number) => kept.map((r) => r.fields[i]!);

  // columns naming a zone (CET, PDT, Europe/Paris): a time takes the first one after it, as Adyen writes them
  const zoneColumns = headerTexts
    .map((_, i) => i)
    .filter((i) => {
      const values = valuesOf(i);
      return values.length > 0 && values.every((v) => parseZone(v) !== undefined && !/^[+-]?\d/.test(v));
    });
  const columns: DraftColumn[] = headerTexts.map((header, i) => {
    const t = inferred[i]!;
    const required = left(i).every((v) => v.trim() !== '');
    const json: Record<string, unknown> = { name: names[i] };
    if (headerFields && names[i] !== header) json.from = header;
    if (!headerFields) json.position = i + 1;
    json.type = t.type;
    if (!required) json.required = false;
    if (t.scale !== undefined && t.scale !== 2) json.scale = t.scale;
    if (t.format !== undefined && t.format !== (t.type === 'date' ? 'yyyy-MM-dd' : 'yyyy-MM-dd HH:mm:ss')) json.format = t.format;
    let why = t.why;
    const zoneColumn = zoneColumns.find((z) => z > i) ?? zoneColumns[0] ?? -1;
    if (t.type === 'timestamp' && !/X/.test(t.format ?? '')) {
      if (zoneColumn !== -1) {
        json.timeZoneFrom = names[zoneColumn];
        why += `, in the zone ${headerTexts[zoneColumn]} names`;
      } else {
        json.timeZone = 'UTC';
        why += "; no zone in the file: UTC assumed, say the partner's if it is not";
      }
    }
    return { name: names[i]!, header, type: t.type, ...(t.format ? { format: t.format } : {}), required, why, json };
  });
  if (short > 0) notes.push(`${short} sampled record(s) are not ${width} fields wide: check them`);

  const { key, why } = naturalKey(columns, kept);
  const layout: Record<string, unknown> = { table };
  if (delimiter !== ',') layout.delimiter = delimiter;
  if (mark !== '.') layout.decimalMark = mark;
  if (groupSeparator !== '') layout.groupSeparator = groupSeparator;
  if (skipLines > 0) layout.skipLines = skipLines;
  if (!headerFields) layout.header = false;
  if (recordTypes) layout.recordTypes = recordTypes;
  layout.columns = columns.map((c) => c.json);
  layout.naturalKey = key.length === 1 ? key[0] : key;
  if (skipRows.length > 0) layout.skipRows = skipRows;
  return { layout, columns, naturalKey: key, naturalKeyWhy: why, notes };
}

/**
 * A natural-key candidate: one column, else two or three, whose values are all there and
 * unique in the sample, id-like names first. None found: the first column, said so.
 */
function naturalKey(columns: DraftColumn[], kept: readonly CsvRecord[]): { key: string[]; why: string } {
  const usable = columns
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => c.required && ['text', 'integer', 'date', 'currency'].includes(c.type))
    .sort((a, b) => Number(KEY_LIKE.test(b.c.name)) - Number(KEY_LIKE.test(a.c.name)));
  const unique = (idx: number[]) => new Set(kept.map((r) => JSON.stringify(idx.map((i) => r.fields[i])))).size === kept.length;
  for (const size of [1, 2, 3]) {
    const combos = combinations(usable.slice(0, 8), size);
    const found = combos.find((combo) => unique(combo.map((u) => u.i)));
    if (found)
      return {
        key: found.map((u) => u.c.name),
        why: `${size === 1 ? 'its values are' : 'together their values are'} there and unique in the ${kept.length} sampled rows${found.every((u) => KEY_LIKE.test(u.c.name)) ? ', and named like an id' : ''}: confirm the partner documents it as unique`,
      };
  }
  const first = columns.find((c) => c.required) ?? columns[0];
  if (first && !first.required) {
    first.required = true;
    delete first.json.required;
  }
  return { key: [first?.name ?? 'id'], why: "no column or pair of columns is unique in the sample: name the partner's unique id" };
}

function combinations<T>(items: T[], size: number): T[][] {
  if (size === 1) return items.map((i) => [i]);
  const out: T[][] = [];
  items.forEach((item, i) => {
    for (const rest of combinations(items.slice(i + 1), size - 1)) out.push([item, ...rest]);
  });
  return out;
}
