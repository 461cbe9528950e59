import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { parse, CsvError } from 'csv-parse';
import { RejectError } from '../errors.js';
import type { Layout } from './layout.js';
import { InvalidUtf8Error, Utf8Gate } from './utf8Gate.js';
import { validateHeader, validateRow } from './validateRow.js';

export interface SettlementRow {
  /** the file's own line number, as an editor shows it (the header is line 1) */
  line: number;
  values: (string | null)[];
}

function csvReject(err: CsvError, line: number): RejectError {
  const text = err.message.replace(/ at line \d+/, '').replace(/^Invalid/, 'invalid');
  return new RejectError(`line ${line}: ${text}`, { line }, { cause: err });
}

const newlines = (s: string) => {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * Records with the line each starts on. Line numbers are counted here rather than taken
 * from csv-parse's per-record info, which is slow and drifts after quoted line breaks.
 */
async function* records<T extends string | Buffer>(path: string, encoding: 'utf8' | null): AsyncGenerator<{ fields: T[]; line: number }> {
  // in byte mode the gate only strips the byte-order mark: UTF-8 is then checked per field
  const gate = new Utf8Gate(encoding !== null);
  const parser = parse({ encoding, relax_column_count: true, skip_empty_lines: false });
  const source = createReadStream(path, { highWaterMark: 256 * 1024 });
  const fail = (err: Error) => parser.destroy(err);
  source.on('error', fail);
  gate.on('error', fail);
  source.pipe(gate).pipe(parser);
  let line = 1;
  try {
    for await (const fields of parser as AsyncIterable<T[]>) {
      const start = line;
      const only = fields[0];
      line += 1 + fields.reduce((n, f) => n + newlines(typeof f === 'string' ? f : f.toString('latin1')), 0);
      if (fields.length === 1 && only !== undefined && only.length === 0) continue; // an empty line
      yield { fields, line: start };
    }
  } catch (err) {
    if (err instanceof CsvError) throw csvReject(err, line);
    throw err;
  } finally {
    source.destroy();
  }
}

/** Finds the line and field of the first byte that is not UTF-8: only on the failure path. */
async function locateInvalidUtf8(path: string, layout: Layout): Promise<RejectError> {
  for await (const { fields, line } of records<Buffer>(path, null)) {
    const i = fields.findIndex((f) => !isUtf8(f));
    if (i !== -1) {
      const field = layout.columns[i]?.name ?? `column ${i + 1}`;
      return new RejectError(`line ${line}, field ${field}: not valid UTF-8`, { line, field });
    }
  }
  return new RejectError('the file is not valid UTF-8 (a character is cut off at its end)');
}

/**
 * Reads a settlement file row by row, streaming: checks the header and every row against
 * the layout and throws a RejectError naming the line and field at the first bad one.
 */
export async function* readSettlement(path: string, layout: Layout): AsyncGenerator<SettlementRow> {
  let sawHeader = false;
  try {
    for await (const { fields, line } of records<string>(path, 'utf8')) {
      if (!sawHeader) {
        validateHeader(layout, fields, line);
        sawHeader = true;
        continue;
      }
      yield { line, values: validateRow(layout, fields, line) };
    }
  } catch (err) {
    if (err instanceof InvalidUtf8Error) throw await locateInvalidUtf8(path, layout);
    throw err;
  }
  if (!sawHeader) throw new RejectError('line 1: the file is empty (no header)', { line: 1, field: 'header' });
}
