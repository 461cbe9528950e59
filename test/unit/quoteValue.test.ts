import { describe, expect, it } from 'vitest';
import { codePoint, HIDDEN_CHARACTER, QUOTED_CHARACTERS, quoteValue } from '../../src/layout/values/quoteValue.js';

describe('quoting a value in a message', () => {
  it('quotes a short value whole, escaping quotes and backslashes', () => {
    expect(quoteValue('T-1')).toBe('"T-1"');
    expect(quoteValue('say "hi" \\o/')).toBe('"say \\"hi\\" \\\\o/"');
    expect(quoteValue('')).toBe('""');
  });

  it('shows invisible characters as escapes, so look-alike values read differently', () => {
    expect(quoteValue('T-1 ')).toBe('"T-1 "');
    expect(quoteValue('T-1\u200b')).toBe('"T-1\\u200b"');
    expect(quoteValue('T-1\u00a0')).toBe('"T-1\\u00a0"');
    expect(quoteValue('\ufeffT-1')).toBe('"\\ufeffT-1"');
    expect(quoteValue('a\tb\r\nc\u0000\u0085\u202e')).toBe('"a\\tb\\r\\nc\\u0000\\u0085\\u202e"');
    expect(quoteValue('x\u{e0041}')).toBe('"x\\u{e0041}"');
  });

  it('keeps visible non-ASCII text as it is', () => {
    expect(quoteValue('Zürich-€ 東京 😀')).toBe('"Zürich-€ 東京 😀"');
  });

  it(`cuts after ${QUOTED_CHARACTERS} shown characters, whatever the length of the value`, () => {
    const exact = 'a'.repeat(QUOTED_CHARACTERS);
    expect(quoteValue(exact)).toBe(`"${exact}"`);
    expect(quoteValue(`${exact}b`)).toBe(`"${exact}…"`);
    const huge = quoteValue('x'.repeat(50 * 1024 * 1024));
    expect(huge).toBe(`"${'x'.repeat(QUOTED_CHARACTERS)}…"`);
    // escapes count as what they show, and are never cut in half
    const spaces = quoteValue('\u00a0'.repeat(100));
    expect(spaces).toBe(`"${'\\u00a0'.repeat(13)}…"`);
    // a character outside the BMP is never split into a lone surrogate
    const emoji = quoteValue('😀'.repeat(100));
    expect(emoji).toBe(`"${'😀'.repeat(40)}…"`);
  });

  it('names a single character by its code point', () => {
    expect(codePoint('\u200b')).toBe('U+200B');
    expect(codePoint(' ')).toBe('U+0020');
    expect(codePoint('😀')).toBe('U+1F600');
  });

  it.each([
    ['zero-width space', '\u200b'],
    ['zero-width joiner', '\u200d'],
    ['byte-order mark', '\ufeff'],
    ['left-to-right mark', '\u200e'],
    ['right-to-left override', '\u202e'],
    ['no-break space', '\u00a0'],
    ['narrow no-break space', '\u202f'],
    ['ideographic space', '\u3000'],
    ['word joiner', '\u2060'],
    ['Hangul choseong filler', '\u115f'],
    ['Hangul jungseong filler', '\u1160'],
    ['Hangul filler', '\u3164'],
    ['soft hyphen', '\u00ad'],
    ['braille blank', '\u2800'],
    ['line separator', '\u2028'],
    ['a C1 control', '\u0085'],
    ['DEL', '\u007f'],
  ])('counts a %s as hidden', (_what, ch) => {
    expect(HIDDEN_CHARACTER.test(ch)).toBe(true);
  });

  it.each([' ', 'a', 'é', '-', '_', '€', '東'])('does not count %j as hidden', (ch) => {
    expect(HIDDEN_CHARACTER.test(ch)).toBe(false);
  });
});
