import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { parse, CsvError } from 'csv-parse';
import { RejectError } from '../errors.js';
import type { Layout } from './layout.js';
import { validateHeader, validateRow } from './validateRow.js';

export interface SettlementRow {
  /** the file's own line number, as an editor shows it (the header is line 1) */
  line: number;
  values: (string | null)[];
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Drops a leading UTF-8 byte-order mark; csv-parse's own BOM handling would turn fields into strings. */
class StripBom extends Transform {
  private pending: Buffer | null = Buffer.alloc(0);

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.pending === null) return done(null, chunk);
    const head = Buffer.concat([this.pending, chunk]);
    if (head.length < UTF8_BOM.length && UTF8_BOM.subarray(0, head.length).equals(head)) {
      this.pending = head;
      return done();
    }
    this.pending = null;
    done(null, head.subarray(0, 3).equals(UTF8_BOM) ? head.subarray(3) : head);
  }

  override _flush(done: TransformCallback): void {
    done(null, this.pending && this.pending.length > 0 ? this.pending : undefined);
  }
}

function csvReject(err: CsvError): RejectError {
  const line = (err as CsvError & { lines?: number }).lines;
  const text = err.message.replace(/ at line \d+/, '').replace(/^Invalid/, 'invalid');
  return new RejectError(line ? `line ${line}: ${text}` : text, line ? { line } : {}, { cause: err });
}

/**
 * Reads a settlement file row by row, streaming: checks the header and every row against
 * the layout and throws a RejectError naming the line and field at the first bad one.
 */
export async function* readSettlement(path: string, layout: Layout): AsyncGenerator<SettlementRow> {
  const parser = parse({
    encoding: null, // fields stay bytes so that invalid UTF-8 is caught per field, not replaced
    info: true,
    relax_column_count: true, // ragged rows are reported by validateRow with the line number
    skip_empty_lines: true,
  });
  const source = createReadStream(path).pipe(new StripBom());
  source.on('error', (err) => parser.destroy(err));
  source.pipe(parser);

  let sawHeader = false;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Buffer[]; info: { lines: number } }>) {
      if (!sawHeader) {
        validateHeader(layout, record, info.lines);
        sawHeader = true;
        continue;
      }
      yield { line: info.lines, values: validateRow(layout, record, info.lines) };
    }
  } catch (err) {
    if (err instanceof CsvError) throw csvReject(err);
    throw err;
  } finally {
    source.destroy();
  }
  if (!sawHeader) throw new RejectError('line 1: the file is empty (no header)', { line: 1, field: 'header' });
}
