import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { getHeapSpaceStatistics } from 'node:v8';
import { join } from 'node:path';
import { CsvError, parse } from 'csv-parse';
import { describe, expect, it } from 'vitest';
import { CSV_PROBLEMS, CsvRecordError, READ_BYTES, csvRecordBlocks, type CsvRecord } from '../../src/layout/reader/csvRecords.js';
import { TextChunks } from '../../src/layout/reader/textDecoding.js';

const dir = mkdtempSync(join(tmpdir(), 'settle-csv-'));
let files = 0;
function file(content: string | Buffer): string {
  const path = join(dir, `f${files++}.csv`);
  writeFileSync(path, content);
  return path;
}

/** A small seeded generator (mulberry32): a failure names its seed and is replayed exactly. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  return { next, pick };
}

const ENDINGS = ['\n', '\r\n', '\r'] as const;
const PLAIN = ['a', 'T-1', 'Zürich', '€', '𝄞', ' ', '0.15', 'x y', '', 'ünïcödé-𝄞-€'];
const QUOTED = ['a,b', 'say ""hi""', 'two\nlines', 'two\r\nlines', 'cr\ronly', '', '""', ',', '€,\n𝄞', ';|\t'];

/** A well-formed file with every kind of hostile-but-legal content, mixed line endings and empty lines. */
function hostileFile(seed: number, delimiter: string): string {
  const r = random(seed);
  const lines: string[] = [];
  const records = 1 + Math.floor(r.next() * 40);
  for (let i = 0; i < records; i++) {
    if (r.next() < 0.1) lines.push(r.next() < 0.5 ? '' : '""');
    const width = 1 + Math.floor(r.next() * 6);
    const fields = Array.from({ length: width }, () => (r.next() < 0.4 ? `"${r.pick(QUOTED)}"` : r.pick(PLAIN)));
    lines.push(fields.join(delimiter));
  }
  let text = r.next() < 0.2 ? '\uFEFF' : '';
  lines.forEach((l, i) => {
    text += l;
    if (i < lines.length - 1 || r.next() < 0.7) text += r.pick(ENDINGS);
  });
  return text;
}

/** What today's reader did: csv-parse, line numbers counted from the records, empty lines skipped. */
async function reference(text: string, delimiter: string): Promise<{ records: CsvRecord[]; error?: CsvError }> {
  const parser = parse({ delimiter, relax_column_count: true, skip_empty_lines: false, record_delimiter: ['\r\n', '\n', '\r'] });
  const records: CsvRecord[] = [];
  let line = 1;
  // 'data' events, not the async iterator, which drops the records parsed ahead of an error
  parser.on('data', (fields: string[]) => {
    const start = line;
    line += 1 + fields.reduce((n, f) => n + f.split('\n').length - 1, 0);
    if (fields.length !== 1 || fields[0] !== '') records.push({ fields, line: start });
  });
  const error = await new Promise<CsvError | undefined>((resolve, reject) => {
    parser.on('end', () => resolve(undefined));
    parser.on('error', (err) => (err instanceof CsvError ? resolve(err) : reject(err)));
    parser.end(text.replace(/^\uFEFF/, ''));
  });
  return { records, error };
}

async function ours(
  path: string,
  opts: {
    delimiter?: string;
    chunkBytes?: number;
    maxRecordBytes?: number;
    skipLines?: number;
    spaceAfterQuote?: boolean;
    whiteLinesBlank?: boolean;
    footerLines?: number;
    footerStartsAt?: RegExp;
    footerAfter?: number;
    footerLine?: (text: string, line: number) => void;
  } = {},
) {
  const records: CsvRecord[] = [];
  try {
    // block by block, as a load reads them: each read's records before the next read
    for await (const block of csvRecordBlocks(path, { delimiter: ',', maxRecordBytes: 1024 * 1024, ...opts })) {
      for (let r = block.next(); r !== null; r = block.next()) {
        // a record's own text, when it comes with one, is exactly its fields joined (what COPY may take as it is)
        if (r.text !== undefined) expect(r.text.split(opts.delimiter ?? ',')).toEqual(r.fields);
        records.push({ fields: r.fields, line: r.line });
      }
    }
  } catch (err) {
    if (err instanceof CsvRecordError) return { records, error: err };
    throw err;
  }
  return { records, error: undefined };
}

const CHUNKS = [1, 2, 3, 5, 7, 64, 1024 * 1024];
const CODES: Record<string, string> = {
  INVALID_OPENING_QUOTE: CSV_PROBLEMS.openingQuote,
  CSV_INVALID_CLOSING_QUOTE: CSV_PROBLEMS.closingQuote,
  CSV_QUOTE_NOT_CLOSED: CSV_PROBLEMS.quoteNotClosed,
};

describe('the CSV record reader against csv-parse', () => {
  it('reads 300 generated hostile files into the same records and line numbers, whatever the read size', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const delimiter = seed % 3 === 0 ? ';' : seed % 5 === 0 ? '\t' : ',';
      const text = hostileFile(seed, delimiter);
      const want = await reference(text, delimiter);
      expect(want.error, `seed ${seed}`).toBeUndefined();
      const path = file(text);
      const chunkBytes = CHUNKS[seed % CHUNKS.length]!;
      expect(await ours(path, { delimiter, chunkBytes }), `seed ${seed}, chunks of ${chunkBytes}`).toEqual(want);
    }
  });

  it('fails where csv-parse fails, with the same problem and field, after the same records', async () => {
    const breakages = ['x"y', '"open', '"closed"z', '"a""b"c', 'v"'];
    for (let seed = 1; seed <= 200; seed++) {
      const r = random(seed * 7919);
      const lines = hostileFile(seed, ',').split('\n');
      const at = Math.floor(r.next() * lines.length);
      const fields = lines[at]!.split(',');
      fields[Math.floor(r.next() * fields.length)] = r.pick(breakages);
      lines[at] = fields.join(',');
      const text = lines.join('\n');
      const want = await reference(text, ',');
      const got = await ours(file(text), { chunkBytes: CHUNKS[seed % CHUNKS.length]! });
      if (!want.error) {
        // the change landed inside a quoted value and made a legal file
        expect(got, `seed ${seed}`).toEqual(want);
        continue;
      }
      expect(got.error?.problem, `seed ${seed}: ${want.error.code}`).toBe(CODES[want.error.code]);
      expect(got.error?.column, `seed ${seed}`).toBe((want.error as { column?: number }).column);
      expect(got.records, `seed ${seed}`).toEqual(want.records);
    }
  });
});

describe('a footer after the records, set aside line by line, never read as CSV', () => {
  /** Free text as statements end with: delimiters, stray quotes, blank lines between. */
  function footerText(seed: number, count: number): { text: string; lines: string[] } {
    const r = random(seed * 104729);
    const words = ['#共13笔记录', 'Total "incl. fees', '#-----结束-----', 'Solde;;;500,00;', '"', '收入合计：3笔，1,234.50元', 'end'];
    const lines: string[] = [];
    let text = '';
    for (let i = 0; i < count; i++) {
      // blank lines among the footer's (white space only ones too); before it, an empty line only (a white one would be a record)
      if (r.next() < 0.3) text += i === 0 ? '\n' : r.pick(['\n', '  \r\n', '\t\r']);
      const line = `${r.pick(words)}${r.next() < 0.5 ? ` ${i}` : ''}`;
      lines.push(line);
      text += line + (i < count - 1 || r.next() < 0.6 ? r.pick(ENDINGS) : '');
    }
    if (r.next() < 0.3) text += '\n\n';
    return { text, lines };
  }

  it("holds back the last N lines that are not blank, whatever the read size: the records before them are csv-parse's, the footer its own lines", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const delimiter = seed % 3 === 0 ? ';' : ',';
      let rows = hostileFile(seed, delimiter);
      if (!/[\r\n]$/.test(rows)) rows += '\n';
      // the last records may be blank lines or "": csv-parse reads them as records too, so end on a record
      rows += `last${delimiter}row\n`;
      const count = 1 + (seed % 4);
      const footer = footerText(seed, count);
      const want = await reference(rows, delimiter);
      // where the footer starts, as the reader numbers lines: the line a record after the rows would start on
      const firstFooterLine = (await reference(`${rows}x\n`, delimiter)).records.at(-1)!.line;
      const seen: { text: string; line: number }[] = [];
      const chunkBytes = CHUNKS[seed % CHUNKS.length]!;
      const got = await ours(file(rows + footer.text), {
        delimiter,
        chunkBytes,
        footerLines: count,
        footerLine: (text, line) => seen.push({ text, line }),
      });
      expect(got, `seed ${seed}, chunks of ${chunkBytes}`).toEqual(want);
      expect(
        seen.map((l) => l.text),
        `seed ${seed}`,
      ).toEqual(footer.lines);
      expect(seen[0]!.line, `seed ${seed}`).toBeGreaterThanOrEqual(firstFooterLine);
      expect(seen.map((l) => l.line).every((n, i, all) => i === 0 || n > all[i - 1]!)).toBe(true);
    }
  });

  it('numbers the footer lines as the file does, blank lines counted', async () => {
    const seen: [string, number][] = [];
    const text = 'h1,h2\r\na,"two\nlines"\r\nb,c\r\n\r\n#共2笔记录\r\n   \r\n#"导出\r\n';
    for (const chunkBytes of CHUNKS) {
      seen.length = 0;
      const got = await ours(file(text), { chunkBytes, footerLines: 2, footerLine: (t, line) => seen.push([t, line]) });
      expect(got.records.map((r) => r.line)).toEqual([1, 2, 4]);
      expect(seen).toEqual([
        ['#共2笔记录', 6],
        ['#"导出', 8],
      ]);
    }
  });

  it('ends the records at the first line after the header that a footer pattern matches, at a record start only', async () => {
    const text = [
      '#-----明细列表-----',
      'id,note',
      'A1,"a quoted value',
      '#-----明细列表结束----- inside it"',
      'A2,x#-----明细列表结束-----',
      '#-----明细列表结束-----',
      '#共2笔记录,"stray',
      'A3,never a row',
      '',
    ].join('\n');
    for (const chunkBytes of CHUNKS) {
      const seen: [string, number][] = [];
      const got = await ours(file(text), {
        chunkBytes,
        skipLines: 1,
        footerStartsAt: /^#-+明细列表结束/u,
        footerAfter: 1,
        footerLine: (t, line) => seen.push([t, line]),
      });
      expect(got.error).toBeUndefined();
      expect(got.records.map((r) => r.fields[0])).toEqual(['id', 'A1', 'A2']);
      expect(seen).toEqual([
        ['#-----明细列表结束-----', 6],
        ['#共2笔记录,"stray', 7],
        ['A3,never a row', 8],
      ]);
    }
  });

  it('never looks for the footer in the preamble or the header (here "# end"): a file without its footer line has every record, and no footer', async () => {
    const seen: string[] = [];
    const got = await ours(file('# report\n# end\nid\nA1\nA2\n'), {
      skipLines: 1,
      footerStartsAt: /^#/u,
      footerAfter: 1,
      footerLine: (t) => seen.push(t),
    });
    expect(got.records.map((r) => r.fields[0])).toEqual(['# end', 'id', 'A1', 'A2']);
    expect(seen).toEqual([]);
  });
});

describe('the CSV record reader', () => {
  it('names the line and field of a byte that is not UTF-8, wherever the read chunks cut the file', async () => {
    const bytes = Buffer.concat([Buffer.from('h1,h2,h3\na,"two\nlines",€\nb,c'), Buffer.from([0xc3, 0x28]), Buffer.from(',d\n')]);
    for (const chunkBytes of CHUNKS) {
      const got = await ours(file(bytes), { chunkBytes });
      expect(got.records.map((r) => r.line)).toEqual([1, 2]);
      expect([got.error?.line, got.error?.column, got.error?.problem]).toEqual([4, 1, 'not valid UTF-8']);
    }
    const cut = await ours(file(Buffer.concat([Buffer.from('h1,h2\nx,'), Buffer.from([0xe2, 0x82])])));
    expect([cut.error?.line, cut.error?.column]).toEqual([2, 1]);
  });

  it('refuses a record over the size limit by its first line, never holding more of it than the limit', async () => {
    const long = `"${'ab\n'.repeat(50)}"`;
    for (const chunkBytes of [3, 64, 1024 * 1024]) {
      const got = await ours(file(`h\r\nok\r\n${long}\r\nnext\r\n`), { chunkBytes, maxRecordBytes: 100 });
      expect(got.records.map((r) => r.fields[0])).toEqual(['h', 'ok']);
      expect([got.error?.line, got.error?.column]).toEqual([3, undefined]);
      expect(got.error?.problem).toBe('the record is longer than 100 bytes (--max-record-bytes)');
    }
    // the limit is in UTF-8 bytes: 40 euro signs are 120 bytes
    expect((await ours(file(`h\n${'€'.repeat(40)}\n`), { maxRecordBytes: 100 })).error?.line).toBe(2);
    expect((await ours(file(`h\n${'€'.repeat(33)}\n`), { maxRecordBytes: 100 })).error).toBeUndefined();
  });

  it('skips preamble lines, counting them in the line numbers', async () => {
    const got = await ours(file('Report "Q3\r\nmerchant;x\nh1;h2\nv1;"v\n2"\n'), { delimiter: ';', skipLines: 2, chunkBytes: 2 });
    expect(got).toEqual({
      records: [
        { fields: ['h1', 'h2'], line: 3 },
        { fields: ['v1', 'v\n2'], line: 4 },
      ],
      error: undefined,
    });
  });
  it("decodes a read's text into V8's young generation, never its large-object space", () => {
    // a string of 128 KiB or more is a large object, one fresh mapping each: 256 KiB reads cost a
    // 64 MiB file 250 ms of decoding where 64 KiB reads cost 13 ms (docs/BENCHMARKS.md)
    const largeObjects = () =>
      getHeapSpaceStatistics()
        .filter((space) => space.space_name.includes('large_object'))
        .reduce((sum, space) => sum + space.space_used_size, 0);
    const decodedGrowth = (bytes: Buffer) => {
      const before = largeObjects();
      const decoded = new TextChunks().write(bytes);
      const grown = largeObjects() - before;
      expect(decoded.text.length).toBeGreaterThan(0);
      return grown;
    };
    // the measure works: a 256 KiB read's text is a large object
    expect(decodedGrowth(Buffer.alloc(256 * 1024, 'x'))).toBeGreaterThanOrEqual(256 * 1024);
    // one read of ASCII, and one of two-byte characters (a UTF-16 unit each, 2 bytes in the string)
    expect(decodedGrowth(Buffer.alloc(READ_BYTES, 'x'))).toBeLessThanOrEqual(0);
    expect(decodedGrowth(Buffer.alloc(READ_BYTES, 'ü'))).toBeLessThanOrEqual(0);
  });
});

describe('the CSV dialect a layout declares', () => {
  // one wallet's and two banks' exports: a tab (or spaces) between a closing quote and the comma
  const spaced = '"id","amount"\n"3985734"\t,"12.50"  \n"3985735" \t ,"1.00"\r\n';

  it('refuses white space after a closing quote unless declared, naming the key that reads it', async () => {
    const { records, error } = await ours(file(spaced));
    expect(records).toEqual([{ fields: ['id', 'amount'], line: 1 }]);
    expect(error?.message).toMatch(/line 2.*followed by white space .* set the layout's "spaceAfterQuote": true/);
  });

  it.each([1, 2, 3, 7, 64])('with "spaceAfterQuote" skips it, in any read size (%i)', async (chunkBytes) => {
    const { records, error } = await ours(file(spaced), { spaceAfterQuote: true, chunkBytes });
    expect(error).toBeUndefined();
    expect(records).toEqual([
      { fields: ['id', 'amount'], line: 1 },
      { fields: ['3985734', '12.50'], line: 2 },
      { fields: ['3985735', '1.00'], line: 3 },
    ]);
  });

  it('still refuses anything but white space after a closing quote, and keeps a tab that is the delimiter', async () => {
    expect((await ours(file('"a" x,b\n'), { spaceAfterQuote: true })).error?.message).toMatch(/something other than a delimiter/);
    const tabs = await ours(file('"a"\t"b"\n'), { delimiter: '\t', spaceAfterQuote: true });
    expect(tabs.records).toEqual([{ fields: ['a', 'b'], line: 1 }]);
  });

  it('counts a line of white space only as a blank line where declared, and as a record otherwise', async () => {
    const text = 'id,amount\n  \t \nT1,1.00\n\t\n';
    expect((await ours(file(text))).records.map((r) => r.fields)).toEqual([['id', 'amount'], ['  \t '], ['T1', '1.00'], ['\t']]);
    const blank = await ours(file(text), { whiteLinesBlank: true });
    expect(blank.records).toEqual([
      { fields: ['id', 'amount'], line: 1 },
      { fields: ['T1', '1.00'], line: 3 },
    ]);
  });
});
