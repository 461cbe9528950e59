import { RejectError } from '../../errors.js';
import { decimalReader, MAX_WRITTEN_SCALE } from './columnValues.js';
import type { Layout, Trailer } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';
import { decodeHead, decodeTail } from './textDecoding.js';
import { stat } from '../../syncFs.js';
import type { RowPlan } from './rowPlan.js';

/** A file that ends without its trailer: maybe still being written, so not ready before it is rejected. */
export class MissingTrailerError extends RejectError {}

/** An exact decimal as an integer of `scale` places: money is summed without floating point. */
function scaled(normal: string, scale: number): bigint {
  const negative = normal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? normal.slice(1) : normal).split('.');
  const n = BigInt(whole + frac.padEnd(scale, '0'));
  return negative ? -n : n;
}

function shown(n: bigint, scale: number): string {
  const negative = n < 0n;
  const digits = (negative ? -n : n).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}

/**
 * A layout's closing total line: recognised by its first field, it must be the last record and
 * agree with the data rows above it (all of them, skipped ones included: the partner counted
 * what it wrote) on their number and on the sum of one amount column.
 */
export class TrailerCheck {
  private readonly spec: Trailer;
  private readonly scale: number;
  private readonly readAmount: (v: string) => string | undefined;
  private rows = 0;
  private sum = 0n;
  private lastLine = 0;
  private seen?: { line: number; rowCount?: string; sum?: string };

  constructor(private readonly layout: Layout) {
    this.spec = layout.trailer!;
    const summed = layout.columns.find((c) => c.name === this.spec.sumOf);
    const scale = summed?.scale ?? 2;
    this.scale = typeof scale === 'number' ? scale : MAX_WRITTEN_SCALE;
    this.readAmount = decimalReader(layout, 12, summed?.currencySymbols);
  }

  /** True for the trailer itself; after it, any record is a reject. */
  isTrailer(fields: readonly string[], line: number): boolean {
    this.lastLine = line;
    if (this.seen) throw new RejectError(`line ${line}: a record after the trailer on line ${this.seen.line}`, { line, field: 'trailer' });
    if (fields[0]?.trim() !== this.spec.firstField) return false;
    const at = (position: number | undefined) => (position === undefined ? undefined : (fields[position - 1]?.trim() ?? ''));
    const rowCount = at(this.spec.rowCountField);
    const sum = at(this.spec.sumField);
    this.seen = { line, ...(rowCount !== undefined ? { rowCount } : {}), ...(sum !== undefined ? { sum } : {}) };
    return true;
  }

  /** One data row, good or bad: the partner counted every line it wrote. */
  countRow(): void {
    this.rows++;
  }

  /** A checked data row (or one left out by skipRows): its amount summed. */
  addAmount(plan: RowPlan, fields: readonly string[], values: (string | null)[] | 'skip', line: number): void {
    const column = this.spec.sumOf;
    if (column === undefined) return;
    let normal: string | null | undefined;
    if (values === 'skip') {
      const raw = fields[plan.indexOf(column)] ?? '';
      normal = raw === '' ? null : this.readAmount(raw);
      if (normal === undefined) {
        throw new RejectError(`line ${line}, field ${column}: ${quoteValue(raw)} is not an amount (the trailer sums it)`, {
          line,
          field: column,
        });
      }
    } else {
      normal = values[this.layout.columns.findIndex((c) => c.name === column)] ?? null;
    }
    if (normal !== null) this.sum += scaled(normal, this.scale);
  }

  /**
   * At the end of the file: the trailer was there and agrees, or the file is rejected saying how.
   * After bad rows the sum is not known, so only the count is compared.
   */
  finish(badRows: number): void {
    const trailer = this.seen;
    if (!trailer) {
      throw new MissingTrailerError(
        `the file ends at line ${this.lastLine} without its trailer (a line starting ${quoteValue(this.spec.firstField)}): it is incomplete`,
        { line: this.lastLine, field: 'trailer' },
      );
    }
    const where = `line ${trailer.line}, trailer`;
    const fail = (what: string) => new RejectError(`${where}: ${what}`, { line: trailer.line, field: 'trailer' });
    if (trailer.rowCount !== undefined) {
      if (!/^\d{1,15}$/.test(trailer.rowCount)) throw fail(`the row count ${quoteValue(trailer.rowCount)} is not a number`);
      if (Number(trailer.rowCount) !== this.rows) throw fail(`says ${Number(trailer.rowCount)} rows, the file has ${this.rows}`);
    }
    if (trailer.sum !== undefined && badRows === 0) {
      const normal = this.readAmount(trailer.sum);
      if (normal === undefined) throw fail(`the sum ${quoteValue(trailer.sum)} is not an amount`);
      const [, frac = ''] = normal.split('.');
      const scale = Math.max(this.scale, frac.length);
      const stated = scaled(normal, scale);
      const actual = this.sum * 10n ** BigInt(scale - this.scale);
      if (stated !== actual) {
        throw fail(`says the ${this.spec.sumOf} sum is ${shown(stated, scale)}, the rows add up to ${shown(actual, scale)}`);
      }
    }
  }
}

const EDGE_BYTES = 64 * 1024;

/** A line's first field as a record type: trimmed, its quotes removed. */
const firstField = (line: string, layout: Layout) =>
  line
    .replace(/^\uFEFF/, '')
    .split(layout.delimiter)[0]!
    .trim()
    .replace(/^"(.*)"$/, '$1');

/** The first fields of the staged file's last non-empty line, read from its end only. */
async function lastFirstField(path: string, layout: Layout): Promise<string> {
  const lines = (await decodeTail(path, layout.encoding, EDGE_BYTES)).text.split(/\r\n|\n|\r/);
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === '') lines.pop();
  return firstField(lines[lines.length - 1] ?? '', layout);
}

/**
 * Whether a staged file's last non-empty line opens with the layout's trailer text: read from
 * the file's end only, before anything is claimed, so that an upload still being written waits
 * as not ready instead of being rejected. The full check (count, sum, nothing after it) is the
 * reader's.
 */
export async function endsWithTrailer(path: string, layout: Layout): Promise<boolean> {
  return (await lastFirstField(path, layout)) === layout.trailer!.firstField;
}

/**
 * The control total records (layout/reader/totalsCheck.ts) a staged file should carry and does not yet,
 * looked for at its edges only, before anything is claimed: a summary record among its
 * leading records (an upload cut before it), and, in a layout without a trailer whose totals
 * stand in footers, a footer (or count record) as its last line. Undefined when nothing is
 * missing; the full check is the reader's.
 */
export async function missingTotalRecord(path: string, layout: Layout): Promise<string | undefined> {
  const records = (layout.totals ?? []).flatMap((t) => (t.kind === 'record' ? [t] : []));
  if (records.length === 0) return undefined;
  const top = records.filter((totalRecord) => totalRecord.at === 'top');
  if (top.length > 0) {
    const { text, whole } = await decodeHead(path, layout.encoding, EDGE_BYTES);
    const head = text.split(/\r\n|\n|\r/);
    // the last line read may be cut short: only whole lines count
    if (!whole || !/[\r\n]$/.test(text)) head.pop();
    const leading = head.slice(layout.skipLines, layout.skipLines + (layout.leadingRecords ?? 0)).map((l) => firstField(l, layout));
    const absent = top.find((t) => !leading.includes(t.record));
    if (absent) return `its ${quoteValue(absent.record)} summary record above the header`;
  }
  const footers = records.filter((t) => t.at === 'footer');
  // a layout whose free-text footer ends the file has its total records above it: missingFooter looks there
  if (footers.length > 0 && !layout.trailer && !layout.footer) {
    const closing = [
      ...footers.map((t) => t.record),
      ...[...(layout.recordTypes ?? [])].filter(([, r]) => r.role === 'count').map(([t]) => t),
    ];
    if (!closing.includes(await lastFirstField(path, layout)))
      return `a ${footers.map((t) => quoteValue(t.record)).join(' or ')} total record at its end`;
  }
  return undefined;
}

/** A line of spaces and tabs only, or nothing. */
const BLANK = /^[ \t]*$/;

/**
 * What a staged file's free-text footer (the layout's `footer`) lacks, looked for in its last
 * 64 KiB only, before anything is claimed: the line that begins it (`startsAt`), or, once it is
 * there, a line stating each figure the layout's captures read from it. Undefined when nothing
 * is missing. A file cut before its footer, or inside it, is an upload that may still be written
 * to: it waits as not ready; the full check (every line after the rows, every figure) is the
 * reader's.
 */
export async function missingFooter(path: string, layout: Layout): Promise<string | undefined> {
  const footer = layout.footer!;
  const { size } = await stat(path);
  const whole = size <= EDGE_BYTES;
  let lines = (await decodeTail(path, layout.encoding, EDGE_BYTES)).text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  // a tail that starts inside the file starts inside a line; a whole file's preamble and header are no footer
  if (!whole) lines.shift();
  else
    lines = lines
      .slice(layout.skipLines)
      .filter((line) => !BLANK.test(line))
      .slice(layout.header ? 1 + (layout.leadingRecords ?? 0) : 0);
  lines = lines.filter((line) => !BLANK.test(line));
  let footerLines: string[];
  if (footer.startsAt) {
    const start = lines.findIndex((line) => footer.startsAt!.test(line));
    if (start === -1) return `no footer (a line after the rows matching /${footer.startsAt.source}/)`;
    footerLines = lines.slice(start);
  } else footerLines = lines.slice(-footer.lines!);
  const unstated = (layout.captures ?? []).filter((c) => c.at === 'footer' && !footerLines.some((line) => c.line!.test(line)));
  if (unstated.length === 0) return undefined;
  return `no footer line stating ${unstated.map((c) => `${c.name} (/${c.line!.source}/)`).join(', ')}`;
}
