/**
 * The grammar of a setting's value, written once for the two readers of a config file:
 * settle-ingest's own (settingValues.ts, calendarSettings.ts) and an editor's, through the JSON
 * Schema of `settle-ingest config --json-schema` (jsonSchema.ts). Each rule here is a regular
 * expression (or a JSON type with a range) that the reader tests a value by and the schema
 * gives as its `pattern` (or `type`, `minimum`, `maximum`), so the two take the same values.
 * The patterns are written without flags and anchored, as JSON Schema's must be.
 */

/** A JSON Schema, as plain data. */
export type Schema = Record<string, unknown>;

/** A word in either case, as a pattern with no flags can say it: `[tT][rR][uU][eE]`. */
export const caseless = (word: string): string =>
  [...word].map((c) => (c.toLowerCase() === c.toUpperCase() ? escapeRegExp(c) : `[${c.toLowerCase()}${c.toUpperCase()}]`)).join('');

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** A text setting holds something besides white space: an empty or blank path or URL is a mistake, never "here". */
export const NOT_BLANK = /\S/;

/** A whole number written as text: digits, white space around allowed (`" 5 "`). */
export const WHOLE_NUMBER_TEXT = /^\s*(\d+)\s*$/;

/** A whole number from JSON (an integer: `5`, not `5.5`) or from text (`"5"`); NaN when it is neither. */
export function wholeNumber(value: unknown): number {
  if (typeof value === 'number') return Number.isInteger(value) ? value : NaN;
  const match = typeof value === 'string' ? WHOLE_NUMBER_TEXT.exec(value) : null;
  return match ? Number(match[1]) : NaN;
}

/** The least and greatest a number may be. */
export interface NumberRange {
  min: number;
  max: number;
}

/**
 * A whole number from `range.min` to `range.max`, as JSON or as text: the text's pattern states
 * the range digit by digit (`"1000000"` is over 999999 for an editor as for settle-ingest).
 */
export function wholeNumberSchema(range: NumberRange): Schema {
  return {
    anyOf: [
      { type: 'integer', minimum: range.min, maximum: range.max },
      { type: 'string', pattern: `^\\s*0*(?:${integerRangeAlternatives(range.min, range.max).join('|')})\\s*$` },
    ],
  };
}

/**
 * The decimal numbers from `low` to `high` (no leading zeros) as alternatives of a pattern, each
 * a fixed prefix, one digit class and `\d{n}`: the classic split of a range into runs of equal length.
 */
export function integerRangeAlternatives(low: number, high: number): string[] {
  const split = (from: bigint, to: bigint): string[] => {
    if (from > to) return [];
    const fromText = from.toString();
    if (fromText.length < to.toString().length) {
      const topOfLength = 10n ** BigInt(fromText.length) - 1n;
      return [...split(from, topOfLength), ...split(topOfLength + 1n, to)];
    }
    return sameLength(fromText, to.toString());
  };
  return split(BigInt(low), BigInt(high));
}

/** The digit strings from `from` to `to`, both of one length. */
function sameLength(from: string, to: string): string[] {
  if (from === to) return [from];
  const rest = from.length - 1;
  if (from[0] === to[0]) return sameLength(from.slice(1), to.slice(1)).map((tail) => from[0]! + tail);
  const any = rest === 0 ? '' : rest === 1 ? '\\d' : `\\d{${rest}}`;
  const out: string[] = [];
  let first = Number(from[0]);
  let last = Number(to[0]);
  const fromIsRound = /^0*$/.test(from.slice(1));
  const toIsRound = /^9*$/.test(to.slice(1));
  if (!fromIsRound) {
    out.push(...sameLength(from.slice(1), '9'.repeat(rest)).map((tail) => from[0]! + tail));
    first++;
  }
  if (!toIsRound) last--;
  if (first <= last) out.push(`${first === last ? first : `[${first}-${last}]`}${any}`);
  if (!toIsRound) out.push(...sameLength('0'.repeat(rest), to.slice(1)).map((tail) => to[0]! + tail));
  return out;
}

/** A switch's words in text (the environment's, and the file's when not `true`/`false`), in either case. */
export const SWITCH_WORDS = { on: ['1', 'true', 'yes'], off: ['0', 'false', 'no'] } as const;

/** A switch written as text: one of SWITCH_WORDS in either case, white space around allowed; group 1 is set for on. */
export const SWITCH_TEXT = new RegExp(
  `^\\s*(?:(${SWITCH_WORDS.on.map(caseless).join('|')})|(?:${SWITCH_WORDS.off.map(caseless).join('|')}))\\s*$`,
);

/** A switch: JSON `true`/`false`, or a word of SWITCH_WORDS; undefined when it is neither. */
export function switchValue(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  const match = typeof value === 'string' ? SWITCH_TEXT.exec(value) : null;
  return match ? match[1] !== undefined : undefined;
}

/**
 * Names (file name patterns, paths) in one string with commas between them, as the environment
 * writes a list: every name holds something besides white space (`"a,,b"` and `"a, "` are mistakes).
 */
export const NAME_LIST_TEXT = /^\s*[^,\s][^,]*(?:,\s*[^,\s][^,]*)*$/;

/** A list of names: one string as NAME_LIST_TEXT, or a JSON array of non-blank strings; undefined when it is neither. */
export function nameList(value: unknown, opts: { minItems: number }): string[] | undefined {
  if (typeof value === 'string') return NAME_LIST_TEXT.test(value) ? value.split(',').map((name) => name.trim()) : undefined;
  if (!Array.isArray(value) || value.length < opts.minItems) return undefined;
  if (value.some((name) => typeof name !== 'string' || !NOT_BLANK.test(name))) return undefined;
  return (value as string[]).map((name) => name.trim());
}

export function nameListSchema(opts: { minItems: number }): Schema {
  return {
    anyOf: [
      { type: 'string', pattern: NAME_LIST_TEXT.source },
      { type: 'array', items: { type: 'string', pattern: NOT_BLANK.source }, minItems: opts.minItems },
    ],
  };
}

/** A text setting's own form beyond its kind (a schema's name, a marker's suffix): the pattern and how a message says it. */
export interface TextFormat {
  pattern: RegExp;
  /** completes "must be …" */
  says: string;
}
