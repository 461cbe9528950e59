import { describe, expect, it } from 'vitest';
import { DuplicateKeyError, JsonSyntaxError, MAX_DEPTH, parseJsonText, placeOf, TooDeepError } from '../../src/config/jsonText.js';

const thrown = (text: string): Error => {
  try {
    parseJsonText(text);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`accepted: ${text}`);
};

describe('the strict scan of a config file', () => {
  it('finds a partner named twice, with the line and column of each', () => {
    const text = [
      '{',
      '  "ledger": "l.sqlite",',
      '  "partners": {',
      '    "adyen": { "intake": "/srv/a" },',
      '    "stripe": { "intake": "/srv/s" },',
      '    "adyen": { "intake": "/srv/b" }',
      '  }',
      '}',
    ].join('\n');
    const err = thrown(text) as DuplicateKeyError;
    expect(err).toBeInstanceOf(DuplicateKeyError);
    expect(err.path).toBe('"partners"."adyen"');
    expect(err.first).toEqual({ line: 4, column: 5 });
    expect(err.again).toEqual({ line: 6, column: 5 });
    expect(err.message).toBe(
      '"partners"."adyen" is given twice (line 4, column 5, and line 6, column 5): JSON would keep only the last and ignore the first: keep one',
    );
  });

  it('finds a key given twice at any depth: the top, a partner’s own keys, inside a list', () => {
    expect((thrown('{"intake": "a",\r\n "intake": "b"}') as DuplicateKeyError).again).toEqual({ line: 2, column: 2 });
    expect((thrown('{"partners": {"a": {"pattern": "x", "pattern": "y"}}}') as DuplicateKeyError).path).toBe('"partners"."a"."pattern"');
    expect((thrown('{"layout": {"columns": [{"name": "a"}, {"name": "b", "name": "c"}]}}') as DuplicateKeyError).path).toBe(
      '"layout"."columns"[1]."name"',
    );
    // the same key written with an escape is the same key
    expect((thrown('{"a": 1, "\\u0061": 2}') as DuplicateKeyError).path).toBe('"a"');
    // equal keys in different objects are no duplicate
    expect(parseJsonText('{"partners": {"a": {"intake": "x"}, "b": {"intake": "y"}}}')).toEqual({
      partners: { a: { intake: 'x' }, b: { intake: 'y' } },
    });
  });

  it('says where a syntax error is by line and column, and why', () => {
    const cases: [string, { line: number; column: number }, RegExp][] = [
      ['{\n  "a": 1\n  "b": 2\n}', { line: 3, column: 3 }, /expected "," or "}" after a value in an object, found "\\""/],
      ['{"a": [1, 2,]}', { line: 1, column: 13 }, /expected a value, found "]"/],
      ['{"a": 1,}', { line: 1, column: 9 }, /expected a key in double quotes, found "}"/],
      ['{"a" 1}', { line: 1, column: 6 }, /expected ":" after the key "a"/],
      ['{"a": "x\ny"}', { line: 1, column: 9 }, /raw control character/],
      ['{"a": "\\x"}', { line: 1, column: 8 }, /escape JSON does not have/],
      ['{"a": 01}', { line: 1, column: 8 }, /expected "," or "}"/],
      ['{"a": tru}', { line: 1, column: 7 }, /expected a value, found "t"/],
      ['{"a": "open', { line: 1, column: 7 }, /a string is not closed/],
      ['{"a": 1} {}', { line: 1, column: 10 }, /expected the end of the text/],
      ['', { line: 1, column: 1 }, /expected a value, found the end of the text/],
      ['{"a": {\n', { line: 2, column: 1 }, /expected a key in double quotes, found the end of the text/],
    ];
    for (const [text, place, why] of cases) {
      const err = thrown(text) as JsonSyntaxError;
      expect(err, text).toBeInstanceOf(JsonSyntaxError);
      expect({ text, place: err.place }).toEqual({ text, place });
      expect(err.message).toMatch(why);
      expect(err.message).toMatch(new RegExp(`^line ${place.line}, column ${place.column}: `));
    }
  });

  it('accepts exactly what JSON.parse accepts, and gives its values', () => {
    const texts = [
      '0',
      '-0.5e+3',
      '1E2',
      '"\\ud83d\\ude00 \\" \\\\ \\/ \\b\\f\\n\\r\\t"',
      ' [ ] ',
      '{}',
      '[[[]], {"a": [null, true, false]}]',
      '{"a": {"b": {"c": [1, {"d": "e"}]}}}',
      '\t\r\n{"x":1}\n',
      '-',
      '1.',
      '.5',
      '+1',
      '1e',
      '[1,]',
      '[,1]',
      "{'a': 1}",
      '{"a": undefined}',
      'nul',
      '[1 2]',
      '"\u2028"',
      '{"a":1}}',
    ];
    for (const text of texts) {
      let expected: unknown;
      try {
        expected = { value: JSON.parse(text) as unknown };
      } catch {
        expected = 'refused';
      }
      let got: unknown;
      try {
        got = { value: parseJsonText(text) };
      } catch (err) {
        expect(err, text).toBeInstanceOf(JsonSyntaxError);
        got = 'refused';
      }
      expect({ text, got }).toEqual({ text, got: expected });
    }
  });

  it('reads a text nested as deep as it may be, and refuses one deeper in one error at the place it went past, without recursion', () => {
    expect(parseJsonText(`${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}`)).toHaveLength(1);
    expect(() => parseJsonText(`${'{"a":'.repeat(MAX_DEPTH - 1)}1${'}'.repeat(MAX_DEPTH - 2)}`)).toThrow(
      /expected "," or "}" after a value in an object, found the end of the text/,
    );
    const depth = 200_000;
    for (const text of [`${'['.repeat(depth)}${']'.repeat(depth)}`, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`]) {
      const err = thrown(text);
      expect(err).toBeInstanceOf(TooDeepError);
      expect((err as TooDeepError).place).toEqual({ line: 1, column: text.startsWith('[') ? MAX_DEPTH + 1 : MAX_DEPTH * 5 + 1 });
      expect((err as Error).message).not.toContain('\n');
    }
  });

  it('counts lines by their line feeds', () => {
    expect(placeOf('ab\ncd\r\nef', 8)).toEqual({ line: 3, column: 2 });
    expect(placeOf('ab', 0)).toEqual({ line: 1, column: 1 });
  });
});
