import { RejectError } from '../errors.js';
import { columnConverters, keyProblem } from './columnValues.js';
import type { Layout } from './layout.js';
import { quoteValue } from './quoteValue.js';

/**
 * What the header said about where each layout column is, compiled once per file: each row is
 * then checked and converted without looking anything up.
 */
export interface RowPlan {
  /** the header's field count: every row must have as many */
  width: number;
  /** the header names exactly the layout's columns, in its order: a row's fields are its columns */
  inOrder: boolean;
  /** checks and converts a record: its values in the layout's column order (null for empty optional ones), or 'skip' */
  row(fields: readonly string[], line: number): (string | null)[] | 'skip';
  /** the raw text of a layout column in a record (for the trailer's sum of a skipped row) */
  indexOf(column: string): number;
}

const header = (line: number, what: string) => new RejectError(`line ${line}: header ${what}`, { line, field: 'header' });

/**
 * Matches the header to the layout by name, in any order (`from` is the partner's text).
 * A required column the header lacks, a header naming one column twice, and (with
 * `extraColumns: "reject"`) a column the layout does not know are each a reject naming it.
 */
export function planRows(layout: Layout, headerFields: readonly string[], line: number): RowPlan {
  const names = headerFields.map((f) => f.trim());
  const positions = new Map<string, number>();
  names.forEach((n, i) => {
    if (positions.has(n)) {
      if (layout.columns.some((c) => c.from === n))
        throw header(line, `names ${quoteValue(n)} twice (columns ${positions.get(n)! + 1} and ${i + 1})`);
      return;
    }
    positions.set(n, i);
  });
  const missing = layout.columns.filter((c) => c.required && !positions.has(c.from)).map((c) => quoteValue(c.from));
  if (missing.length > 0) {
    throw header(
      line,
      `lacks ${missing.length === 1 ? 'the column' : 'the columns'} ${missing.join(', ')} (it has ${names.length} columns)`,
    );
  }
  if (layout.extraColumns === 'reject') {
    const known = new Set(layout.columns.map((c) => c.from));
    const extra = names.filter((n) => !known.has(n)).map((n) => quoteValue(n));
    if (extra.length > 0)
      throw header(line, `has ${extra.length === 1 ? 'a column' : 'columns'} the layout does not know: ${extra.join(', ')}`);
  }

  const index = layout.columns.map((c) => positions.get(c.from) ?? -1);
  const converters = columnConverters(layout);
  const keys = new Set(layout.naturalKey);
  const isKey = layout.columns.map((c) => keys.has(c.name));
  const required = layout.columns.map((c) => c.required);
  const columnNames = layout.columns.map((c) => c.name);
  const skips = layout.skipRows.map((rule) => {
    const spec = layout.columns.find((c) => c.name === rule.column);
    const at = positions.get(spec ? spec.from : rule.column);
    if (at === undefined) throw header(line, `lacks the column ${quoteValue(rule.column)} that skipRows looks at`);
    return { at, values: new Set(rule.values) };
  });
  const width = names.length;
  const n = layout.columns.length;
  const raw: string[] = new Array(n);
  const bad = (l: number, field: string, message: string) => new RejectError(`line ${l}, field ${field}: ${message}`, { line: l, field });

  return {
    width,
    inOrder: width === n && index.every((at, i) => at === i),
    indexOf: (column) => index[columnNames.indexOf(column)] ?? -1,
    row(fields, l) {
      if (fields.length !== width) throw new RejectError(`line ${l}: expected ${width} fields, found ${fields.length}`, { line: l });
      for (const s of skips) if (s.values.has(fields[s.at]!)) return 'skip';
      for (let i = 0; i < n; i++) raw[i] = index[i]! === -1 ? '' : fields[index[i]!]!;
      const values: (string | null)[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const value = raw[i]!;
        if (value.includes('\0')) throw bad(l, columnNames[i]!, 'contains a NUL character'); // PostgreSQL text cannot hold it
        if (value === '') {
          if (required[i]) throw bad(l, columnNames[i]!, 'required value is missing');
          values[i] = null;
          continue;
        }
        const out = converters[i]!(value, raw);
        if (typeof out !== 'string') throw bad(l, columnNames[i]!, `${quoteValue(value)} ${out.problem}`);
        if (isKey[i]) {
          const problem = keyProblem(value);
          if (problem) throw bad(l, columnNames[i]!, `${quoteValue(value)} ${problem}`);
        }
        values[i] = out;
      }
      return values;
    },
  };
}
