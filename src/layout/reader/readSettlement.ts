import { RejectError } from '../../errors.js';
import { CsvRecordError, csvRecordBlocks, layoutCsvOptions, namedWidth, type Join, type RecordBlock } from './csvRecords.js';
import { DELIMITERS, type Layout, type RecordRole } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';
import { planPositions, planRows, type PlanContext, type RowPlan } from './rowPlan.js';
import { TotalsCheck, type CheckedTotal } from './totalsCheck.js';
import { MissingTrailerError, TrailerCheck } from './trailer.js';
import { CaptureReader, type Captured } from './captures.js';

/** A footer's lines that `check` shows (the first ones, with their text): enough to see what was set aside. */
export const FOOTER_SHOWN = 10;

/** The lines a layout's `footer` set aside after the rows: never rows, shown by `check`. */
export interface FooterSeen {
  /** its first and last lines that are not blank */
  first: number;
  last: number;
  /** its lines that are not blank */
  lines: number;
  /** the first FOOTER_SHOWN of them, with their text */
  shown: { line: number; text: string }[];
}

/** A figure the file stated once (a layout's capture), by name: what `check` shows beside what it proved. */
export type Figure = Captured & { name: string };

/** What a read saw besides the rows it yielded. */
export interface ReadStats {
  /** data rows the layout's skipRows left out (counted, not loaded), and records of a `skip` type */
  skipped: number;
  /** bytes of the file read so far, when asked for (a progress line) */
  bytes?: number;
  /** the layout's control totals the file proved, once it is read whole */
  totals?: CheckedTotal[];
  /** the balance rules that found no group to check (said by `check`, never taken for proof) */
  totalsNotChecked?: string[];
  /** records continued over several lines and joined (the layout's `continuationLines`), when asked for */
  joins?: Join[];
  /** the lines the layout's footer set aside, once the file is read whole */
  footer?: FooterSeen;
  /** the figures the layout's captures read, once the file is read whole */
  figures?: Figure[];
}

export interface ReadOptions {
  /** go on after a bad row, to name every one (up to 100) in the end */
  every?: boolean;
  stats?: ReadStats;
  /** the name the file was delivered under: a layout may take its zone, or a figure, from it */
  fileName?: string;
  /** when the file was delivered (ms since the epoch): a layout may take a year from it */
  deliveredAt?: number;
  /**
   * Whether rows carry their own text when COPY may take it as written (SettlementRow.text; the
   * default): a binary COPY never sends it, and spares the look at every value that it costs.
   */
  asWritten?: boolean;
}

export interface SettlementRow {
  /** the file's own line number, as an editor shows it (the header is line 1) */
  line: number;
  values: (string | null)[];
  /**
   * The record's own text when COPY may take it as it is: no quotes, no backslash, comma
   * separated, its columns in the layout's order and every value unchanged by the checks.
   */
  text?: string;
}

/** Whether a checked row's values are its fields as written (an empty field stands for NULL). */
function unchanged(values: (string | null)[], fields: readonly string[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null ? fields[i] !== '' : v !== fields[i]) return false;
  }
  return true;
}

/** How messages name a record's field: by the layout column the plan put there, else by position and header text. */
function fieldName(layout: Layout, plan: RowPlan | undefined, header: string[] | undefined, i: number): string {
  const column = plan?.columnAt(i);
  if (column !== undefined) return column;
  const text = header?.[i]?.trim();
  // before the header is read, the record is the header itself: no layout column is there yet
  if (text === undefined) return plan || !layout.header ? `column ${i + 1}` : `column ${i + 1} of the header`;
  return layout.columns.find((c) => c.from === text)?.name ?? `column ${i + 1} (${text.slice(0, 40)})`;
}

/** A record that cannot be read, as the reject that names its line and field. */
function csvReject(err: CsvRecordError, layout: Layout, plan: RowPlan | undefined, header: string[] | undefined): RejectError {
  const { line, column } = err;
  const field = column === undefined ? 'record' : fieldName(layout, plan, header, column);
  const where = column === undefined ? `line ${line}` : `line ${line}, field ${field}`;
  return new RejectError(`${where}: ${err.told}`, { line, field }, { cause: err });
}

/** How a message shows a delimiter: the tab by its name. */
const shownDelimiter = (delimiter: string) => (delimiter === '\t' ? 'a tab' : `"${delimiter}"`);

/**
 * A header the layout cannot read, told with what to do: read as one field, the delimiter it
 * seems to use instead; with fields that have no name, that a layout cannot read one by name.
 */
function headerAdvice(layout: Layout, header: readonly string[]): string {
  if (header.length === 1) {
    const text = header[0]!;
    const counts = DELIMITERS.filter((d) => d !== layout.delimiter).map((d) => ({ d, n: text.split(d).length - 1 }));
    const best = counts.reduce((a, b) => (b.n > a.n ? b : a));
    if (best.n > 0) {
      return `; the header is read as one field: it seems to use ${shownDelimiter(best.d)} as its delimiter, not ${shownDelimiter(layout.delimiter)}: set the layout's "delimiter" to ${JSON.stringify(best.d)}`;
    }
  }
  const nameless = header.flatMap((h, i) => (h.trim() === '' ? [i + 1] : []));
  if (nameless.length === 0) return '';
  const which = nameless.length === 1 ? `column ${nameless[0]} has no name` : `columns ${nameless.join(', ')} have no name`;
  return `; its ${which}: a layout reads a column by its header's name, so a nameless one only by position ("header": false, its header line skipped with "skipLines")`;
}

/** The plan of a file's header, or the header's reject with what to do about it. */
function planHeader(layout: Layout, header: readonly string[], line: number, context: PlanContext): RowPlan {
  try {
    return planRows(layout, header, line, context);
  } catch (err) {
    if (!(err instanceof RejectError)) throw err;
    const advice = headerAdvice(layout, header);
    if (advice === '') throw err;
    throw new RejectError(
      `${err.message}${advice}`,
      { ...(err.line !== undefined ? { line: err.line } : {}), field: 'header' },
      { cause: err },
    );
  }
}

/** A rejected file names up to this many bad rows, then how many more there were. */
export const MAX_REPORTED_ROWS = 100;

/** The bad rows of one file: every one counted, the first hundred kept, one RejectError in the end. */
class BadRows {
  private readonly kept: RejectError[] = [];
  private more = 0;

  get count(): number {
    return this.kept.length + this.more;
  }

  add(err: RejectError): void {
    if (this.kept.length < MAX_REPORTED_ROWS) this.kept.push(err);
    else this.more++;
  }

  /** One bad row keeps its own message; several are named one after the other, "and N more" past 100. */
  toError(): RejectError {
    const first = this.kept[0]!;
    if (this.count === 1) return first;
    const more = this.more > 0 ? `; and ${this.more} more` : '';
    const message = `${this.count} bad rows: ${this.kept.map((e) => e.message).join('; ')}${more}`;
    return new RejectError(message, {
      ...(first.line !== undefined ? { line: first.line } : {}),
      ...(first.field ? { field: first.field } : {}),
    });
  }
}

/** The checked rows of one read, handed out by `next()` until it returns null; good until the next block is asked for. */
export interface RowBlock {
  next(): SettlementRow | null;
}

/**
 * One file's reading state across its blocks: the header's plan, the trailer's tally, the
 * record types' counts and the bad rows. It is the block it hands out, over each read's
 * records in turn.
 */
class SettlementReader implements RowBlock {
  private plan: RowPlan | undefined;
  /** the header's named fields (those it ends with left empty are nameless: not read) */
  private header: string[] | undefined;
  /** the header's whole width, nameless fields at its end included */
  private headerWidth = 0;
  private readonly bad = new BadRows();
  private readonly trailer: TrailerCheck | undefined;
  private readonly totals: TotalsCheck | undefined;
  /** the summary records above the header still to come */
  private leading: number;
  private readonly asWritten: boolean;
  private readonly types: ReadonlyMap<string, RecordRole> | undefined;
  private context: PlanContext;
  private readonly captures: CaptureReader | undefined;
  /** a file of record types: the data records so far, and how many there were at each count record's last one */
  private dataRecords = 0;
  private readonly counted = new Map<string, { records: number; line: number }>();
  private records: RecordBlock = { next: () => null };
  /** the last record's line: where a file without its footer ends */
  private lastLine = 0;
  private footerSeen: FooterSeen | undefined;

  constructor(
    private readonly layout: Layout,
    private readonly opts: ReadOptions,
  ) {
    this.trailer = layout.trailer ? new TrailerCheck(layout) : undefined;
    this.totals = layout.totals ? new TotalsCheck(layout) : undefined;
    this.leading = layout.leadingRecords ?? 0;
    this.asWritten = layout.delimiter === ',' && opts.asWritten !== false;
    this.types = layout.recordTypes;
    this.context = {
      ...(opts.fileName !== undefined ? { fileName: opts.fileName } : {}),
      ...(opts.deliveredAt !== undefined ? { deliveredAt: opts.deliveredAt } : {}),
    };
    this.captures = layout.captures ? new CaptureReader(layout, opts.fileName) : undefined;
  }

  /** A line of the preamble: a capture may read its figure there. */
  preambleLine(text: string, line: number): void {
    this.captures?.line(text, line);
  }

  /** A line of the footer that is not blank: set aside, never a row; a capture may read its figure there. */
  footerLine(text: string, line: number): void {
    const seen = (this.footerSeen ??= { first: line, last: line, lines: 0, shown: [] });
    seen.last = line;
    seen.lines++;
    if (seen.shown.length < FOOTER_SHOWN) seen.shown.push({ line, text });
    this.captures?.footerLine(text, line);
  }

  /** The rows begin (the header, or a file without one: its first record): what the file stated above them is known. */
  private rowsBegin(line: number): PlanContext {
    if (this.captures) {
      const captures = this.captures.known(line);
      this.context = { ...this.context, captures };
      this.totals?.stated(captures);
    }
    return this.context;
  }

  over(records: RecordBlock): RowBlock {
    this.records = records;
    return this;
  }

  next(): SettlementRow | null {
    const { trailer, totals, bad, opts, types } = this;
    try {
      for (let csvRecord = this.records.next(); csvRecord !== null; csvRecord = this.records.next()) {
        const { fields, line, text } = csvRecord;
        this.lastLine = line;
        if (this.leading > 0) {
          this.leading--;
          this.captures?.record(fields, text ?? fields.join(this.layout.delimiter), line);
          if (!totals?.isTotal(fields, line) && opts.stats) opts.stats.skipped++;
          continue;
        }
        if (!this.plan && !this.layout.header) this.plan = planPositions(this.layout, line, this.rowsBegin(line));
        if (types !== undefined) {
          if (trailer?.isTrailer(fields, line)) continue;
          if (!this.dataRecord(types, fields, line)) continue;
        }
        const plan = this.plan;
        if (!plan) {
          this.readHeader(fields, line);
          continue;
        }
        if (types === undefined && trailer?.isTrailer(fields, line)) continue;
        if (types === undefined && totals?.isTotal(fields, line)) continue;
        let values: (string | null)[] | 'skip';
        trailer?.countRow();
        let named = fields;
        try {
          named = this.named(fields, line);
          values = plan.row(named, line);
          trailer?.addAmount(plan, named, values, line);
          totals?.addRow(plan, named, values, line);
        } catch (err) {
          if (!(err instanceof RejectError) || !opts.every) throw err;
          bad.add(err);
          continue;
        }
        if (values === 'skip') {
          if (opts.stats) opts.stats.skipped++;
          continue;
        }
        if (bad.count > 0) continue;
        if (this.asWritten && text !== undefined && named === fields && plan.inOrder && !text.includes('\\') && unchanged(values, fields))
          return { line, values, text };
        return { line, values };
      }
      return null;
    } catch (err) {
      throw this.fatal(err);
    }
  }

  /** The header record: its named fields plan the rows. */
  private readHeader(fields: readonly string[], line: number): void {
    this.headerWidth = fields.length;
    this.header = fields.slice(0, namedWidth(fields));
    this.plan = planHeader(this.layout, this.header, line, this.rowsBegin(line));
  }

  /**
   * A row's fields under the header's names: those under its nameless end, and empty ones past
   * its width, are left out; a value past its width is refused, naming where it is. A row
   * shorter than the names is the plan's to refuse, unless the layout's `nullPadding` reads its
   * missing last fields as empty (a last record cut short without its line end is the paused
   * upload's rule, before any read: lastRecord.ts); a file without a header is read as it is.
   */
  private named(fields: string[], line: number): string[] {
    const header = this.header;
    if (header !== undefined && fields.length < header.length && this.layout.nullPadding) {
      return [...fields, ...new Array<string>(header.length - fields.length).fill('')];
    }
    if (header === undefined || fields.length <= header.length) return fields;
    for (let i = this.headerWidth; i < fields.length; i++) {
      if (fields[i]!.trim() === '') continue;
      throw new RejectError(
        `line ${line}: expected ${this.headerWidth} fields, found ${fields.length}: field ${i + 1}, past the header's, holds ${quoteValue(fields[i]!)}`,
        { line, field: `field ${i + 1}` },
      );
    }
    return fields.slice(0, header.length);
  }

  /**
   * A record of a file of record types, by its first field: true for a data record (read as a
   * row next); a header record plans the rows, a count record is checked, others are passed.
   */
  private dataRecord(types: ReadonlyMap<string, RecordRole>, fields: readonly string[], line: number): boolean {
    const type = fields[0] ?? '';
    const role = types.get(type);
    if (role === undefined) {
      const known = [...types.keys(), ...(this.layout.trailer ? [this.layout.trailer.firstField] : [])].join(', ');
      throw new RejectError(`line ${line}: ${quoteValue(type)} is not a record type of the layout (${known})`, {
        line,
        field: 'record type',
      });
    }
    switch (role.role) {
      case 'data': {
        this.dataRecords++;
        if (this.plan) return true;
        const header = [...types].find(([, r]) => r.role === 'header')![0];
        throw new RejectError(`line ${line}: a data record (${type}) before the header record (${header})`, { line, field: 'record type' });
      }
      case 'header':
        this.readHeader(fields, line);
        return false;
      case 'skip':
        if (this.opts.stats) this.opts.stats.skipped++;
        return false;
      case 'info':
        this.totals?.isTotal(fields, line);
        return false;
      case 'count':
        this.checkCount(type, role.field, fields, line);
        return false;
    }
  }

  /** A count record: the data records since the last one of its type (or the file's start) are as many as it says. */
  private checkCount(type: string, field: number, fields: readonly string[], line: number): void {
    const stated = (fields[field - 1] ?? '').trim();
    const before = this.counted.get(type);
    const records = this.dataRecords - (before?.records ?? 0);
    this.counted.set(type, { records: this.dataRecords, line });
    const fail = (what: string) => {
      const err = new RejectError(`line ${line}, ${type}: ${what}`, { line, field: type });
      if (!this.opts.every) throw err;
      this.bad.add(err);
    };
    const since = before ? `since line ${before.line}` : 'before it';
    if (!/^\d{1,15}$/.test(stated)) fail(`the count ${quoteValue(stated)} (field ${field}) is not a number`);
    else if (Number(stated) !== records) fail(`says ${Number(stated)} data records, the file has ${records} ${since}`);
  }

  /** After the last block: a header was there, the trailer agrees, no row was bad. */
  finish(): void {
    try {
      if (!this.plan && !this.layout.header)
        this.plan = planPositions(this.layout, this.layout.skipLines + 1, this.rowsBegin(this.layout.skipLines + 1));
      if (!this.plan) {
        const line = this.layout.skipLines + 1;
        const header = this.types && [...this.types].find(([, r]) => r.role === 'header')?.[0];
        const footer = this.footerSeen ? ` above its footer (${linesText(this.footerSeen)})` : '';
        const what = header ? `has no header record (${header})` : `is empty (no header)${footer}`;
        throw new RejectError(`line ${line}: the file ${what}`, { line, field: 'header' });
      }
      this.trailer?.finish(this.bad.count);
      if (this.layout.footer) this.finishFooter();
      if (this.totals && this.bad.count === 0) {
        const checked = this.totals.finish();
        if (this.opts.stats) {
          this.opts.stats.totals = checked;
          if (this.totals.notChecked.length > 0) this.opts.stats.totalsNotChecked = [...this.totals.notChecked];
        }
      }
    } catch (err) {
      throw this.fatal(err);
    }
    if (this.bad.count > 0) throw this.bad.toError();
  }

  /**
   * The footer was there (a file cut before it is incomplete: never loaded as if whole), and
   * states every figure its captures read there, which the totals then check.
   */
  private finishFooter(): void {
    const seen = this.footerSeen;
    const footer = this.layout.footer!;
    if (!seen) {
      const expected = footer.startsAt
        ? `a line after the rows matching /${footer.startsAt.source}/`
        : `its last ${footer.lines} line${footer.lines === 1 ? '' : 's'}`;
      throw new MissingTrailerError(`the file ends at line ${this.lastLine} without its footer (${expected}): it is incomplete`, {
        line: this.lastLine,
        field: 'footer',
      });
    }
    if (this.opts.stats) this.opts.stats.footer = seen;
    if (this.captures) this.totals?.stated(this.captures.footerKnown(seen.first, seen.last));
  }

  /** The figures the captures read (once the file is read whole): what `check` shows. */
  figures(): Figure[] | undefined {
    return this.captures?.figures();
  }

  /** What ends the reading: after bad rows were collected, a reject joins them; anything else goes as it is. */
  private fatal(err: unknown): unknown {
    const fatal = err instanceof CsvRecordError ? csvReject(err, this.layout, this.plan, this.header) : err;
    if (!(fatal instanceof RejectError) || this.bad.count === 0) return fatal;
    this.bad.add(fatal);
    return this.bad.toError();
  }
}

/**
 * Reads a settlement file a block of rows at a time, streaming: skips the preamble, matches
 * the header to the layout by name, checks every row, leaves out the rows `skipRows` names
 * (counted in `stats`) and checks the trailer when the layout has one. Throws a RejectError at
 * the first bad row (a load stops there: its COPY must not wait while the rest of a large file
 * is read). With `every`, good rows are handed out until the first bad one and the rest of the
 * file is still checked, so that the RejectError at the end names every bad row (up to 100,
 * then "and N more") and a partner fixes them in one round trip. A file that cannot be parsed
 * further (an unclosed quote, a record over the size limit) ends the reading there.
 */
export async function* settlementBlocks(path: string, layout: Layout, opts: ReadOptions = {}): AsyncGenerator<RowBlock> {
  const reader = new SettlementReader(layout, opts);
  const progress = opts.stats?.bytes !== undefined ? (opts.stats as { bytes: number }) : undefined;
  const preambleLine = layout.captures ? (text: string, line: number) => reader.preambleLine(text, line) : undefined;
  const footerLine = layout.footer ? (text: string, line: number) => reader.footerLine(text, line) : undefined;
  const joins = opts.stats?.joins;
  const csvOptions = {
    ...layoutCsvOptions(layout),
    progress,
    ...(preambleLine ? { preambleLine } : {}),
    ...(footerLine ? { footerLine } : {}),
    ...(joins ? { joins } : {}),
  };
  for await (const records of csvRecordBlocks(path, csvOptions)) yield reader.over(records);
  reader.finish();
  const figures = reader.figures();
  if (figures && opts.stats) opts.stats.figures = figures;
}

/** How a message names a footer's lines: `line 16`, `lines 16 to 21`. */
export const linesText = (seen: Pick<FooterSeen, 'first' | 'last'>): string =>
  seen.first === seen.last ? `line ${seen.first}` : `lines ${seen.first} to ${seen.last}`;

/** The same rows one at a time (settlementBlocks), for readers that wait on something between rows (key lookups, `check`). */
export async function* readSettlement(path: string, layout: Layout, opts: ReadOptions = {}): AsyncGenerator<SettlementRow> {
  for await (const block of settlementBlocks(path, layout, opts)) for (let row = block.next(); row !== null; row = block.next()) yield row;
}

/** What a run would make of a file's content, barring the database: its rows, or why it would be refused. */
export interface ContentCheck {
  /** the rows a load would put in (a good file) */
  rows: number;
  /** the rows the layout's skipRows leaves out, and records of a `skip` type */
  skippedRows: number;
  /** the file's own control totals its rows were proved against (totalsCheck.ts) */
  totals?: CheckedTotal[];
  /** its balance rules that found no group to check: nothing of them proved (said, never taken for proof) */
  totalsNotChecked?: string[];
  /** records continued over several lines and joined (the layout's `continuationLines`): each shown by `check` */
  joins?: Join[];
  /** the lines the layout's footer set aside (a good file): shown by `check` */
  footer?: FooterSeen;
  /** the figures the layout's captures read (a good file): shown by `check` */
  figures?: Figure[];
  error: RejectError | null;
}

/**
 * Every bad row of a file, as one RejectError (null when the file is good), read without a
 * database: what `check` prints, and what a rejected load reports after its rollback.
 */
export async function findBadRows(
  path: string,
  layout: Layout,
  opts: Pick<ReadOptions, 'fileName' | 'deliveredAt'> & {
    /** each good row as it is read (until the first bad one), for a check that looks across rows (`check`'s repeated keys) */
    onRow?: (row: SettlementRow) => void;
  } = {},
): Promise<ContentCheck> {
  let rows = 0;
  const stats: ReadStats = { skipped: 0, ...(layout.continuationLines ? { joins: [] } : {}) };
  const { onRow, ...read } = opts;
  try {
    for await (const row of readSettlement(path, layout, { ...read, every: true, stats })) {
      rows++;
      onRow?.(row);
    }
    return {
      rows,
      skippedRows: stats.skipped,
      ...(stats.totals ? { totals: stats.totals } : {}),
      ...(stats.totalsNotChecked ? { totalsNotChecked: stats.totalsNotChecked } : {}),
      ...(stats.joins ? { joins: stats.joins } : {}),
      ...(stats.footer ? { footer: stats.footer } : {}),
      ...(stats.figures ? { figures: stats.figures } : {}),
      error: null,
    };
  } catch (err) {
    if (err instanceof RejectError) return { rows, skippedRows: stats.skipped, ...(stats.joins ? { joins: stats.joins } : {}), error: err };
    throw err;
  }
}
