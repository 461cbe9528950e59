import { RejectError } from '../../errors.js';
import { columnConverters, keyProblem, unpadded } from './columnValues.js';
import { compileDateFormat } from '../values/dateFormat.js';
import { LOCAL_ZONE, type ColumnSpec, type Layout } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';
import { zoneInFileName } from '../values/timeZones.js';

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

/** What a plan knows of the file beyond its records: the name its zone may come from. */
export interface PlanContext {
  fileName?: string;
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
    const at = lookUp(c, c.from);
    if (at !== undefined) return { at, ...(c.timeZone !== undefined ? { timeZone: c.timeZone } : {}) };
    for (const alt of c.alternatives ?? []) {
      const altAt = lookUp(c, alt.header);
      if (altAt !== undefined)
        return { at: altAt, ...((alt.timeZone ?? c.timeZone) !== undefined ? { timeZone: alt.timeZone ?? c.timeZone } : {}) };
    }
    return undefined;
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
  return compilePlan(layout, found, names.length, skipAt, (i) => names[found[i]!.at]!, line, context);
}

/** A file without a header: each column at its `position`; every record as wide as the first. */
export function planPositions(layout: Layout, line: number, context: PlanContext = {}): RowPlan {
  const found = layout.columns.map((c) => ({ at: c.position! - 1, ...(c.timeZone !== undefined ? { timeZone: c.timeZone } : {}) }));
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
  if (zone === undefined && c.format !== undefined && compileDateFormat(c.format, true).hasOffset) return zone;
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

function compilePlan(
  layout: Layout,
  found: (Found | undefined)[],
  headerWidth: number,
  skipAt: (column: string) => number,
  shownAs: (column: number) => string,
  line: number,
  context: PlanContext,
): RowPlan {
  const specs = layout.columns.map((columnSpec, i) => {
    const f = found[i];
    if (f === undefined) return columnSpec;
    const zone = fileZone(layout, columnSpec, f.timeZone, shownAs(i), line, context);
    return zone === columnSpec.timeZone ? columnSpec : { ...columnSpec, timeZone: zone! };
  });
  const index = found.map((f) => f?.at ?? -1);
  const converters = columnConverters(layout, specs);
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
      for (let i = 0; i < columnCount; i++) raw[i] = index[i]! === -1 ? '' : unpadded(fields[index[i]!]!, trim[i]!);
      const values = new Array<string | null>(columnCount);
      for (let i = 0; i < columnCount; i++) {
        const written = raw[i]!;
        const value = noAmount[i]?.has(written.trim()) ? '' : written;
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
        values[i] = out;
      }
      return values;
    },
  };
}
