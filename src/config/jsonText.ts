import { printParseErrorCode, visit, type JSONPath, type ParseErrorCode } from 'jsonc-parser';

/**
 * JSON text read strictly, for the config file: JSON.parse keeps the last of two equal keys
 * without a word (a partner named twice loses its first block), and says where it stopped only
 * as a character position. jsonc-parser's `visit` (Microsoft's parser behind VS Code's JSON
 * support) walks the text once, token by token, with each token's line and column; this file
 * adds what JSON.parse lacks on that walk: a key given twice in one object refused with both
 * places, a nesting too deep for any config refused before it is read deeper, and each syntax
 * error said as what was expected there and what was found. The values are JSON.parse's, whose
 * reading of numbers and strings is the standard's (and which keeps `__proto__` a plain key).
 */

/** A place in a text: 1-based line and column (the column counts UTF-16 code units, as most editors show it). */
export interface TextPlace {
  line: number;
  column: number;
}

/** `line 3, column 7`, as the messages write a place. */
export const placeText = (place: TextPlace): string => `line ${place.line}, column ${place.column}`;

/** The text is not JSON: where and why. */
export class JsonSyntaxError extends Error {
  constructor(
    readonly why: string,
    readonly place: TextPlace,
  ) {
    super(`${placeText(place)}: ${why}`);
    this.name = 'JsonSyntaxError';
  }
}

/** One object gives a key twice: the key's path from the top (`"partners"."adyen"`) and both places. */
export class DuplicateKeyError extends Error {
  constructor(
    readonly path: string,
    readonly first: TextPlace,
    readonly again: TextPlace,
  ) {
    super(
      `${path} is given twice (${placeText(first)}, and ${placeText(again)}): JSON would keep only the last and ignore the first: keep one`,
    );
    this.name = 'DuplicateKeyError';
  }
}

/**
 * How deep objects and lists may nest. A config file is a few levels deep (a partner's layout's
 * totals' groups: 7); a text nested far deeper is no config, and refusing it here, in one line,
 * keeps every later reader of the value (a message quoting it, a layout's checks) from running
 * out of stack on it. (The walk itself recurses per level, so it is stopped at this depth too.)
 */
export const MAX_DEPTH = 64;

/** The text nests objects and lists deeper than MAX_DEPTH: where it went past. */
export class TooDeepError extends Error {
  constructor(readonly place: TextPlace) {
    super(`${placeText(place)}: objects and lists nest deeper than ${MAX_DEPTH} levels here: a config file is a few levels deep`);
    this.name = 'TooDeepError';
  }
}

/**
 * Checks that `text` is one JSON value with no key given twice in any one object, nested at most
 * MAX_DEPTH deep, then parses it. Throws JsonSyntaxError, DuplicateKeyError or TooDeepError, each
 * with line and column: the first problem in the text's order.
 */
export function parseJsonText(text: string): unknown {
  const plain = plainValue(text);
  return plain === undefined ? strictValue(text) : plain.value;
}

/** The walk, token by token, that finds the first problem with its place (StrictWalk), then the value. */
function strictValue(text: string): unknown {
  const walk = new StrictWalk(text);
  visit(text, walk, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  return JSON.parse(text) as unknown;
}

/**
 * The value of a text without a problem, found without the walk (a config of 20,000 partners
 * costs the walk about 0.1 s, JSON.parse a fifth of it): JSON.parse's value, when its keys are as
 * many as the keys the text writes (a key given twice is one key fewer in the value) and the text
 * nests no deeper than MAX_DEPTH. Undefined otherwise, and for a text JSON.parse refuses: the walk
 * then finds the problem and where it is. (The walk refuses nothing that JSON.parse takes
 * beyond those two: the same grammar, whitespace included.)
 */
function plainValue(text: string): { value: unknown } | undefined {
  const written = writtenShape(text);
  if (written.depth > MAX_DEPTH) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return keysIn(value) === written.keys ? { value } : undefined;
}

/**
 * How many keys a text writes (a string followed by `:`), and how deep its objects and lists
 * nest; exact for a text JSON.parse takes, a guess for any other (which the walk reads anyway).
 */
function writtenShape(text: string): { keys: number; depth: number } {
  let keys = 0;
  let depth = 0;
  let deepest = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 0x22) {
      at = stringEnd(text, at);
      if (at < 0) break;
      let next = at + 1;
      while (next < text.length && isJsonSpace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) === 0x3a) keys++;
      at = next - 1;
    } else if (code === 0x7b || code === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (code === 0x7d || code === 0x5d) depth--;
  }
  return { keys, depth: deepest };
}

/** The closing quote of the string opened at `open` (a quote after an odd run of backslashes is escaped); -1 when there is none. */
function stringEnd(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close > 0) {
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return -1;
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
const isJsonSpace = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

/** The keys of every object in a parsed value (nested at most MAX_DEPTH deep). */
function keysIn(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let keys = 0;
    for (const item of value) keys += keysIn(item);
    return keys;
  }
  let keys = 0;
  for (const key of Object.keys(value)) keys += 1 + keysIn((value as Record<string, unknown>)[key]);
  return keys;
}

/** An object or list being read: what comes next in it, and an object's keys so far with their places. */
interface Frame {
  kind: 'object' | 'array';
  next: 'key' | 'colon' | 'value' | 'comma';
  keys: Map<string, TextPlace>;
  /** the object's key whose value is read next, in quotes */
  lastKey: string;
}

const SIMPLE_ESCAPES = '"\\/bfnrt';
const HEX4 = /^[0-9a-fA-F]{4}$/;

/** The visitor: each callback keeps track of what the text must say next, and throws at the first problem. */
class StrictWalk {
  private readonly stack: Frame[] = [];
  /** the top-level value is read: only the end of the text may follow */
  private done = false;

  constructor(private readonly text: string) {}

  onObjectBegin = (_offset: number, _length: number, line: number, character: number): void => {
    this.open('object', line, character);
  };

  onArrayBegin = (_offset: number, _length: number, line: number, character: number): void => {
    this.open('array', line, character);
  };

  onObjectProperty = (key: string, _offset: number, _length: number, line: number, character: number, path: () => JSONPath): void => {
    const frame = this.stack.at(-1)!;
    const place = { line: line + 1, column: character + 1 };
    const first = frame.keys.get(key);
    if (first !== undefined) throw new DuplicateKeyError(pathText([...path(), key]), first, place);
    frame.keys.set(key, place);
    frame.lastKey = JSON.stringify(key);
    frame.next = 'colon';
  };

  onSeparator = (separator: string): void => {
    const frame = this.stack.at(-1)!;
    frame.next = separator === ':' || frame.kind === 'array' ? 'value' : 'key';
  };

  onLiteralValue = (): void => {
    this.valueRead();
  };

  /** An object or list closed; at the end of the text instead, it is not, and the error that follows says what it lacks. */
  onObjectEnd = (offset: number): void => {
    if (this.text[offset] === '}') this.close();
  };

  onArrayEnd = (offset: number): void => {
    if (this.text[offset] === ']') this.close();
  };

  onError = (code: ParseErrorCode, offset: number, length: number, line: number, character: number): never => {
    const at = (where: number) => ({ line: line + 1, column: character + 1 + (where - offset) });
    const kind = printParseErrorCode(code);
    if (['UnexpectedEndOfString', 'InvalidCharacter', 'InvalidEscapeCharacter', 'InvalidUnicode'].includes(kind)) {
      const fault = stringFault(this.text, offset);
      throw new JsonSyntaxError(fault.why, at(fault.at));
    }
    if (kind === 'UnexpectedEndOfNumber') {
      const end = offset + length;
      throw new JsonSyntaxError(
        `expected a digit after ${JSON.stringify(this.text.slice(offset, end))}, found ${this.found(end)}`,
        at(end),
      );
    }
    if (kind === 'InvalidCommentToken') throw new JsonSyntaxError('a comment, which JSON does not have', at(offset));
    throw new JsonSyntaxError(`expected ${this.expected()}, found ${this.found(offset)}`, at(offset));
  };

  private open(kind: Frame['kind'], line: number, character: number): void {
    if (this.stack.length >= MAX_DEPTH) throw new TooDeepError({ line: line + 1, column: character + 1 });
    this.stack.push({ kind, next: kind === 'object' ? 'key' : 'value', keys: new Map(), lastKey: '' });
  }

  private close(): void {
    this.stack.pop();
    this.valueRead();
  }

  private valueRead(): void {
    const frame = this.stack.at(-1);
    if (frame) frame.next = 'comma';
    else this.done = true;
  }

  /** What the text must say where the walk stands. */
  private expected(): string {
    const frame = this.stack.at(-1);
    if (!frame) return this.done ? 'the end of the text after the JSON value' : 'a value';
    if (frame.next === 'key') return 'a key in double quotes';
    if (frame.next === 'colon') return `":" after the key ${frame.lastKey}`;
    if (frame.next === 'value') return 'a value';
    return frame.kind === 'object' ? '"," or "}" after a value in an object' : '"," or "]" after a value in a list';
  }

  private found(offset: number): string {
    return offset >= this.text.length ? 'the end of the text' : JSON.stringify(this.text[offset]);
  }
}

/** `"partners"."adyen"`, `"layout"."columns"[1]."name"`: a key's path from the top. */
function pathText(path: JSONPath): string {
  return path.map((step, index) => (typeof step === 'number' ? `[${step}]` : `${index === 0 ? '' : '.'}${JSON.stringify(step)}`)).join('');
}

/**
 * The first fault of the string whose opening quote is at `start` (the scanner names a string's
 * fault at its opening quote): a raw control character, an escape JSON does not have, or no
 * closing quote before the end of the text (or of its line).
 */
function stringFault(text: string, start: number): { at: number; why: string } {
  for (let at = start + 1; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 0x22) break;
    if (code < 0x20) return { at, why: 'a string holds a raw control character (a line break, a tab): write it as \\n or \\t' };
    if (code === 0x5c) {
      const escaped = text[at + 1] ?? '';
      if (escaped === '') break;
      if (!SIMPLE_ESCAPES.includes(escaped) && !(escaped === 'u' && HEX4.test(text.slice(at + 2, at + 6))))
        return { at, why: 'a string holds an escape JSON does not have (write \\\\ for a backslash)' };
      at++;
    }
  }
  return { at: start, why: 'a string is not closed (its opening quote is here)' };
}
