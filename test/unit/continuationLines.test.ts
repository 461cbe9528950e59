import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { csvRecordBlocks, type CsvRecord, type Join } from '../../src/layout/reader/csvRecords.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { describedStatementLayoutObject } from '../support/statementLayout.js';

const FIXTURE = 'fixtures/statements/continuation_export.csv';

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-cont-')), 'f.csv');
  writeFileSync(path, text);
  return path;
}

async function records(path: string, chunkBytes?: number) {
  const joins: Join[] = [];
  const out: CsvRecord[] = [];
  const opts = { delimiter: ',', maxRecordBytes: 1 << 20, continuationLines: true, joins, ...(chunkBytes ? { chunkBytes } : {}) };
  for await (const block of csvRecordBlocks(path, opts)) for (let r = block.next(); r !== null; r = block.next()) out.push(r);
  return { records: out.map((r) => [r.line, ...r.fields]), joins };
}

const layout = (continuationLines: boolean) =>
  parseLayout(describedStatementLayoutObject(continuationLines ? { continuationLines: true } : {}), 'test');

describe('continuation lines, where the layout declares them', () => {
  it.each([undefined, 1, 3, 17])('joins a description broken over lines to its record, in any read size (%s)', async (chunkBytes) => {
    const { records: read, joins } = await records(FIXTURE, chunkBytes);
    expect(read).toEqual([
      [1, 'Date', 'Description', 'Amount', 'Balance'],
      [2, '2024-01-02', 'CARD PAYMENT COFFEE BAR', '-3.50', '996.50'],
      [3, '2024-01-03', 'TRANSFER TO J SMITH REF INV-2024-001', '-250.00', '746.50'],
      [5, '2024-01-04', 'SALARY JANUARY', '2500.00', '3246.50'],
      [6, '2024-01-05', 'STANDING ORDER RENT FLAT 4B JANUARY', '-900.00', '2346.50'],
      [9, '2024-01-06', 'CARD PAYMENT COFFEE BAR', '-3.50', '2343.00'],
    ]);
    expect(joins).toEqual([
      { line: 3, continuedOn: [4] },
      { line: 6, continuedOn: [7, 8] },
    ]);
  });

  it('never joins a line as wide as the header, and hands a short record that nothing completes to the reader as it is', async () => {
    const { records: read, joins } = await records(file('a,b,c\n1,x\n2,y,z\n3\n4,5\n'));
    expect(read).toEqual([
      [1, 'a', 'b', 'c'],
      [2, '1', 'x'],
      [3, '2', 'y', 'z'],
      [4, '3 4', '5'],
    ]);
    expect(joins).toEqual([{ line: 4, continuedOn: [5] }]);
  });

  it('is a reject without the key, naming the broken line; with it the file loads its rows and says each join', async () => {
    const without = await findBadRows(FIXTURE, layout(false));
    expect(without.error?.message).toMatch(/^\d+ bad rows: line 3: /);
    const withJoins = await findBadRows(FIXTURE, layout(true));
    expect(withJoins.error).toBeNull();
    expect(withJoins.rows).toBe(5);
    expect(withJoins.joins).toEqual([
      { line: 3, continuedOn: [4] },
      { line: 6, continuedOn: [7, 8] },
    ]);
    // nine physical lines, five rows and the header
    expect(readFileSync(FIXTURE, 'utf8').trimEnd().split('\n')).toHaveLength(9);
  });

  it('needs a header, and no record types', () => {
    expect(() =>
      parseLayout({ continuationLines: true, header: false, columns: [{ name: 'id', type: 'text', position: 1 }], naturalKey: 'id' }, 't'),
    ).toThrow(/"continuationLines" needs a header line first/);
    expect(() => parseLayout({ continuationLines: 'yes', columns: [{ name: 'transaction_id', type: 'text' }] }, 't')).toThrow(
      /"continuationLines" must be true or false/,
    );
  });
});
