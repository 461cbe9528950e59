/**
 * Characters a reader cannot see, or cannot tell from a plain space: controls (Cc), format
 * characters (Cf: zero-width space and joiners, BOM, bidi marks), line and paragraph
 * separators, every space separator but U+0020 (NBSP, thin and ideographic spaces…),
 * Unicode's default-ignorable set (word joiner, Hangul fillers, variation selectors…) and
 * the blank braille pattern, which renders as a space without being one.
 */
export const HIDDEN_CHARACTER = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]|[^\P{Zs} ]/u;

const TO_ESCAPE = new RegExp(`["\\\\]|${HIDDEN_CHARACTER.source}`, 'u');

/** How many characters of a value a message shows: enough to recognise it, never a whole line. */
export const QUOTED_CHARACTERS = 80;

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `U+200B`: how messages name a single character. */
export function codePoint(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

function shown(ch: string): string {
  if (!TO_ESCAPE.test(ch)) return ch;
  const short = SHORT_ESCAPES[ch];
  if (short) return short;
  const hex = ch.codePointAt(0)!.toString(16).padStart(4, '0');
  return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex}`;
}

/**
 * A value from a file as every message, ledger reason and log line quotes it: in double
 * quotes, invisible characters written as escapes (so "T-1" and "T-1\u200b" read differently),
 * cut after 80 shown characters with "…". Only the start of the value is looked at, so a
 * value of any length costs the same.
 */
export function quoteValue(value: string): string {
  let out = '';
  for (const ch of value) {
    const piece = shown(ch);
    if (out.length + piece.length > QUOTED_CHARACTERS) return `"${out}…"`;
    out += piece;
  }
  return `"${out}"`;
}
