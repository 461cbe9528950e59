import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/demo/sampleSettlement.js';
import { DEFAULT_LAYOUT, type Layout } from '../../src/layout/model/layout.js';
import { lastRecordCutShort } from '../../src/layout/reader/lastRecord.js';

function file(content: string | Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-last-')), 'settle_x.csv');
  writeFileSync(path, content);
  return path;
}

const row = (id: string, merchant = 'M1') => `2026-03-14,${id},${merchant},VISA,sale,10.00,0.15,9.85,EUR`;
const body = (n: number) => Array.from({ length: n }, (_, i) => row(`T${i}`)).join('\n');

describe('a last record cut short (an upload paused mid-line)', () => {
  it('is found with its line and widths when it has fewer fields than the header and no line end', async () => {
    const cut = row('T9').split(',').slice(0, 3).join(',');
    expect(await lastRecordCutShort(file(`${HEADER}\n${body(3)}\n${cut}`), DEFAULT_LAYOUT)).toEqual({ line: 5, fields: 3, expected: 9 });
  });

  it('is not a cut when the file ends with a line end, or its last line has all its fields without one', async () => {
    expect(await lastRecordCutShort(file(`${HEADER}\n${body(3)}\n`), DEFAULT_LAYOUT)).toBeUndefined();
    expect(await lastRecordCutShort(file(`${HEADER}\r\n${body(3)}\r\n`), DEFAULT_LAYOUT)).toBeUndefined();
    expect(await lastRecordCutShort(file(`${HEADER}\n${body(3)}`), DEFAULT_LAYOUT)).toBeUndefined();
    expect(await lastRecordCutShort(file(''), DEFAULT_LAYOUT)).toBeUndefined();
  });

  it('counts lines as the reader does: a quoted line break above, and a last line that is the end of a quoted value', async () => {
    const quoted = `${HEADER}\n${row('A', '"two\nlines"')}\n${row('B', '"x\nand the rest"')}`;
    // the last physical line `and the rest",VISA,…` has few fields, yet the record is whole
    expect(await lastRecordCutShort(file(quoted), DEFAULT_LAYOUT)).toBeUndefined();
    const cutInQuote = `${HEADER}\n${row('A', '"two\nlines"')}\n2026-03-14,B,"half a merch`;
    expect(await lastRecordCutShort(file(cutInQuote), DEFAULT_LAYOUT)).toEqual({ line: 4, fields: 3, expected: 9 });
  });

  it('is a cut when the file stops inside a character’s UTF-8 bytes', async () => {
    const bytes = Buffer.concat([Buffer.from(`${HEADER}\n${row('A')}\n2026-03-14,B,M`), Buffer.from('é').subarray(0, 1)]);
    expect(await lastRecordCutShort(file(bytes), DEFAULT_LAYOUT)).toMatchObject({ line: 3 });
  });

  it('leaves short lines that are short by design: a trailer, a skipped summary line', async () => {
    const withTrailer: Layout = { ...DEFAULT_LAYOUT, trailer: { firstField: 'Total', rowCountField: 2 } };
    expect(await lastRecordCutShort(file(`${HEADER}\n${body(2)}\nTotal,2`), withTrailer)).toBeUndefined();
    const summary: Layout = { ...DEFAULT_LAYOUT, skipRows: [{ column: 'type', values: ['payout'] }] };
    expect(await lastRecordCutShort(file(`${HEADER}\n${body(2)}\n2026-03-14,P,M1,VISA,payout`), summary)).toBeUndefined();
  });

  it('looks past the last 64 KiB for a long file, and names the right line', async () => {
    const text = `${HEADER}\n${body(5000)}\n2026-03-14,LAST`;
    expect(await lastRecordCutShort(file(text), DEFAULT_LAYOUT)).toEqual({ line: 5002, fields: 2, expected: 9 });
  });
});
