import { RejectError } from '../../errors.js';
import { columnConverters, keyProblem, unpadded, type Converter, type FileColumn } from './columnValues.js';
import { capturedText, type Captured } from './captures.js';
import { dayIn, nearestYear, yearSource, type YearOf } from '../values/yearOf.js';
import { compileColumnFormat } from '../model/layoutColumns.js';
import { DELIVERY_YEAR, LOCAL_ZONE, type ColumnSpec, type Layout } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';
import { parseZone, zoneInFileName } from '../values/timeZones.js';

/**
 * What the header (or, in a file without one, the layout's positions) said about where each
 * layout column is, compiled once per file: each row is then checked and converted without
 * looking anything up.
 */
export interface RowPlan {
  /** the record's field count: every row must have as many (a file without a header: its first row's) */
  width: number;
  /**
   * The header names exactly the layout's columns, in its order, and no empty value stands for
   * anything but NULL: a row's fields are its columns as COPY takes them.
   */
  inOrder: boolean;
  /** checks and converts a record: its values in the layout's column order (null for empty optional ones), or 'skip' */
  row(fields: readonly string[], line: number): (string | null)[] | 'skip';
  /** the raw text of a layout column in a record (for the trailer's sum of a skipped row) */
  indexOf(column: string): number;
  /** the layout column at a record's 0-based field, if any: how messages name it */
  columnAt(field: number): string | undefined;
}

/**
 * What a plan knows of the file beyond its records: the name its zone may come from, the figures
 * it stated above its rows (reader/captures.ts), and when it was delivered (a year's source).
 */
export interface PlanContext {
  fileName?: string;
  captures?: ReadonlyMap<string, Captured>;
  /** the delivery's time (ms since the epoch): the upload's time as the intake listed it */
  deliveredAt?: number;
}

const header = (line: number, what: string) => new RejectError(`line ${line}: header ${what}`, { line, field: 'header' });

/** Where a layout column was found in one file's header, and the zone of the header it was found under. */
interface Found {
  at: number;
  timeZone?: string;
}

/**
 * Matches the header to the layout by name, in any order (`from`, then its alternatives, are
 * the partner's texts; `occurrence` picks one of a name given twice). A required column the
 * header lacks, a header naming one column twice, and (with `extraColumns: "reject"`) a column
 * the layout does not know are each a reject naming it.
 */
export function planRows(layout: Layout, headerFields: readonly string[], line: number, context: PlanContext = {}): RowPlan {
  const names = headerFields.map((f) => f.trim());
  const places = new Map<string, number[]>();
  names.forEach((n, i) => {
    const list = places.get(n);
    if (list) list.push(i);
    else places.set(n, [i]);
  });
  const lookUp = (columnSpec: ColumnSpec, text: string): number | undefined => {
    const list = places.get(text);
    if (!list) return undefined;
    if (columnSpec.occurrence !== undefined) return list[columnSpec.occurrence - 1];
    if (list.length > 1) {
      const at = list.map((i) => i + 1).join(' and ');
      throw header(line, `names ${quoteValue(text)} twice (columns ${at}): say which with the column's "occurrence"`);
    }
    return list[0];
  };
  const found: (Found | undefined)[] = layout.columns.map((c) => {
    if (c.capture?.fills) return { at: -1 };
    const at = lookUp(c, c.from);
    if (at !== undefined) return { at, ...(c.timeZone !== undefined ? { timeZone: c.timeZone } : {}) };
    for (const alt of c.alternatives ?? []) {
      const altAt = lookUp(c, alt.header);
      if (altAt !== undefined)
        return { at: altAt, ...((alt.timeZone ?? c.timeZone) !== undefined ? { timeZone: alt.timeZone ?? c.timeZone } : {}) };
    }
    // a column the file may also state once: where the header lacks it, the figure fills it
    return c.capture ? { at: -1 } : undefined;
  });
  const missing = layout.columns
    .filter((c, i) => c.required && found[i] === undefined)
    .map((c) => [c.from, ...(c.alternatives ?? []).map((columnSource) => columnSource.header)].map((h) => quoteValue(h)).join(' or '));
  if (missing.length > 0) {
    throw header(
      line,
      `lacks ${missing.length === 1 ? 'the column' : 'the columns'} ${missing.join(', ')} (it has ${names.length} columns)`,
    );
  }
  if (layout.extraColumns === 'reject') {
    const known = new Set(layout.columns.flatMap((c) => [c.from, ...(c.alternatives ?? []).map((a) => a.header)]));
    // a field without a name is no column: nothing reads it
    const extra = names.filter((n) => n !== '' && !known.has(n)).map((n) => quoteValue(n));
    if (extra.length > 0)
      throw header(line, `has ${extra.length === 1 ? 'a column' : 'columns'} the layout does not know: ${extra.join(', ')}`);
  }
  const skipAt = (column: string) => {
    const i = layout.columns.findIndex((c) => c.name === column);
    const at = i !== -1 ? found[i]?.at : (places.get(column)?.[0] ?? undefined);
    if (at === undefined) throw header(line, `lacks the column ${quoteValue(column)} that skipRows looks at`);
    return at;
  };
  return compilePlan(layout, found, names.length, skipAt, (i) => names[found[i]!.at] ?? layout.columns[i]!.name, line, context);
}

/** A file without a header: each column at its `position`; every record as wide as the first. */
export function planPositions(layout: Layout, line: number, context: PlanContext = {}): RowPlan {
  const found = layout.columns.map((c) => ({
    at: c.capture?.fills ? -1 : c.position! - 1,
    ...(c.timeZone !== undefined ? { timeZone: c.timeZone } : {}),
  }));
  const skipAt = (column: string) => found[layout.columns.findIndex((c) => c.name === column)]!.at;
  return compilePlan(layout, found, -1, skipAt, (i) => `field ${layout.columns[i]!.position}`, line, context);
}

/**
 * The zone of a timestamp column in one file: its header's (or the column's), the layout's for
 * one that names none, and for `local` the layout's, else the one the file's name ends with.
 */
function fileZone(
  layout: Layout,
  c: ColumnSpec,
  zone: string | undefined,
  where: string,
  line: number,
  context: PlanContext,
): string | undefined {
  if (c.type !== 'timestamp' || c.timeZoneFrom !== undefined) return zone;
  if (zone === undefined && c.format !== undefined && compileColumnFormat(c).hasOffset) return zone;
  if (zone !== undefined && zone !== LOCAL_ZONE) return zone;
  if (layout.timeZone !== undefined) return layout.timeZone;
  const named = context.fileName !== undefined ? zoneInFileName(context.fileName) : undefined;
  if (named !== undefined) return named;
  const file = context.fileName !== undefined ? `the file name ${quoteValue(context.fileName)}` : 'the file name';
  throw header(
    line,
    `column ${quoteValue(where)} (${c.name}) is in the report's own time zone, and neither the layout's "timeZone" nor ${file} (like …_America-Chicago.csv) says which`,
  );
}

/**
 * The year of a column whose format writes none, in one file: a capture's (a year, or a day the
 * dates are nearest to), or the nearest to the day the file was delivered, in the layout's
 * `timeZone` (UTC without one). Unknown is a reject: the year is never guessed.
 */
function fileYear(layout: Layout, column: ColumnSpec, line: number, context: PlanContext): YearOf {
  if (column.year === DELIVERY_YEAR) {
    if (context.deliveredAt === undefined)
      throw new RejectError(
        `line ${line}: column ${column.name} takes its year from the day the file was delivered, which is not known here`,
        {
          line,
          field: column.name,
        },
      );
    const zone = parseZone(layout.timeZone ?? 'UTC') ?? { fixed: 0 };
    return nearestYear(dayIn(context.deliveredAt, zone));
  }
  const captured = context.captures?.get(column.year!);
  if (!captured)
    throw new RejectError(`line ${line}: column ${column.name} takes its year from ${column.year}, which the file does not state`, {
      line,
      field: column.name,
    });
  const yearOf = yearSource(captured.value);
  if (!yearOf)
    throw new RejectError(
      `${captured.where}: ${capturedText(column.year!, captured)} is neither a year (2026) nor a date (2026-12-31), which column ${column.name} takes its year from`,
      { ...(captured.line !== undefined ? { line: captured.line } : {}), field: column.year! },
    );
  return yearOf;
}

/**
 * The figures a file stated once, for each column that `capture`s one: as the column's rows hold
 * it (an upper-case currency), and how a message names it. A figure the column cannot read
 * rejects the file before any row.
 */
function capturedValues(
  layout: Layout,
  converters: readonly Converter[],
  line: number,
  context: PlanContext,
): ({ written: string; value: string; told: string } | undefined)[] {
  return layout.columns.map((c, i) => {
    if (!c.capture) return undefined;
    const captured = context.captures?.get(c.capture.name);
    if (!captured)
      throw new RejectError(`line ${line}: column ${c.name} is the file's ${c.capture.name}, which the file does not state`, {
        line,
        field: c.name,
      });
    const out = converters[i]!(captured.value, []);
    const told = capturedText(c.capture.name, captured);
    if (typeof out !== 'string')
      throw new RejectError(`${captured.where}: ${told} ${out.problem} (column ${c.name})`, {
        ...(captured.line !== undefined ? { line: captured.line } : {}),
        field: c.name,
      });
    return { written: captured.value, value: out, told };
  });
}

function compilePlan(
  layout: Layout,
  found: (Found | undefined)[],
  headerWidth: number,
  skipAt: (column: string) => number,
  shownAs: (column: number) => string,
  line: number,
  context: PlanContext,
): RowPlan {
  const specs = layout.columns.map((columnSpec, i): FileColumn => {
    const f = found[i];
    if (f === undefined) return columnSpec;
    const zone = fileZone(layout, columnSpec, f.timeZone, shownAs(i), line, context);
    const yearOf = columnSpec.year !== undefined ? fileYear(layout, columnSpec, line, context) : undefined;
    return zone === columnSpec.timeZone && !yearOf ? columnSpec : { ...columnSpec, timeZone: zone!, ...(yearOf ? { yearOf } : {}) };
  });
  const index = found.map((f) => f?.at ?? -1);
  const converters = columnConverters(layout, specs);
  // the figures the file stated once, for the columns they fill or check: converted as the column's rows are
  const stated = capturedValues(layout, converters, line, context);
  const keys = new Set(layout.naturalKey);
  const isKey = layout.columns.map((c) => keys.has(c.name));
  const required = layout.columns.map((c) => c.required);
  const trim = layout.columns.map((c) => c.trim === true);
  // the texts a column declares to mean no amount (`noAmount`: `-`) are read as an empty value
  const noAmount = layout.columns.map((c) => (c.noAmount ? new Set(c.noAmount) : undefined));
  // an empty optional key part is '' (UNIQUE never compares NULLs), any other empty optional value NULL
  const empty = layout.columns.map((c, i) => (isKey[i] && !c.required ? '' : null));
  const columnNames = layout.columns.map((c) => c.name);
  const skips = layout.skipRows.map((rule) => ({ at: skipAt(rule.column), values: new Set(rule.values) }));
  let width = headerWidth;
  // a fold, not Math.max(...index): a layout may be wider than a call takes arguments
  const last = index.reduce((most, at) => Math.max(most, at), -1);
  const columnCount = layout.columns.length;
  const raw = new Array<string>(columnCount);
  const bad = (l: number, field: string, message: string) => new RejectError(`line ${l}, field ${field}: ${message}`, { line: l, field });

  return {
    get width() {
      return width;
    },
    inOrder: headerWidth === columnCount && index.every((at, i) => at === i) && empty.every((e) => e === null),
    indexOf: (column) => index[columnNames.indexOf(column)] ?? -1,
    columnAt: (field) => {
      const i = index.indexOf(field);
      return i === -1 ? undefined : columnNames[i];
    },
    row(fields, line) {
      if (fields.length !== width) {
        if (width === -1 && fields.length > last) width = fields.length;
        else {
          // a short summary line is told by its label before its width: never by an empty
          // field, which a record cut short has too
          for (const skip of skips) {
            const field = fields[skip.at];
            if (field !== undefined && field !== '' && skip.values.has(field)) return 'skip';
          }
          const expected = width === -1 ? `at least ${last + 1}` : String(width);
          throw new RejectError(`line ${line}: expected ${expected} fields, found ${fields.length}`, { line });
        }
      }
      for (const skip of skips) if (skip.values.has(fields[skip.at]!)) return 'skip';
      for (let i = 0; i < columnCount; i++) raw[i] = index[i]! === -1 ? (stated[i]?.written ?? '') : unpadded(fields[index[i]!]!, trim[i]!);
      const values = new Array<string | null>(columnCount);
      for (let i = 0; i < columnCount; i++) {
        const written = raw[i]!;
        // a row that leaves a column the file states once empty has the file's figure
        const value = noAmount[i]?.has(written.trim()) ? '' : written === '' ? (stated[i]?.written ?? '') : written;
        if (value.includes('\0')) throw bad(line, columnNames[i]!, 'contains a NUL character'); // PostgreSQL text cannot hold it
        if (value === '') {
          if (required[i]) throw bad(line, columnNames[i]!, 'required value is missing');
          values[i] = empty[i] ?? null;
          continue;
        }
        // a key is looked at as written first: a padded date says "trim", not "is not a date"
        if (isKey[i]) {
          const problem = keyProblem(value);
          if (problem) throw bad(line, columnNames[i]!, `${quoteValue(value)} ${problem}`);
        }
        const out = converters[i]!(value, raw);
        if (typeof out !== 'string') throw bad(line, columnNames[i]!, `${quoteValue(value)} ${out.problem}`);
        const figure = stated[i];
        if (figure && out !== figure.value) throw bad(line, columnNames[i]!, `${quoteValue(value)} is not the file's ${figure.told}`);
        values[i] = out;
      }
      return values;
    },
  };
}
