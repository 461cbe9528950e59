import { createRequire } from 'node:module';
import { UsageError } from '../errors.js';

/** Names an uploader uses while a file is still being written: never ours to touch. */
const IN_PROGRESS = [/\.part$/i, /\.filepart$/i, /\.tmp$/i, /\.partial$/i, /^\./];

export function isInProgressName(name: string): boolean {
  return IN_PROGRESS.some((re) => re.test(name));
}

/** The name an upload under a temporary name will have once done: `.x.csv.part` → `x.csv`. */
export function finalName(name: string): string {
  let n = name;
  for (const re of IN_PROGRESS) n = n.replace(re, '');
  return n;
}

/** A name that could escape its folder; reported and never used. */
export function isUnsafeName(name: string): boolean {
  return name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name) || name.split(/[/\\]/).includes('..');
}

interface Picomatch {
  makeRe(pattern: string, options: Record<string, boolean>): RegExp;
}
// picomatch is CommonJS and ships no types: the one function used here, typed here
const picomatch = createRequire(import.meta.url)('picomatch') as Picomatch;

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
