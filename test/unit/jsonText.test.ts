import { describe, expect, it } from 'vitest';
import { DuplicateKeyError, JsonSyntaxError, MAX_DEPTH, parseJsonText, TooDeepError } from '../../src/config/jsonText.js';

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
      ['[1 2]', { line: 1, column: 4 }, /expected "," or "]" after a value in a list, found "2"/],
      ['{"a": [1, 2}', { line: 1, column: 12 }, /expected "," or "]" after a value in a list, found "}"/],
      ['{"a": 1.}', { line: 1, column: 9 }, /expected a digit after "1\.", found "}"/],
      ['{"a": 1e+}', { line: 1, column: 10 }, /expected a digit after "1e\+", found "}"/],
      ['{"a": "ok\\n\\q"}', { line: 1, column: 12 }, /escape JSON does not have/],
      ['{"a": "\\u12G4"}', { line: 1, column: 8 }, /escape JSON does not have/],
      ['{"a": "x\ty"}', { line: 1, column: 9 }, /raw control character/],
      ['{"a": 1 // the amount\n}', { line: 1, column: 9 }, /a comment, which JSON does not have/],
      ['{"a": 1, /* b */ "b": 2}', { line: 1, column: 10 }, /a comment, which JSON does not have/],
      ['{\u00a0"a": 1}', { line: 1, column: 2 }, /expected a key in double quotes, found "\u00a0"/],
      ['{"a": 1}\n\n  x', { line: 3, column: 3 }, /expected the end of the text after the JSON value, found "x"/],
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
      '\u00a0{}',
      '{"a":\u000b1}',
      '{"a":1}\u00a0',
      '[1,2,3]\r\n',
      '{"a":"\u0000"}',
      '{"a":"\\u0000"}',
      '"\ud800"',
      '1e999',
      '-0',
      '[-]',
      '{"__proto__": 1}',
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

  it('finds a key given twice among thousands of partners, and reads keys holding quotes, backslashes and colons as JSON.parse does', () => {
    const partners = Array.from({ length: 5000 }, (_, i) =>
      i === 4321 ? `"partner-${i}": {"intake": "p/${i}", "pattern": "a*", "pattern": "b*"}` : `"partner-${i}": {"intake": "p/${i}"}`,
    );
    const err = thrown(`{"partners": {\n${partners.join(',\n')}\n}}`) as DuplicateKeyError;
    expect(err).toBeInstanceOf(DuplicateKeyError);
    expect(err.path).toBe('"partners"."partner-4321"."pattern"');
    expect(err.again).toEqual({ line: 4323, column: 55 });
    // a key's closing quote is the first one after an even run of backslashes; a colon in a value is no key
    const text = '{"a\\"b:": "c:d", "e\\\\": "\\":", "f": {"g\\\\\\"": [":", {"h": "i"}]}}';
    expect(parseJsonText(text)).toEqual(JSON.parse(text));
    expect((thrown('{"e\\\\": 1, "x": ":", "e\\\\" : 2}') as DuplicateKeyError).path).toBe('"e\\\\"');
  });

  it('finds the first problem in the text’s order: a key given twice before a syntax error, and the other way round', () => {
    expect(thrown('{"a": 1, "a": 2, "b" 3}')).toBeInstanceOf(DuplicateKeyError);
    expect(thrown('{"a": 1, "b" 3, "a": 2}')).toBeInstanceOf(JsonSyntaxError);
  });

  it('keeps `__proto__` a key like any other, as JSON.parse does', () => {
    const value = parseJsonText('{"__proto__": {"polluted": true}, "b": 1}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__', 'b']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((thrown('{"__proto__": 1, "__proto__": 2}') as DuplicateKeyError).path).toBe('"__proto__"');
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

  it('counts a line end as one line, CRLF or LF or a lone CR, and columns from the line start', () => {
    for (const end of ['\n', '\r\n', '\r']) {
      const err = thrown(`{${end}  "a": 1,${end}  "a": 2${end}}`) as DuplicateKeyError;
      expect({ end, first: err.first, again: err.again }).toEqual({ end, first: { line: 2, column: 3 }, again: { line: 3, column: 3 } });
    }
    expect((thrown('ab') as JsonSyntaxError).place).toEqual({ line: 1, column: 1 });
  });
});
