import { describe, expect, it } from 'vitest';
import { terminalLine } from '../../src/cli/logger.js';
import { printable, printableJson } from '../../src/report/printable.js';
import { textTable } from '../../src/report/textTable.js';

/** Every character a terminal acts on rather than shows (C0, DEL, C1, format, separators). */
const ACTIVE = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

describe('text from the outside world on a terminal', () => {
  it('shows control characters of a name as escapes', () => {
    expect(printable('settle_\x1b[31mred\r.csv')).toBe('settle_\\x1b[31mred\\r.csv');
    expect(printable('a\x07b\tc\nd\x7f')).toBe('a\\x07b\\tc\\nd\\x7f');
    expect(printable('csi\u009b2J')).toBe('csi\\x9b2J');
  });

  it('shows format characters (bidi overrides, zero-width, byte-order mark) as escapes', () => {
    expect(printable('settle_\u202evsc.exe')).toBe('settle_\\u202evsc.exe');
    expect(printable('a\u200bb\ufeffc\u2028d')).toBe('a\\u200bb\\ufeffc\\u2028d');
    expect(printable('tag\u{e0041}')).toBe('tag\\u{e0041}');
  });

  it('leaves ordinary text, accents and other scripts alone', () => {
    const text = 'settle_20260314_a01.csv: café 東京 € \\ "quoted"';
    expect(printable(text)).toBe(text);
  });

  it('keeps tables aligned when a cell is escaped', () => {
    const lines = textTable(
      ['file', 'why'],
      [
        ['a\x1bb', 'x'],
        ['abcdef', 'y'],
      ],
    ).split('\n');
    expect(lines[1]).toBe('a\\x1bb  x');
    expect(lines[2]).toBe('abcdef  y');
  });

  it('escapes the file and message of a terminal log line', () => {
    const json = JSON.stringify({ level: 30, time: Date.UTC(2026, 2, 14, 2, 0, 3), file: 'settle_\x1b[2J.csv', msg: 'moved\r\u202e' });
    const line = terminalLine(json);
    expect(line).toBe('02:00:03 INFO  settle_\\x1b[2J.csv: moved\\r\\u202e\n');
    expect(ACTIVE.test(line.slice(0, -1))).toBe(false);
  });
});

describe('--json output', () => {
  it('parses back to exactly the same strings, with no raw control or format character in its bytes', () => {
    const value = { name: 'settle_\x1b[31m\r\u0085\u009b\u202e\u200d\u2028\u{e0041}.csv', n: 1, nested: [{ reason: 'é\u00ad' }] };
    const text = printableJson(value);
    expect(JSON.parse(text)).toEqual(value);
    expect(ACTIVE.test(text)).toBe(false);
  });
});
