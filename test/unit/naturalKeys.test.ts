import { describe, expect, it } from 'vitest';
import type { ColumnType, Layout } from '../../src/layout/model/layout.js';
import { KeyClashes, KeyRepeats } from '../../src/layout/reader/naturalKeys.js';

/** A layout of the given key columns (enough of one for the key's rules). */
function keyed(columns: [string, ColumnType, boolean?][]): Layout {
  return {
    columns: columns.map(([name, type, required = true]) => ({ name, type, required })),
    naturalKey: columns.map(([name]) => name),
  } as unknown as Layout;
}

describe('KeyRepeats: keys compared as the table compares them', () => {
  it('finds a repeated text key, and keeps case and spaces apart', () => {
    const repeats = new KeyRepeats(keyed([['id', 'text']]));
    expect(repeats.repeatOf(['A1'], 2)).toBeUndefined();
    expect(repeats.repeatOf(['a1'], 3)).toBeUndefined();
    expect(repeats.repeatOf(['A1'], 4)).toBe(2);
    expect(repeats.repeatOf(['A1'], 5)).toBe(2);
  });

  it('an integer key is a number: 007, 7 and -0, 0 are one key each', () => {
    const repeats = new KeyRepeats(keyed([['seq', 'integer']]));
    expect(repeats.repeatOf(['7'], 2)).toBeUndefined();
    expect(repeats.repeatOf(['007'], 3)).toBe(2);
    expect(repeats.repeatOf(['0'], 4)).toBeUndefined();
    expect(repeats.repeatOf(['-0'], 5)).toBe(4);
    expect(repeats.repeatOf(['123456789012345678'], 6)).toBeUndefined();
    expect(repeats.repeatOf(['123456789012345679'], 7)).toBeUndefined();
  });

  it('a timestamp key is its instant: one moment under two offsets is one key, a tenth of a second apart is two', () => {
    const repeats = new KeyRepeats(keyed([['at', 'timestamp']]));
    expect(repeats.repeatOf(['2026-03-14 10:00:00+01:00'], 2)).toBeUndefined();
    expect(repeats.repeatOf(['2026-03-14 09:00:00+00:00'], 3)).toBe(2);
    expect(repeats.repeatOf(['2026-03-14 04:00:00.000-05:00'], 4)).toBe(2);
    expect(repeats.repeatOf(['2026-03-14 09:00:00.1+00:00'], 5)).toBeUndefined();
    expect(repeats.repeatOf(['2026-03-14 09:00:00.100+00:00'], 6)).toBe(5);
  });

  it('a key of several columns repeats only when every part does; an empty optional part is ""', () => {
    const repeats = new KeyRepeats(
      keyed([
        ['id', 'text'],
        ['kind', 'text', false],
      ]),
    );
    expect(repeats.repeatOf(['P1', 'fee'], 2)).toBeUndefined();
    expect(repeats.repeatOf(['P1', null], 3)).toBeUndefined();
    expect(repeats.repeatOf(['P1', ''], 4)).toBe(3);
    expect(repeats.repeatOf(['P1', 'fee'], 5)).toBe(2);
    // the separator cannot be faked by a value
    expect(repeats.repeatOf(['P1\0fee', ''], 6)).toBeUndefined();
  });
});

describe('KeyClashes: one message for a load and for check', () => {
  it('names the clashes by line, at most ten, then how many more', () => {
    const layout = keyed([['id', 'text']]);
    const repeats = new KeyRepeats(layout);
    const clashes = new KeyClashes();
    clashes.add({ key: '"X9"', line: 30, from: 'already loaded from a.csv (run r1)' });
    for (let line = 2; line <= 14; line++) clashes.addRepeat(repeats, [line % 2 === 0 ? 'E' : 'O'], line);
    expect(clashes.count).toBe(12);
    const { message, line } = clashes.message(layout);
    expect(line).toBe(4);
    expect(message).toBe(
      'field id: 12 value(s) already used: ' +
        [4, 5, 6, 7, 8, 9, 10, 11, 12]
          .map((l) => `line ${l}: "${l % 2 === 0 ? 'E' : 'O'}" repeats line ${l % 2 === 0 ? 2 : 3} of this file`)
          .join('; ') +
        '; line 30: "X9" already loaded from a.csv (run r1); and 2 more',
    );
  });

  it('without a clash found, says the database saw one', () => {
    expect(new KeyClashes().message(keyed([['id', 'text']]))).toEqual({ message: 'field id: a value collides with rows already loaded' });
  });
});
