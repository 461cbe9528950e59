const MASK = '***';

/**
 * `scheme://user:password@host`. The password runs to the `@` before the host, the way URL
 * parsers split it (the last `@` of the word), so an unescaped `@` or `/` in a password is
 * hidden too; and past white space, so a password holding a space (an unparsable URL, quoted
 * whole in its error) is hidden too. When in doubt this hides more than the password, never less.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/?#]*):(?:(?!:\/\/)[^\n])*?@(?=[^\s@]+(?:\s|$))/gi;

/**
 * `password=…`, `sslpassword=…` (and `PGPASSWORD=…`), in a URL's query string or a libpq
 * `key=value` connection string, where a value with spaces is single-quoted with backslash escapes.
 */
const KEY_PASSWORD = /\b([a-z_]*password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&#]*)/gi;

/**
 * A text (a database URL, an error message, a log line) without the passwords it may carry.
 * The one rule for everything this tool prints or stores.
 */
export function redactSecrets(text: string): string {
  return text.replace(URL_PASSWORD, `$1:${MASK}@`).replace(KEY_PASSWORD, `$1${MASK}`);
}

/** Every string inside a value (a log line's fields, an event's details) redacted; the shape stays. */
export function redactValues<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (Array.isArray(value)) return value.map(redactValues) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValues(v)])) as T;
  }
  return value;
}
