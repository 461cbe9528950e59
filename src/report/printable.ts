/**
 * Text from the outside world (file names, reasons, database messages) is shown to people on
 * terminals and in mail. Control and format characters in it are spelled out as escapes, so
 * that a name cannot recolour the screen, move the cursor, ring the bell, rewrite the line it
 * is on (CR), hide itself (zero-width) or reverse what follows it (bidi overrides).
 *
 * Backslashes are left alone: a person reads the result, `--json` is the exact form.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/gu;
/** Every character that may be unprinted: a control of C0, and anything past ASCII (a plain test, no Unicode classes: fast). */
const MAYBE_UNPRINTABLE = /[\u0000-\u001f\u007f-\uffff]/;
const SHORT: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

function escapeChar(ch: string): string {
  const short = SHORT[ch];
  if (short !== undefined) return short;
  const cp = ch.codePointAt(0)!;
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\u{${hex(cp, 1)}}`;
}

/** `settle_\x1b[31m.csv` for a name holding ESC: safe to write to a terminal, still readable. */
export function printable(text: string): string {
  // printable ASCII (nearly every line) needs no look at each character's Unicode class
  if (!MAYBE_UNPRINTABLE.test(text)) return text;
  return text.replace(UNPRINTABLE, escapeChar);
}

// JSON.stringify escapes C0 controls and lone surrogates itself, but writes DEL, C1 controls,
// format characters and the line/paragraph separators raw.
const RAW_IN_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu;
const BEYOND_ASCII = /[\u007f-\uffff]/;

/**
 * `--json` output: exact JSON (parsing it gives back every string unchanged), with the
 * characters JSON.stringify leaves raw written as `\u` escapes, so that the bytes are as
 * safe on a terminal as the text output.
 */
export function printableJson(value: unknown): string {
  return printableJsonText(JSON.stringify(value));
}

/** JSON text as JSON.stringify wrote it, made printable as printableJson makes it. */
export function printableJsonText(json: string): string {
  // JSON of ASCII alone (nearly every document) has nothing to escape
  if (!BEYOND_ASCII.test(json)) return json;
  return json.replace(RAW_IN_JSON, (ch) => {
    let out = '';
    for (let i = 0; i < ch.length; i++) out += `\\u${hex(ch.charCodeAt(i), 4)}`;
    return out;
  });
}
