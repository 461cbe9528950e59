import { stat } from '../../syncFs.js';
import { CSV_PROBLEMS, CsvRecordError, csvRecordBlocks, layoutCsvOptions, namedWidth } from './csvRecords.js';
import type { Layout } from '../model/layout.js';
import { decodeTail } from './textDecoding.js';

/** A file whose last record stops short of the layout's width, with no line end after it: an upload that may still be written to. */
export interface CutShort {
  /** the file's line where the cut record starts */
  line: number;
  /** the fields it has, and the fields a record of the file has (its header's) */
  fields: number;
  expected: number;
}

const TAIL_BYTES = 64 * 1024;

/** A short record that is short by design: the trailer, a skipped summary line, a record type other than data. */
function shortByDesign(layout: Layout, fields: readonly string[]): boolean {
  const first = fields[0]?.trim() ?? '';
  if (layout.trailer && first === layout.trailer.firstField) return true;
  const role = layout.recordTypes?.get(fields[0] ?? '');
  if (role && role.role !== 'data') return true;
  return layout.skipRows.some((rule) => fields.some((f) => rule.values.includes(f)));
}

/** The width a file without a header has: its layout's last position. */
const positionsWidth = (layout: Layout) => layout.columns.reduce((most, c) => Math.max(most, c.position ?? 0), 0);

/** Whether a record names the data records' fields: the first record, or in a file of record types the header type's. */
function isHeader(layout: Layout, fields: readonly string[]): boolean {
  if (!layout.recordTypes) return true;
  return layout.recordTypes.get(fields[0] ?? '')?.role === 'header';
}

/**
 * The whole file read as the reader reads it (quoted line breaks, preamble, record types,
 * encoding): the header's width and the last record. A value whose quote is never closed, or
 * a file ending inside a character's bytes, is a record stopped in the middle. Any other
 * fault is the reader's to reject: undefined.
 */
async function readLastRecord(path: string, layout: Layout): Promise<CutShort | undefined> {
  let width = layout.header ? undefined : positionsWidth(layout);
  let last: { fields: string[]; line: number } | undefined;
  try {
    for await (const block of csvRecordBlocks(path, layoutCsvOptions(layout))) {
      for (let r = block.next(); r !== null; r = block.next()) {
        if (width === undefined && isHeader(layout, r.fields)) width = namedWidth(r.fields);
        last = { fields: r.fields, line: r.line };
      }
    }
  } catch (err) {
    if (!(err instanceof CsvRecordError)) throw err;
    const stopped = err.problem === CSV_PROBLEMS.quoteNotClosed || err.undecodable?.cut === true;
    // the cut record's own fields are not known: it has fewer than a whole one
    if (stopped && width !== undefined) return { line: err.line, fields: (err.column ?? 0) + 1, expected: width };
    return undefined;
  }
  if (!last || width === undefined || last.fields.length >= width || shortByDesign(layout, last.fields)) return undefined;
  return { line: last.line, fields: last.fields.length, expected: width };
}

/** The header's width (the fields it names), read from the file's start (undefined when it cannot be read there). */
async function headerWidth(path: string, layout: Layout): Promise<number | undefined> {
  try {
    for await (const block of csvRecordBlocks(path, layoutCsvOptions(layout))) {
      const first = block.next();
      if (first) return namedWidth(first.fields);
    }
  } catch (err) {
    if (!(err instanceof CsvRecordError)) throw err;
  }
  return undefined;
}

/**
 * Whether a staged file's last record is cut short: fewer fields than the layout's header
 * names (a file without one: its last position) and no line end after it. That is what a partner's
 * upload looks like when it pauses mid-line for longer than --stable-for, and is told before
 * anything is claimed, so the file waits as not ready instead of being rejected. A last line
 * with all its fields but no line end is whole (many partners omit the final newline).
 *
 * Most files end with a line end: one byte read. Otherwise the last line is looked at from
 * the file's end, decoded as the layout says (a UTF-16 line end is two bytes); only when it
 * has a quote in it (it may belong to a quoted value begun above), ends inside a character's
 * bytes, or is short, is the file read through as the reader
 * reads it, which alone knows where its last record starts.
 */
export async function lastRecordCutShort(path: string, layout: Layout): Promise<CutShort | undefined> {
  const { size } = await stat(path);
  if (size === 0) return undefined;
  const encoding = layout.encoding;
  // the last character: two bytes hold a UTF-16 line end, and end with a single-byte one
  const end = await decodeTail(path, encoding, 2);
  if (end.text.endsWith('\n') || end.text.endsWith('\r')) return undefined;
  const { text, cut } = await decodeTail(path, encoding, TAIL_BYTES);
  const lineStart = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r')) + 1;
  const lastLine = text.slice(lineStart);
  // a free-text footer's last line is no record: only the reader, reading as a run reads, knows where the rows end
  const plain = !cut && lineStart > 0 && !lastLine.includes('"') && !layout.recordTypes && !layout.footer;
  if (plain) {
    const fields = lastLine.split(layout.delimiter);
    if (shortByDesign(layout, fields)) return undefined;
    const width = layout.header ? await headerWidth(path, layout) : positionsWidth(layout);
    if (width !== undefined && fields.length >= width) return undefined;
  }
  return readLastRecord(path, layout);
}
