import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { suffixedName } from '../../src/intake/intake.js';
import { globToRegExp, isInProgressName, isUnsafeName } from '../../src/intake/names.js';

describe('intake names', () => {
  it('matches the default pattern on whole names only', () => {
    const re = globToRegExp('settle_*.csv');
    expect(re.test('settle_20260314_a01.csv')).toBe(true);
    expect(re.test('settle_20260314_a01.csv.part')).toBe(false);
    expect(re.test('xsettle_1.csv')).toBe(false);
    expect(re.test('settle_1.csvx')).toBe(false);
    expect(globToRegExp('settle_2026031?_a0[12].csv').test('settle_20260314_a02.csv')).toBe(true);
  });

  it('reads braces, negated classes and escapes as a shell does, parentheses and a leading ! as plain characters', () => {
    const matches = (pattern: string, name: string) => globToRegExp(pattern).test(name);
    expect(['settle_a.csv', 'settle_b.csv', 'settle_c.csv'].filter((n) => matches('settle_{a,b}.csv', n))).toEqual([
      'settle_a.csv',
      'settle_b.csv',
    ]);
    expect(['settle_a.csv', 'settle_b.csv'].filter((n) => matches('settle_[!a]*.csv', n))).toEqual(['settle_b.csv']);
    expect(matches('settle_\\*.csv', 'settle_*.csv')).toBe(true);
    expect(matches('settle_\\*.csv', 'settle_x.csv')).toBe(false);
    expect(matches('settle_a0[12].csv', 'settle_a0[12].csv')).toBe(false);
    expect(matches('settle_(a).csv', 'settle_(a).csv')).toBe(true);
    expect(matches('settle_(a).csv', 'settle_a.csv')).toBe(false);
    expect(matches('!settle_*.csv', '!settle_1.csv')).toBe(true);
    expect(matches('settle_[abc.csv', 'settle_[abc.csv')).toBe(true); // an unclosed [ is a literal, as in a shell
    expect(matches('*.csv', '.settle_1.csv')).toBe(true); // dot-files are isInProgressName's to refuse
  });

  it('refuses a pattern it cannot compile with a usage error naming the pattern', () => {
    expect(() => globToRegExp('settle_[z-a].csv')).toThrow(UsageError);
    expect(() => globToRegExp('settle_[z-a].csv')).toThrow('bad file pattern "settle_[z-a].csv": Range out of order in character class');
  });

  it('treats upload-in-progress names and dot-files as not ours', () => {
    for (const n of ['settle_1.csv.part', 'settle_1.csv.filepart', 'settle_1.csv.tmp', 'settle_1.csv.partial', '.settle_1.csv']) {
      expect(isInProgressName(n)).toBe(true);
    }
    expect(isInProgressName('settle_1.csv')).toBe(false);
  });

  it('refuses names that could leave their folder', () => {
    for (const n of ['..', '../settle_1.csv', 'a/settle_1.csv', 'a\\b.csv', '', '.', 'a/../b', '..\\b', 'a\0b'])
      expect(isUnsafeName(n)).toBe(true);
    expect(isUnsafeName('settle_..csv')).toBe(false);
  });

  it('suffixes a clashing name before its extension', () => {
    expect(suffixedName('settle_a02.csv', 0)).toBe('settle_a02.csv');
    expect(suffixedName('settle_a02.csv', 1)).toBe('settle_a02.1.csv');
    expect(suffixedName('noext', 2)).toBe('noext.2');
  });

  it('keeps a suffixed name within 255 bytes, shortening the stem by whole characters', () => {
    const longest = `settle_${'é'.repeat(122)}.csv`;
    expect(Buffer.byteLength(longest)).toBe(255);
    const s = suffixedName(longest, 12);
    expect(Buffer.byteLength(s)).toBe(254); // 'é' is two bytes: never cut in half
    expect(s).toMatch(/^settle_é+\.12\.csv$/);
  });
});
