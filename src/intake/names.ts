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

/** A shell-style pattern (`*`, `?`, `[abc]`) as a whole-name regular expression. */
export function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) re += '\\[';
      else {
        const body = pattern
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
