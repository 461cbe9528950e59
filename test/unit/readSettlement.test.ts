import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/demo/sampleSettlement.js';
import { RejectError } from '../../src/errors.js';
import { DEFAULT_LAYOUT } from '../../src/load/layout.js';
import { readSettlement } from '../../src/load/readSettlement.js';

function file(content: string | Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-read-')), 'settle_x.csv');
  writeFileSync(path, content);
  return path;
}

async function readAll(path: string) {
  const rows = [];
  for await (const r of readSettlement(path, DEFAULT_LAYOUT)) rows.push(r);
  return rows;
}

async function rejection(path: string): Promise<RejectError> {
  try {
    await readAll(path);
  } catch (err) {
    if (err instanceof RejectError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

const row = (id: string, merchant = 'M1') => `2026-03-14,${id},${merchant},VISA,sale,10.00,0.15,9.85,EUR`;

describe('reading a settlement file', () => {
  it('strips a byte-order mark, takes CRLF, and numbers lines as an editor does, quoted line breaks included', async () => {
    const text = `\uFEFF${HEADER}\r\n${row('A')}\r\n\r\n${row('B', '"two\r\nlines"')}\r\n${row('C', '"x, ""y"""')}\r\n`;
    const rows = await readAll(file(text));
    expect(rows.map((r) => [r.line, r.values[1], r.values[2]])).toEqual([
      [2, 'A', 'M1'],
      [4, 'B', 'two\r\nlines'],
      [6, 'C', 'x, "y"'],
    ]);
  });

  it('names the line and field of a byte that is not UTF-8, even after a quoted line break', async () => {
    const head = Buffer.from(`${HEADER}\n${row('A', '"a\nb"')}\n${row('B')}\n`);
    const bad = Buffer.from(row('C', 'M\u0001'));
    bad[bad.indexOf(0x01)] = 0xe9; // Latin-1 é
    const err = await rejection(file(Buffer.concat([head, bad, Buffer.from('\n')])));
    expect(err.message).toBe('line 5, field merchant_id: not valid UTF-8');
  });

  it('rejects a multi-byte character cut off at the end of the file', async () => {
    const err = await rejection(file(Buffer.concat([Buffer.from(`${HEADER}\n${row('A')}\n`), Buffer.from([0xe2, 0x82])])));
    expect(err.message).toMatch(/not valid UTF-8/);
  });

  it('accepts multi-byte characters split across read chunks', async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => row(`R${i}`, 'Zürich-€')).join('\n');
    const rows = await readAll(file(`${HEADER}\n${many}\n`));
    expect(rows).toHaveLength(20_000);
    expect(rows.every((r) => r.values[2] === 'Zürich-€')).toBe(true);
  });

  it('reports an unclosed quote with the line it starts on', async () => {
    const err = await rejection(file(`${HEADER}\n${row('A')}\n${row('B', '"M1')}\n`));
    expect(err.line).toBe(3);
  });

  it('rejects an empty file and a file with only a header row as such', async () => {
    expect((await rejection(file(''))).message).toMatch(/empty/);
    expect(await readAll(file(`${HEADER}\n`))).toEqual([]);
  });
});
