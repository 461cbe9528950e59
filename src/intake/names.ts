import picomatch from 'picomatch';
import { UsageError } from '../errors.js';

/** Names an uploader uses while a file is still being written: never ours to touch. */
const IN_PROGRESS = [/\.part$/i, /\.filepart$/i, /\.tmp$/i, /\.partial$/i, /^\./];

/** The same names as one pattern: one test for each name (a year's audit asks of a million). */
const ANY_IN_PROGRESS = new RegExp(IN_PROGRESS.map((re) => `(?:${re.source})`).join('|'), 'i');

export function isInProgressName(name: string): boolean {
  return ANY_IN_PROGRESS.test(name);
}

/** The name an upload under a temporary name will have once done: `.x.csv.part` → `x.csv`. */
export function finalName(name: string): string {
  let n = name;
  for (const re of IN_PROGRESS) n = n.replace(re, '');
  return n;
}

/** A name that could escape its folder; reported and never used. */
export function isUnsafeName(name: string): boolean {
  // a `..` part needs a separator around it, which is unsafe of itself
  return name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name);
}

/**
 * A shell-style pattern (`*`, `?`, `[abc]`, `[!abc]`, `{a,b}`, `\` escapes) as a whole-name
 * regular expression. As in a shell without extglob, parentheses and a leading `!` are plain
 * characters (picomatch would read them as a group and a negation), and `*` also matches a
 * leading dot (dot-files are told apart by isInProgressName, not by the pattern).
 */
export function globToRegExp(pattern: string): RegExp {
  const literalParens = pattern.replace(/(?<!\\)[()]/g, '\\$&');
  try {
    return picomatch.makeRe(literalParens, {
      dot: true,
      posix: true,
      nonegate: true,
      noextglob: true,
      literalBrackets: false,
      debug: true,
    });
  } catch (err) {
    // debug: picomatch throws on a pattern it cannot compile instead of matching nothing silently
    const why = err instanceof Error ? err.message.replace(/^Invalid regular expression: \/.*\/\w*: /, '') : String(err);
    throw new UsageError(`bad file pattern "${pattern}": ${why}`, { cause: err });
  }
}

/**
 * The date a pattern may say a name carries: `settle_{yyyyMMdd}_*.csv`. In matching, a token
 * is its digits (the pattern is still a glob); the day a file is for is read from them.
 */
export const DATE_TOKENS = [
  { token: '{yyyyMMdd}', glob: '[0-9]'.repeat(8), capture: '(\\d{4})(\\d{2})(\\d{2})' },
  { token: '{yyyy-MM-dd}', glob: '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]', capture: '(\\d{4})-(\\d{2})-(\\d{2})' },
] as const;

const PLACEHOLDER = 'QQSETTLEINGESTDAYQQ';

/** How many date tokens a pattern holds. */
export function dateTokenCount(pattern: string): number {
  return DATE_TOKENS.reduce((n, t) => n + pattern.split(t.token).length - 1, 0);
}

/** The pattern as a plain glob: each date token stands for its digits. */
export function expandDateTokens(pattern: string): string {
  return DATE_TOKENS.reduce((p, t) => p.replaceAll(t.token, t.glob), pattern);
}

/**
 * The day (`YYYY-MM-DD`) a name carries by its pattern's date token, or null when the pattern
 * has none or the digits are not a real date (`20260231`).
 */
export function dayInName(pattern: string, name: string): string | null {
  const token = DATE_TOKENS.find((t) => pattern.includes(t.token));
  if (!token) return null;
  const marked = globToRegExp(expandDateTokens(pattern.replace(token.token, PLACEHOLDER)));
  const m = new RegExp(marked.source.replace(PLACEHOLDER, token.capture), marked.flags).exec(name);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
  return date.toISOString().slice(0, 10);
}
