import { RejectError } from '../../errors.js';
import { columnConverters, decimalReader, MAX_WRITTEN_SCALE } from './columnValues.js';
import type { BalanceRule, Layout, StatementTotal, TotalRecord } from '../model/layout.js';
import { capturedText, type Captured } from './captures.js';
import { quoteValue } from '../values/quoteValue.js';
import type { RowPlan } from './rowPlan.js';

/**
 * Control totals (docs/DESIGN.md invariant 9): figures a file states about its own rows, or a
 * balance rule its partner documents, checked against the rows before any of them is loaded.
 * The layout's `trailer` (a closing record's count and one sum over the whole file) and the
 * `{"count": FIELD}` record types stay as they are: they are the simplest cases of the same
 * idea, and `totals` says the rest (a summary record at the top, a footer per group, a sum per
 * sign, a batch that nets to zero).
 */

/** One total as a `check` and the ledger show it: `batch_number 380, net_currency USD balances`. */
export interface CheckedTotal {
  /** the record type or `balance` */
  total: string;
  /** the group, e.g. `gross_currency USD`, or '' for the whole file */
  group: string;
  /** the rows it covered */
  rows: number;
  /** what agreed: `2 sums and the count` or `nets to 0.00` */
  agrees: string;
}

/** A total record the file should carry and does not: the file may still be uploading (not ready before it is rejected). */
export class MissingTotalError extends RejectError {}

// ---------------------------------------------------------------- exact sums

const SCALE = MAX_WRITTEN_SCALE;

/** A normal decimal text (`-12.3`) as an integer of SCALE places. */
function exact(normal: string): bigint {
  const negative = normal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? normal.slice(1) : normal).split('.');
  const n = BigInt((whole || '0') + frac.padEnd(SCALE, '0').slice(0, SCALE));
  return negative ? -n : n;
}

/** An exact sum shown with `places` places (rounded half away from zero when it has more). */
function shown(n: bigint, places: number): string {
  const negative = n < 0n;
  let abs = negative ? -n : n;
  const drop = 10n ** BigInt(SCALE - places);
  abs = (abs + drop / 2n) / drop;
  const digits = abs.toString().padStart(places + 1, '0');
  const text = places === 0 ? digits : `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  return negative && abs !== 0n ? `-${text}` : text;
}

const placesOf = (normal: string) => normal.split('.')[1]?.length ?? 0;

// ---------------------------------------------------------------- the check

/** A group's tally: its rows, and the running sum of each figure. */
interface Tally {
  rows: number;
  sums: bigint[];
  /** a balance group: it holds the row `when` asks for */
  checked?: boolean;
}

/** One stated total, seen in the file: its line and its fields. */
interface Stated {
  line: number;
  fields: readonly string[];
}

/** What one total record spec has seen: the tallies since its last footers, and the records found. */
class RecordTotal {
  readonly tallies = new Map<string, Tally>();
  /** a footer of this type was read since the last row: the next row opens a new section */
  closed = false;
  found = 0;
  constructor(readonly spec: TotalRecord) {}
}

/**
 * The totals of one file, fed every data row (loaded or left out) and every record that is no
 * row, checked at its end: a disagreement is a reject naming the group and both figures; a
 * total record that is missing is a MissingTotalError.
 */
export class TotalsCheck {
  private readonly records: RecordTotal[];
  private readonly balances: { spec: BalanceRule; tallies: Map<string, Tally> }[];
  /** a statement's figures: one tally over every row, its sums and then the bridge's */
  private readonly statements: { spec: StatementTotal; tally: Tally }[];
  private captured: ReadonlyMap<string, Captured> = new Map();
  private readonly problems: RejectError[] = [];
  private readonly checked: CheckedTotal[] = [];
  private readonly convert: ReturnType<typeof columnConverters>;
  private readonly index: (column: string) => number;
  private readonly readStated: (value: string) => string | undefined;
  private lastLine = 0;
  /** a row's values in the layout's order, for the figures of a row `skipRows` left out */
  private scratch: string[] = [];

  constructor(private readonly layout: Layout) {
    const totals = layout.totals ?? [];
    this.records = totals.flatMap((t) => (t.kind === 'record' ? [new RecordTotal(t)] : []));
    this.balances = totals.flatMap((t) => (t.kind === 'balance' ? [{ spec: t, tallies: new Map<string, Tally>() }] : []));
    this.statements = totals.flatMap((t) =>
      t.kind === 'statement' ? [{ spec: t, tally: { rows: 0, sums: new Array<bigint>(t.sums.length + 1).fill(0n) } }] : [],
    );
    this.convert = columnConverters(layout);
    const names = layout.columns.map((c) => c.name);
    this.index = (column) => names.indexOf(column);
    this.readStated = decimalReader(layout, MAX_WRITTEN_SCALE);
  }

  /** The figures the file stated above its rows (reader/captures.ts), which its `statement` totals check. */
  stated(captured: ReadonlyMap<string, Captured>): void {
    this.captured = captured;
  }

  /** Whether a record (a leading one, or one of a record type) is a total record: it is kept to be checked. */
  isTotal(fields: readonly string[], line: number): boolean {
    this.lastLine = line;
    const type = (fields[0] ?? '').trim();
    const specs = this.records.filter((r) => r.spec.record === type);
    if (specs.length === 0) return false;
    for (const r of specs) this.footer(r, { line, fields });
    return true;
  }

  /** One data row, good or skipped (`values` 'skip': the figures read from its fields); a bad row is not summed. */
  addRow(plan: RowPlan, fields: readonly string[], values: (string | null)[] | 'skip', line: number): void {
    this.lastLine = line;
    const row = values === 'skip' ? this.skippedValues(plan, fields, line) : values;
    for (const recordTotal of this.records) {
      if (recordTotal.closed) this.newSection(recordTotal);
      const group = recordTotal.spec.groupBy ? (row[this.index(recordTotal.spec.groupBy.column)] ?? '') : '';
      const tally = this.tally(recordTotal.tallies, group, recordTotal.spec.sums.length);
      tally.rows++;
      recordTotal.spec.sums.forEach((totalSum, i) => this.addFigure(tally, i, row[this.index(totalSum.of)], totalSum.sign));
    }
    for (const statement of this.statements) {
      const { spec, tally } = statement;
      tally.rows++;
      spec.sums.forEach((statementSum, i) => this.addFigure(tally, i, row[this.index(statementSum.of)], statementSum.sign));
      for (const column of spec.bridge?.of ?? []) this.addFigure(tally, spec.sums.length, row[this.index(column)], undefined);
    }
    for (const balanceTotal of this.balances) {
      const group = balanceTotal.spec.groupBy.map((c) => row[this.index(c)] ?? '').join('\u0000');
      const tally = this.tally(balanceTotal.tallies, group, 1);
      tally.rows++;
      for (const summand of balanceTotal.spec.sum) {
        const value = row[this.index(summand.column)];
        if (value !== null && value !== undefined) tally.sums[0]! += summand.negative ? -exact(value) : exact(value);
      }
      if (balanceTotal.spec.when && whenMatches(balanceTotal.spec.when.values, row[this.index(balanceTotal.spec.when.column)] ?? ''))
        tally.checked = true;
    }
  }

  /**
   * At the end of the file (with no bad row: the sums are not known otherwise): every total
   * agrees, or the file is rejected naming each that does not. Returns what was checked.
   */
  finish(): CheckedTotal[] {
    for (const recordTotal of this.records) {
      if (recordTotal.found === 0) {
        const where = recordTotal.spec.at === 'top' ? 'above its header' : 'after its rows';
        throw new MissingTotalError(
          `the file ends at line ${this.lastLine} without its ${recordTotal.spec.record} total record (${where}): it is incomplete`,
          { line: this.lastLine, field: recordTotal.spec.record },
        );
      }
      const open = [...recordTotal.tallies.values()].some((t) => t.rows > 0);
      if (recordTotal.spec.at === 'footer' && !recordTotal.closed && open) {
        throw new MissingTotalError(
          `the file ends at line ${this.lastLine} with rows after its last ${recordTotal.spec.record} total record: it is incomplete`,
          { line: this.lastLine, field: recordTotal.spec.record },
        );
      }
      this.newSection(recordTotal);
    }
    for (const balanceTotal of this.balances) this.balance(balanceTotal.spec, balanceTotal.tallies);
    for (const statement of this.statements) this.statement(statement.spec, statement.tally);
    if (this.problems.length === 1) throw this.problems[0]!;
    if (this.problems.length > 1) {
      const first = this.problems[0]!;
      throw new RejectError(
        `${this.problems.length} totals disagree: ${this.problems.map((rejectError) => rejectError.message).join('; ')}`,
        {
          ...(first.line !== undefined ? { line: first.line } : {}),
          ...(first.field ? { field: first.field } : {}),
        },
      );
    }
    return this.checked;
  }

  /** A row's value added to a tally's figure: every row's, or only the credits' (above zero) or the debits' (below, unsigned). */
  private addFigure(tally: Tally, figure: number, value: string | null | undefined, sign: 'credit' | 'debit' | undefined): void {
    if (value === null || value === undefined) return;
    const amount = exact(value);
    if (sign === 'credit' && amount > 0n) tally.sums[figure]! += amount;
    else if (sign === 'debit' && amount < 0n) tally.sums[figure]! -= amount;
    else if (sign === undefined) tally.sums[figure]! += amount;
  }

  /**
   * A statement's figures against its rows: the count it states, each sum, and the opening
   * balance plus the rows' amounts against the closing one; a disagreement names both figures
   * and where the file stated its own.
   */
  private statement(spec: StatementTotal, tally: Tally): void {
    const before = this.problems.length;
    const fail = (name: string, what: string) => {
      const captured = this.captured.get(name);
      const line = captured?.line ?? this.lastLine;
      this.problems.push(new RejectError(`line ${line}, statement: ${what}`, { line, field: name }));
    };
    const figure = (name: string, column: string): { text: string; amount?: bigint; places: number } => {
      const captured = this.captured.get(name)!;
      const normal = this.statedFigure(column, captured.value);
      if (normal === undefined) {
        fail(name, `${capturedText(name, captured)} is not an amount`);
        return { text: capturedText(name, captured), places: 0 };
      }
      return { text: capturedText(name, captured), amount: exact(normal), places: Math.max(placesOf(normal), this.places(column)) };
    };
    if (spec.count !== undefined) {
      const captured = this.captured.get(spec.count)!;
      const digits = captured.value.replace(/[\s,.'\u00a0\u202f]/g, '');
      if (!/^\d{1,15}$/.test(digits)) fail(spec.count, `${capturedText(spec.count, captured)} is not a number of rows`);
      else if (Number(digits) !== tally.rows) fail(spec.count, `${spec.count} says ${Number(digits)} rows, the file has ${tally.rows}`);
    }
    spec.sums.forEach((statementSum, i) => {
      const stated = figure(statementSum.capture, statementSum.of);
      if (stated.amount === undefined) return;
      const what = `${statementSum.sign ? `${statementSum.sign}s of ` : ''}${statementSum.of}`;
      if (stated.amount !== tally.sums[i])
        fail(
          statementSum.capture,
          `${stated.text} says the ${what} total ${this.written(statementSum.of, stated.amount, stated.places)}, the rows add up to ${this.written(statementSum.of, tally.sums[i]!, stated.places)}`,
        );
    });
    if (spec.bridge) {
      const { opening, closing } = spec.bridge;
      const of = spec.bridge.of[0]!;
      const moving = spec.bridge.of.join(' + ');
      const open = figure(opening, of);
      const close = figure(closing, of);
      if (open.amount !== undefined && close.amount !== undefined) {
        const places = Math.max(open.places, close.places);
        const moved = tally.sums[spec.sums.length]!;
        const reached = open.amount + moved;
        if (reached !== close.amount)
          fail(
            closing,
            `the rows do not bridge the balances: ${open.text} + the ${moving} of ${tally.rows} rows ${this.written(of, moved, places)} = ${this.written(of, reached, places)}, but ${close.text} says ${this.written(of, close.amount, places)}`,
          );
      }
    }
    if (this.problems.length === before) {
      // each figure as the file stated it and where, beside the rows' own: the proof, shown
      const stated = (name: string) => capturedText(name, this.captured.get(name)!);
      const parts = [
        ...(spec.count !== undefined ? [`count ${tally.rows} = ${stated(spec.count)}`] : []),
        ...spec.sums.map((s, i) => {
          const { places } = figure(s.capture, s.of);
          return `${s.sign ? `${s.sign}s of ` : ''}${s.of} ${this.written(s.of, tally.sums[i]!, places)} = ${stated(s.capture)}`;
        }),
        ...(spec.bridge
          ? [
              `${stated(spec.bridge.opening)} + ${spec.bridge.of.join(' + ')} ${this.written(spec.bridge.of[0]!, tally.sums[spec.sums.length]!, figure(spec.bridge.closing, spec.bridge.of[0]!).places)} = ${stated(spec.bridge.closing)}`,
            ]
          : []),
      ];
      this.checked.push({ total: 'statement', group: '', rows: tally.rows, agrees: parts.join(', ') });
    }
  }

  private tally(tallies: Map<string, Tally>, group: string, sums: number): Tally {
    let tally = tallies.get(group);
    if (!tally) tallies.set(group, (tally = { rows: 0, sums: new Array<bigint>(sums).fill(0n) }));
    return tally;
  }

  /** The figures of a row left out by skipRows, converted as the loaded rows' are (its sign and minor units). */
  private skippedValues(plan: RowPlan, fields: readonly string[], line: number): (string | null)[] {
    const raw = (this.scratch = this.layout.columns.map((c) => fields[plan.indexOf(c.name)] ?? ''));
    return this.layout.columns.map((c, i) => {
      const text = raw[i]!;
      if (text === '') return null;
      if (c.type !== 'decimal' && c.type !== 'currency') return text;
      const out = this.convert[i]!(text, this.scratch);
      if (typeof out === 'string') return out;
      const summed = this.summed(c.name);
      if (!summed) return null;
      throw new RejectError(`line ${line}, field ${c.name}: ${quoteValue(text)} ${out.problem} (a control total sums it)`, {
        line,
        field: c.name,
      });
    });
  }

  private summed(column: string): boolean {
    return (
      this.records.some((r) => r.spec.sums.some((s) => s.of === column) || r.spec.groupBy?.column === column) ||
      this.statements.some((t) => t.spec.sums.some((s) => s.of === column) || t.spec.bridge?.of.includes(column) === true) ||
      this.balances.some((b) => b.spec.sum.some((s) => s.column === column) || b.spec.groupBy.includes(column))
    );
  }

  /** A footer (or a leading record) of a total record type: kept with its section until the section's rows are all read. */
  private readonly pending = new Map<RecordTotal, Stated[]>();

  private footer(recordTotal: RecordTotal, stated: Stated): void {
    recordTotal.found++;
    const list = this.pending.get(recordTotal) ?? [];
    list.push(stated);
    this.pending.set(recordTotal, list);
    if (recordTotal.spec.at === 'footer') recordTotal.closed = true;
  }

  /** A section ends (a row after its footers, or the file's end): each footer is compared with its group's rows. */
  private newSection(recordTotal: RecordTotal): void {
    const stated = this.pending.get(recordTotal) ?? [];
    const named = new Set<string>();
    for (const statedRecord of stated) {
      const group = recordTotal.spec.groupBy ? (statedRecord.fields[recordTotal.spec.groupBy.field - 1] ?? '').trim() : '';
      const key = recordTotal.spec.groupBy ? this.groupValue(recordTotal.spec.groupBy.column, group) : '';
      named.add(key);
      this.compare(
        recordTotal.spec,
        statedRecord,
        group,
        recordTotal.tallies.get(key) ?? { rows: 0, sums: recordTotal.spec.sums.map(() => 0n) },
      );
    }
    if (recordTotal.spec.everyGroup) {
      for (const [group, tally] of recordTotal.tallies) {
        if (named.has(group) || tally.rows === 0) continue;
        const line = stated[stated.length - 1]?.line ?? this.lastLine;
        this.problems.push(
          new RejectError(
            `line ${line}, ${recordTotal.spec.record}: no total for ${recordTotal.spec.groupBy!.column} ${group} (${tally.rows} rows)`,
            {
              line,
              field: recordTotal.spec.record,
            },
          ),
        );
      }
    }
    this.pending.set(recordTotal, []);
    recordTotal.tallies.clear();
    recordTotal.closed = false;
  }

  /** A group's value as a record writes it, as its column's rows hold it (a currency in upper case). */
  private groupValue(column: string, written: string): string {
    const i = this.index(column);
    const out = this.convert[i]!(written, []);
    return typeof out === 'string' ? out : written;
  }

  private compare(spec: TotalRecord, stated: Stated, group: string, tally: Tally): void {
    const label = spec.groupBy ? `${spec.record} ${spec.groupBy.column} ${group}` : spec.record;
    const fail = (what: string) =>
      this.problems.push(new RejectError(`line ${stated.line}, ${label}: ${what}`, { line: stated.line, field: spec.record }));
    const before = this.problems.length;
    if (spec.count !== undefined) {
      const text = (stated.fields[spec.count - 1] ?? '').trim();
      if (!/^\d{1,15}$/.test(text)) fail(`the count ${quoteValue(text)} (field ${spec.count}) is not a number`);
      else if (Number(text) !== tally.rows) fail(`says ${Number(text)} rows, the file has ${tally.rows}`);
    }
    spec.sums.forEach((s, i) => {
      const text = (stated.fields[s.field - 1] ?? '').trim();
      const figure = this.statedFigure(s.of, text);
      const what = `${s.sign ? `${s.sign}s of ` : ''}${s.of}`;
      if (figure === undefined) {
        fail(`the ${what} total ${quoteValue(text)} (field ${s.field}) is not an amount`);
        return;
      }
      const places = spec.rounding === 'stated' ? placesOf(figure) : Math.max(placesOf(figure), this.places(s.of));
      const computed = tally.sums[i]!;
      const agrees = spec.rounding === 'stated' ? shown(computed, places) === shown(exact(figure), places) : computed === exact(figure);
      if (!agrees)
        fail(
          `says the ${what} total ${this.written(s.of, exact(figure), places)}, the rows add up to ${this.written(s.of, computed, places)}`,
        );
    });
    if (this.problems.length === before) {
      const parts = [...(spec.count !== undefined ? ['count'] : []), ...spec.sums.map((s) => `${s.sign ? `${s.sign}s of ` : ''}${s.of}`)];
      this.checked.push({
        total: spec.record,
        group: spec.groupBy ? `${spec.groupBy.column} ${group}` : '',
        rows: tally.rows,
        agrees: parts.join(', '),
      });
    }
  }

  /** A stated figure as a normal decimal in the column's own unit (a column of minor units: the record writes minor units too). */
  private statedFigure(column: string, text: string): string | undefined {
    const minor = this.fixedMinorUnits(column);
    if (minor === undefined) return this.readStated(text);
    if (!/^-?\d{1,30}$/.test(text)) return undefined;
    return shown(BigInt(text) * 10n ** BigInt(SCALE - minor), minor);
  }

  /** How a figure is shown: as the file writes it (whole minor units for such a column), with `places` places otherwise. */
  private written(column: string, amount: bigint, places: number): string {
    const minor = this.fixedMinorUnits(column);
    if (minor === undefined) return shown(amount, places);
    return shown(amount * 10n ** BigInt(minor), 0);
  }

  /**
   * A column's minor units when they are one number for the whole file; a column in each row's
   * own currency's minor units (`"currency"`) has its figures read as decimals, as its rows are.
   */
  private fixedMinorUnits(column: string): number | undefined {
    const minor = this.layout.columns.find((c) => c.name === column)!.minorUnits;
    return typeof minor === 'number' ? minor : undefined;
  }

  private places(column: string): number {
    const spec = this.layout.columns.find((c) => c.name === column)!;
    const minor = this.fixedMinorUnits(column);
    if (minor !== undefined) return minor;
    return typeof spec.scale === 'number' ? Math.min(spec.scale, 2) : 2;
  }

  /** The balance rules that checked no group: a file whose rows hold none of the rows `when` asks for (a report cut to a selection, or a type written otherwise). */
  readonly notChecked: string[] = [];

  private balance(spec: BalanceRule, tallies: Map<string, Tally>): void {
    const payout = spec.when ? ` with its ${spec.when.values.join(' or ')}` : '';
    if (spec.when && ![...tallies.values()].some((tally) => tally.checked)) {
      this.notChecked.push(
        `no ${spec.groupBy.join(', ')} group was balanced: no row has ${spec.when.column} ${spec.when.values.join(' or ')}`,
      );
    }
    for (const [key, tally] of tallies) {
      if (spec.when && !tally.checked) continue;
      const values = key.split('\u0000');
      const group = spec.groupBy.map((c, i) => `${c} ${values[i] || '(empty)'}`).join(', ');
      const places = Math.max(...spec.sum.map((s) => this.places(s.column)));
      if (tally.sums[0] !== 0n) {
        const line = this.lastLine;
        this.problems.push(
          new RejectError(
            `${group}: nets to ${shown(tally.sums[0]!, Math.max(places, this.precision(tally.sums[0]!)))}${payout}, not ${shown(0n, places)} (${tally.rows} rows)`,
            {
              line,
              field: 'totals',
            },
          ),
        );
      } else this.checked.push({ total: 'balance', group, rows: tally.rows, agrees: `nets to ${shown(0n, places)}${payout}` });
    }
  }

  /** The places a sum needs to be shown without rounding any of it away. */
  private precision(amount: bigint): number {
    return placesOf(shown(amount, SCALE).replace(/\.?0+$/, ''));
  }
}

/**
 * Whether a row's value is one `when` names: as the partner's specification writes it, or with
 * spaces around it or in another case (`merchantpayout`, `MerchantPayout `), as some exports
 * write the type column; a payout line missed there would leave its batch unchecked.
 */
function whenMatches(values: readonly string[], value: string): boolean {
  const written = value.trim().toLowerCase();
  return values.some((v) => v.trim().toLowerCase() === written);
}

/**
 * How `check` and the run's log show the totals a file proved: `batch_number 380, net_currency
 * USD balances`; a statement's with its figures, each as stated beside the rows' own.
 */
export function totalsText(checked: readonly CheckedTotal[]): string {
  return checked
    .map((c) => {
      if (c.total === 'balance') return `${c.group} balances`;
      if (c.total === 'statement') return `statement agrees (${c.rows} rows): ${c.agrees}`;
      return `${c.total}${c.group ? ` ${c.group}` : ''} agrees (${c.rows} rows)`;
    })
    .join('; ');
}
