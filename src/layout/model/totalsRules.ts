import type { BalanceRule, ColumnSpec, StatementSum, StatementTotal, Total, TotalRecord, TotalSum } from './layout.js';

/**
 * The layout's `totals` key: what a file states about its own rows, as the layout says it (the
 * check itself is the reader's: reader/totalsCheck.ts).
 */

type Fail = (what: string) => never;
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isField = (v: unknown) => Number.isInteger(v) && (v as number) >= 2;

/**
 * The layout's `totals`: a list of total records (`{"record", "at", "groupBy", "count", "sums"}`)
 * and balance rules (`{"rule": "balance", "groupBy", "sum", "when"}`), every mistake naming
 * the entry and its key.
 */
export function parseTotals(
  raw: unknown,
  columns: readonly ColumnSpec[],
  leadingRecords: number,
  fail: Fail,
  captures: readonly string[] = [],
): Total[] {
  if (!Array.isArray(raw) || raw.length === 0) return fail('"totals" must be a non-empty list of total records and balance rules');
  const column = (name: unknown, where: string, decimal = false): string => {
    const spec = columns.find((columnSpec) => columnSpec.name === name);
    if (typeof name !== 'string' || !spec || (decimal && spec.type !== 'decimal'))
      fail(`${where} must name one of the layout's ${decimal ? 'decimal ' : ''}columns`);
    return name;
  };
  return raw.map((entry, index): Total => {
    const where = `totals ${index + 1}`;
    if (!isObject(entry))
      return fail(
        `${where} must be an object: a total record ("record"), a rule ("rule": "balance") or a statement's figures ("statement")`,
      );
    if (entry.statement !== undefined) {
      if (Object.keys(entry).length !== 1) fail(`${where}: "statement" stands alone: {"statement": {"count", "sums", "bridge"}}`);
      return parseStatement(entry.statement, `${where}: statement`, captures, column, fail);
    }
    if (entry.rule !== undefined) {
      const known = ['rule', 'groupBy', 'sum', 'when'];
      for (const key of Object.keys(entry)) if (!known.includes(key)) fail(`${where}: key "${key}" is unknown (keys: ${known.join(', ')})`);
      if (entry.rule !== 'balance') fail(`${where}: "rule" must be "balance" (the group's amounts net to zero)`);
      const groups = typeof entry.groupBy === 'string' ? [entry.groupBy] : entry.groupBy;
      if (!Array.isArray(groups) || groups.length === 0) fail(`${where}: "groupBy" must name a column or a list of them`);
      const groupBy = (groups as unknown[]).map((g) => column(g, `${where}: "groupBy"`));
      if (!Array.isArray(entry.sum) || entry.sum.length === 0)
        fail(`${where}: "sum" must list the decimal columns that net to zero ("-name" subtracts one)`);
      const sum = (entry.sum as unknown[]).map((s) => {
        const negative = typeof s === 'string' && s.startsWith('-');
        return { column: column(negative ? s.slice(1) : s, `${where}: "sum"`, true), negative };
      });
      let when: BalanceRule['when'];
      if (entry.when !== undefined) {
        const { column: on, values } = isObject(entry.when) ? entry.when : {};
        if (!Array.isArray(values) || values.length === 0 || values.some((v) => typeof v !== 'string'))
          fail(`${where}: "when" must be {"column", "values"}: the groups holding such a row are checked`);
        when = { column: column(on, `${where}: "when" "column"`), values: values as string[] };
      }
      return { kind: 'balance', groupBy, sum, ...(when ? { when } : {}) };
    }
    const known = ['record', 'at', 'groupBy', 'count', 'sums', 'rounding', 'everyGroup'];
    for (const key of Object.keys(entry)) if (!known.includes(key)) fail(`${where}: key "${key}" is unknown (keys: ${known.join(', ')})`);
    const { record, at = 'footer', groupBy, count, sums = [], rounding = 'exact', everyGroup = false } = entry;
    if (typeof record !== 'string' || record === '') fail(`${where}: "record" must be the first field of the total record, e.g. "SF"`);
    if (at !== 'top' && at !== 'footer') fail(`${where}: "at" must be "top" (a leading record) or "footer" (after its rows)`);
    if (at === 'top' && leadingRecords === 0) fail(`${where}: "at": "top" needs "leadingRecords" (the records above the header)`);
    let group: TotalRecord['groupBy'];
    if (groupBy !== undefined) {
      const { column: by, field } = isObject(groupBy) ? groupBy : {};
      if (!isField(field)) fail(`${where}: "groupBy" must be {"column", "field"}: the record's field (2 or more) naming the group`);
      group = { column: column(by, `${where}: "groupBy" "column"`), field: field as number };
    }
    if (count !== undefined && !isField(count)) fail(`${where}: "count" must be the field (2 or more) holding the number of rows`);
    if (!Array.isArray(sums)) return fail(`${where}: "sums" must be a list of {"field", "of", "sign"}`);
    const parsedSums = sums.map((s: unknown, j: number): TotalSum => {
      const at2 = `${where}: sums ${j + 1}`;
      if (!isObject(s)) return fail(`${at2} must be {"field", "of"} (and "sign": "credit" or "debit")`);
      for (const k of Object.keys(s))
        if (!['field', 'of', 'sign'].includes(k)) fail(`${at2}: key "${k}" is unknown (keys: field, of, sign)`);
      if (!isField(s.field)) fail(`${at2}: "field" must be a field position, 2 or more`);
      if (s.sign !== undefined && s.sign !== 'credit' && s.sign !== 'debit') fail(`${at2}: "sign" must be "credit" or "debit"`);
      return {
        field: s.field as number,
        of: column(s.of, `${at2}: "of"`, true),
        ...(s.sign ? { sign: s.sign } : {}),
      };
    });
    if (count === undefined && parsedSums.length === 0) fail(`${where}: give "count", "sums" or both`);
    if (rounding !== 'exact' && rounding !== 'stated') fail(`${where}: "rounding" must be "exact" or "stated"`);
    if (typeof everyGroup !== 'boolean') fail(`${where}: "everyGroup" must be true or false`);
    if (everyGroup && !group) fail(`${where}: "everyGroup" needs "groupBy"`);
    return {
      kind: 'record',
      record: record,
      at: at,
      ...(group ? { groupBy: group } : {}),
      ...(count !== undefined ? { count: count as number } : {}),
      sums: parsedSums,
      rounding: rounding,
      everyGroup: everyGroup,
    };
  });
}

/**
 * `{"statement": {"count": CAPTURE, "sums": [{"capture", "of", "sign"}], "bridge": {"of", "opening", "closing"}}}`:
 * the figures a statement states in its preamble or title lines, each one of the layout's `captures`.
 */
function parseStatement(
  raw: unknown,
  where: string,
  captures: readonly string[],
  column: (name: unknown, where: string, decimal?: boolean) => string,
  fail: Fail,
): StatementTotal {
  if (!isObject(raw)) return fail(`${where} must be {"count", "sums", "bridge"}: figures from the layout's "captures"`);
  const known = ['count', 'sums', 'bridge'];
  for (const key of Object.keys(raw)) if (!known.includes(key)) fail(`${where}: key "${key}" is unknown (keys: ${known.join(', ')})`);
  const listed = captures.length > 0 ? `(captures: ${captures.join(', ')})` : '(the layout has no "captures")';
  const capture = (name: unknown, at: string): string => {
    if (typeof name !== 'string' || !captures.includes(name)) fail(`${at} must name one of the layout's captures ${listed}`);
    return name;
  };
  const count = raw.count !== undefined ? capture(raw.count, `${where}: "count"`) : undefined;
  const sumsRaw = raw.sums ?? [];
  if (!Array.isArray(sumsRaw)) return fail(`${where}: "sums" must be a list of {"capture", "of", "sign"}`);
  const sums = sumsRaw.map((s: unknown, j: number): StatementSum => {
    const at = `${where}: sums ${j + 1}`;
    if (!isObject(s)) return fail(`${at} must be {"capture", "of"} (and "sign": "credit" or "debit")`);
    for (const k of Object.keys(s))
      if (!['capture', 'of', 'sign'].includes(k)) fail(`${at}: key "${k}" is unknown (keys: capture, of, sign)`);
    if (s.sign !== undefined && s.sign !== 'credit' && s.sign !== 'debit') fail(`${at}: "sign" must be "credit" or "debit"`);
    return {
      capture: capture(s.capture, `${at}: "capture"`),
      of: column(s.of, `${at}: "of"`, true),
      ...(s.sign ? { sign: s.sign } : {}),
    };
  });
  let bridge: StatementTotal['bridge'];
  if (raw.bridge !== undefined) {
    const bridgeRaw = raw.bridge;
    const at = `${where}: "bridge"`;
    if (!isObject(bridgeRaw)) return fail(`${at} must be {"of", "opening", "closing"}: opening + the rows' sum of "of" = closing`);
    for (const key of Object.keys(bridgeRaw))
      if (!['of', 'opening', 'closing'].includes(key)) fail(`${at}: key "${key}" is unknown (keys: of, opening, closing)`);
    const columns = Array.isArray(bridgeRaw.of) ? (bridgeRaw.of as unknown[]) : [bridgeRaw.of];
    if (columns.length === 0) fail(`${at}: "of" must name a decimal column, or a list of them (a debit and a credit column)`);
    bridge = {
      of: columns.map((c) => column(c, `${at}: "of"`, true)),
      opening: capture(bridgeRaw.opening, `${at}: "opening"`),
      closing: capture(bridgeRaw.closing, `${at}: "closing"`),
    };
  }
  if (count === undefined && sums.length === 0 && !bridge) fail(`${where}: give "count", "sums", "bridge" or several`);
  return { kind: 'statement', ...(count !== undefined ? { count } : {}), sums, ...(bridge ? { bridge } : {}) };
}

/** The `totals` key as configuration writes it (what `extends` starts from). */
export function totalsJson(totals: readonly Total[]): unknown[] {
  return totals.map((total) => {
    if (total.kind === 'statement') {
      const { kind: _, sums, bridge, ...rest } = total;
      return {
        statement: {
          ...rest,
          ...(sums.length > 0 ? { sums: sums.map((s) => ({ ...s })) } : {}),
          ...(bridge ? { bridge: { ...bridge, of: bridge.of.length === 1 ? bridge.of[0] : [...bridge.of] } } : {}),
        },
      };
    }
    if (total.kind === 'balance') {
      return {
        rule: 'balance',
        groupBy: total.groupBy,
        sum: total.sum.map((s) => (s.negative ? `-${s.column}` : s.column)),
        ...(total.when ? { when: { column: total.when.column, values: [...total.when.values] } } : {}),
      };
    }
    const { kind: _, sums, ...rest } = total;
    return { ...rest, sums: sums.map((s) => ({ ...s })) };
  });
}
