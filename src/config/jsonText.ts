/**
 * JSON text read strictly, for the config file: JSON.parse keeps the last of two equal keys
 * without a word (a partner named twice loses its first block), and says where it stopped
 * only as a character position. This scan finds both by line and column, in one pass with an
 * explicit stack (no recursion, however deep the text nests), and leaves the values to
 * JSON.parse, whose reading of numbers and strings is the standard's.
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
 * out of stack on it.
 */
export const MAX_DEPTH = 64;

/** The text nests objects and lists deeper than MAX_DEPTH: where it went past. */
export class TooDeepError extends Error {
  constructor(readonly place: TextPlace) {
    super(`${placeText(place)}: objects and lists nest deeper than ${MAX_DEPTH} levels here: a config file is a few levels deep`);
    this.name = 'TooDeepError';
  }
}

/** An object or list being read; its path is asked only for a message, from its parent chain. */
interface Frame {
  kind: 'object' | 'array';
  parent: Frame | undefined;
  /** where the parent holds it: its key in quotes, or `[index]` */
  step: string | undefined;
  /** an object's keys so far, each with the offset of its opening quote */
  keys: Map<string, number>;
  /** the object's key whose value is read next, in quotes */
  lastKey: string;
  /** the list's entries so far */
  length: number;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const SIMPLE_ESCAPES = '"\\/bfnrt';

/** Line and column of `offset` in `text` (a line ends at LF; CRLF is one line end). */
export function placeOf(text: string, offset: number): TextPlace {
  let line = 1;
  let lineStart = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at < offset; at = text.indexOf('\n', at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** `"partners"."adyen"`, `"ignore"[2]`: the steps from the top to `last` inside `frame`. */
function pathOf(frame: Frame | undefined, last: string): string {
  const steps = [last];
  for (let f = frame; f?.step !== undefined; f = f.parent) steps.push(f.step);
  return steps.reverse().reduce((path, step) => (path === '' || step.startsWith('[') ? path + step : `${path}.${step}`), '');
}

/**
 * Checks that `text` is one JSON value with no key given twice in any one object, nested at most
 * MAX_DEPTH deep, then parses it. Throws JsonSyntaxError, DuplicateKeyError or TooDeepError, each
 * with line and column.
 */
export function parseJsonText(text: string): unknown {
  scan(text);
  return JSON.parse(text) as unknown;
}

function scan(text: string): void {
  let at = 0;
  const stack: Frame[] = [];
  const found = () => (at >= text.length ? 'the end of the text' : JSON.stringify(text[at]));
  const fail = (why: string, offset = at): never => {
    throw new JsonSyntaxError(why, placeOf(text, offset));
  };
  const skipSpace = () => {
    while (at < text.length && (text[at] === ' ' || text[at] === '\t' || text[at] === '\n' || text[at] === '\r')) at++;
  };

  /** A string from its opening quote at `at`, decoded. */
  const readString = (): string => {
    const start = at++;
    for (;;) {
      if (at >= text.length) fail('a string is not closed (its opening quote is here)', start);
      const code = text.charCodeAt(at);
      if (code === 0x22) break;
      if (code === 0x5c) {
        const escaped = text[at + 1] ?? '';
        if (escaped !== '' && SIMPLE_ESCAPES.includes(escaped)) at += 2;
        else if (escaped === 'u' && HEX4.test(text.slice(at + 2, at + 6))) at += 6;
        else fail('a string holds an escape JSON does not have (write \\\\ for a backslash)');
        continue;
      }
      if (code < 0x20) fail('a string holds a raw control character (a line break, a tab): write it as \\n or \\t');
      at++;
    }
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };

  /** An object's next key and its colon; a key the object already has is refused with both places. */
  const readKey = (frame: Frame): void => {
    skipSpace();
    if (text[at] !== '"') fail(`expected a key in double quotes, found ${found()}`);
    const offset = at;
    const key = readString();
    const shown = JSON.stringify(key);
    const first = frame.keys.get(key);
    if (first !== undefined) throw new DuplicateKeyError(pathOf(frame, shown), placeOf(text, first), placeOf(text, offset));
    frame.keys.set(key, offset);
    frame.lastKey = shown;
    skipSpace();
    if (text[at] !== ':') fail(`expected ":" after the key ${shown}, found ${found()}`);
    at++;
  };

  /** One value; true when it opened an object or list that has entries to read. */
  const readValue = (): boolean => {
    skipSpace();
    const parent = stack.at(-1);
    const step = parent === undefined ? undefined : parent.kind === 'object' ? parent.lastKey : `[${parent.length}]`;
    const open = (kind: Frame['kind'], close: string): boolean => {
      if (stack.length >= MAX_DEPTH) throw new TooDeepError(placeOf(text, at));
      at++;
      skipSpace();
      if (text[at] === close) {
        at++;
        return false;
      }
      const frame: Frame = { kind, parent, step, keys: new Map(), lastKey: '', length: 0 };
      stack.push(frame);
      if (kind === 'object') readKey(frame);
      return true;
    };
    const char = text[at];
    if (char === '{') return open('object', '}');
    if (char === '[') return open('array', ']');
    if (char === '"') {
      readString();
      return false;
    }
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) {
      NUMBER.lastIndex = at;
      if (!NUMBER.test(text)) fail(`expected a number, found ${found()}`);
      at = NUMBER.lastIndex;
      return false;
    }
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return false;
      }
    }
    return fail(`expected a value, found ${found()}`);
  };

  for (;;) {
    if (readValue()) continue;
    // after a value: the next entry of the innermost object or list, or its end (and so on outwards)
    for (;;) {
      skipSpace();
      const frame = stack.at(-1);
      if (frame === undefined) {
        if (at < text.length) fail(`expected the end of the text after the JSON value, found ${found()}`);
        return;
      }
      const close = frame.kind === 'object' ? '}' : ']';
      if (text[at] === ',') {
        at++;
        if (frame.kind === 'object') readKey(frame);
        else frame.length++;
        break;
      }
      if (text[at] !== close)
        fail(`expected "," or "${close}" after a value in ${frame.kind === 'object' ? 'an object' : 'a list'}, found ${found()}`);
      at++;
      stack.pop();
    }
  }
}
