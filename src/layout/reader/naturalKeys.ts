import { timestampIdentity } from './columnValues.js';
import { keyName, type ColumnType, type Layout } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';
import { KeyFirstLines } from './keySet.js';

/**
 * A checked decimal as `numeric` compares it: its value, whatever places it was written with
 * (`10.5`, `10.50` and `+010.500` are one key; `-0.00` is `0`).
 */
export function decimalIdentity(value: string): string {
  const m = /^([+-]?)0*(\d*?)(?:\.(\d*?)0*)?$/.exec(value);
  if (!m || value === '') return value;
  const [, sign, whole = '', fraction = ''] = m;
  if (whole === '' && fraction === '') return '0';
  return `${sign === '-' ? '-' : ''}${whole === '' ? '0' : whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/**
 * A checked value of a key column as the finance table's UNIQUE index compares it: a bigint
 * `007` is `7`, a decimal its value (`10.5` is `10.50`), a timestamp is its instant (the same
 * moment written with two offsets is one key), an empty optional part is '' (never NULL:
 * layoutTable.ts). Text, dates and currency codes are compared as the reader wrote them
 * (already in their one form).
 */
export function comparedAs(type: ColumnType): (value: string) => string {
  switch (type) {
    case 'integer':
      return (value) => (/^-?\d+$/.test(value) ? BigInt(value).toString() : value);
    case 'decimal':
      return decimalIdentity;
    case 'timestamp':
      return timestampIdentity;
    default:
      return (value) => value;
  }
}

/**
 * The natural keys of one file's checked rows, in the order they are read: says which row
 * repeats a key an earlier row of the same file has (the load's UNIQUE index would refuse it).
 * Its keys are kept compactly (`KeyFirstLines`: a table of hashes in memory, the keys' bytes in
 * a temporary file past 16 MiB): used off the load's path (by `check`, and by a load that was
 * refused, to explain why). `close` lets the temporary file go.
 */
export class KeyRepeats {
  private readonly positions: number[];
  private readonly compare: ((value: string) => string)[];
  private readonly firstLine = new KeyFirstLines();

  constructor(layout: Layout) {
    this.positions = layout.naturalKey.map((k) => layout.columns.findIndex((c) => c.name === k));
    this.compare = this.positions.map((p) => comparedAs(layout.columns[p]!.type));
  }

  /** A row's key values, in the key's order (an empty optional part is ''). */
  keyOf(values: readonly (string | null)[]): string[] {
    return this.positions.map((p) => values[p] ?? '');
  }

  /** The line of the file's first row with this row's key, when an earlier row has it; else the key is remembered. */
  repeatOf(values: readonly (string | null)[], line: number): number | undefined {
    const identity = this.positions.map((p, i) => this.compare[i]!(values[p] ?? '')).join('\0');
    return this.firstLine.firstLineOf(identity, line);
  }

  close(): void {
    this.firstLine.close();
  }
}

/** How messages quote a key: each value quoted (long ones cut), side by side. */
export function showKey(keyValues: readonly string[]): string {
  return keyValues.map((v) => quoteValue(v)).join(' ');
}

/** A refused file names at most this many of its keys. */
const CLASHES_SHOWN = 10;

/** A key a load would refuse: where, and why (`repeats line N of this file`, `already loaded from FILE`). */
export interface KeyClash {
  key: string;
  line: number;
  from: string;
}

/** How a refused key is said: `repeats line 2 of this file`. */
export function repeatsLine(firstLine: number): string {
  return `repeats line ${firstLine} of this file`;
}

/**
 * The keys of one file a load would refuse, as they are found: every one counted, the first
 * ten kept; `message` says them the same whether a load's rollback found them or `check` did.
 */
export class KeyClashes {
  private readonly kept: KeyClash[] = [];
  private total = 0;

  get count(): number {
    return this.total;
  }

  add(clash: KeyClash): void {
    this.total++;
    if (this.kept.length < CLASHES_SHOWN) this.kept.push(clash);
  }

  /** Clashes found and counted, but not kept to be named (a look-up that fetched the first ten). */
  addUnshown(count: number): void {
    this.total += Math.max(0, count);
  }

  /** A row whose key an earlier row of the file has (`repeats`): added, and true. */
  addRepeat(repeats: KeyRepeats, values: readonly (string | null)[], line: number): boolean {
    const seen = repeats.repeatOf(values, line);
    if (seen === undefined) return false;
    this.add({ key: showKey(repeats.keyOf(values)), line, from: repeatsLine(seen) });
    return true;
  }

  /** `field KEY: N value(s) already used: line L: 'K' FROM; …` (by line), and how many more; the first line named. */
  message(layout: Layout): { message: string; line?: number } {
    const field = keyName(layout);
    if (this.total === 0) return { message: `field ${field}: a value collides with rows already loaded` };
    const shown = [...this.kept].sort((a, b) => a.line - b.line);
    const listed = shown.map((o) => `line ${o.line}: ${o.key} ${o.from}`).join('; ');
    const more = this.total > shown.length ? `; and ${this.total - shown.length} more` : '';
    return { message: `field ${field}: ${this.total} value(s) already used: ${listed}${more}`, line: shown[0]!.line };
  }
}
