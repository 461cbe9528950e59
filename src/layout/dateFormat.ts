/**
 * Date and timestamp patterns as partners document them (`dd/MM/yyyy`, `yyyy-MM-dd HH:mm:ss`,
 * `yyyy-MM-dd'T'HH:mm:ssXXX`, PayPal's `yyyy/MM/dd HH:mm:ss XX`): each compiles once to a
 * regular expression with the positions of its parts.
 *
 * `yy` is a two-digit year read as POSIX `strptime` reads `%y`: 69 to 99 are 1969 to 1999, 00
 * to 68 are 2000 to 2068 (a settlement date is never far from today; the pivot is fixed so that
 * a file reads the same whenever it is loaded). `X`, `XX` and `XXX` are an offset written in the
 * value (`-08`, `-0800`, `-08:00`, or `Z` for UTC).
 */
export interface DateParts {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  /** fractional seconds as written, without the point */
  frac: string;
  /** an offset written in the value itself (`X`, `XX`, `XXX`), as `+HH:MM` */
  offset?: string;
}

type Part = keyof DateParts | 'yy';

/** Longest first: `yyyy` before `yy`, `XXX` before `XX` before `X`. */
const TOKENS: [string, string, Part][] = [
  ['yyyy', '(\\d{4})', 'y'],
  ['yy', '(\\d{2})', 'yy'],
  ['MM', '(\\d{2})', 'mo'],
  ['M', '(\\d{1,2})', 'mo'],
  ['dd', '(\\d{2})', 'd'],
  ['d', '(\\d{1,2})', 'd'],
  ['HH', '(\\d{2})', 'h'],
  ['H', '(\\d{1,2})', 'h'],
  ['mm', '(\\d{2})', 'mi'],
  ['ss', '(\\d{2})', 's'],
  ['SSS', '(\\d{1,6})', 'frac'],
  ['XXX', '(Z|[+-]\\d{2}:\\d{2})', 'offset'],
  ['XX', '(Z|[+-]\\d{4})', 'offset'],
  ['X', '(Z|[+-]\\d{2}(?:\\d{2})?)', 'offset'],
];

/** The first year `yy` reads in the 1900s (POSIX): 69 is 1969, 68 is 2068. */
export const TWO_DIGIT_YEAR_PIVOT = 69;

/** `Z`, `-08`, `-0800` or `-08:00` as `+HH:MM`; undefined when the minutes are no minutes. */
function offsetParts(text: string): string | undefined {
  if (text === 'Z') return '+00:00';
  const digits = text.slice(1).replace(':', '');
  const hours = digits.slice(0, 2);
  const minutes = digits.length > 2 ? digits.slice(2) : '00';
  return Number(minutes) < 60 ? `${text[0]}${hours}:${minutes}` : undefined;
}

export interface CompiledFormat {
  problem?: string;
  parse?: (value: string) => DateParts | undefined;
  /** the value carries its own offset: no zone needed */
  hasOffset?: boolean;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compileDateFormat(format: string, timestamp: boolean): CompiledFormat {
  let source = '';
  const parts: Part[] = [];
  for (let i = 0; i < format.length;) {
    if (format[i] === "'") {
      const end = format.indexOf("'", i + 1);
      if (end === -1) return { problem: `has an unclosed quote: "${format}"` };
      source += escape(format.slice(i + 1, end));
      i = end + 1;
      continue;
    }
    const token = TOKENS.find(([t]) => format.startsWith(t, i));
    if (token) {
      const year = token[2] === 'y' || token[2] === 'yy';
      if (parts.includes(token[2]) || (year && parts.some((p) => p === 'y' || p === 'yy')))
        return { problem: `names ${token[0]} twice: "${format}"` };
      source += token[1];
      parts.push(token[2]);
      i += token[0].length;
      continue;
    }
    if (/[A-Za-z]/.test(format[i]!))
      return { problem: `has "${format[i]}", which is not one of yyyy yy MM M dd d HH H mm ss SSS X XX XXX: "${format}"` };
    source += escape(format[i]!);
    i++;
  }
  const needed: Part[] = timestamp ? ['y', 'mo', 'd', 'h', 'mi'] : ['y', 'mo', 'd'];
  const missing = needed.filter((p) => !parts.includes(p) && !(p === 'y' && parts.includes('yy')));
  if (missing.length > 0) return { problem: `lacks ${missing.join(', ')}: "${format}"` };
  if (!timestamp && parts.some((p) => p !== 'y' && p !== 'yy' && p !== 'mo' && p !== 'd'))
    return { problem: `has a time in a date column: "${format}"` };
  const re = new RegExp(`^${source}$`);
  return {
    hasOffset: parts.includes('offset'),
    parse(value) {
      const m = re.exec(value);
      if (!m) return undefined;
      const out: DateParts = { y: 0, mo: 0, d: 0, h: 0, mi: 0, s: 0, frac: '' };
      for (let k = 0; k < parts.length; k++) {
        const p = parts[k]!;
        const text = m[k + 1]!;
        if (p === 'frac') out.frac = text;
        else if (p === 'offset') {
          const offset = offsetParts(text);
          if (offset === undefined) return undefined;
          out.offset = offset;
        } else if (p === 'yy') {
          const yy = Number(text);
          out.y = yy >= TWO_DIGIT_YEAR_PIVOT ? 1900 + yy : 2000 + yy;
        } else out[p] = Number(text);
      }
      return out;
    },
  };
}
