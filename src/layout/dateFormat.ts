/**
 * Date and timestamp patterns as partners document them (`dd/MM/yyyy`, `yyyy-MM-dd HH:mm:ss`,
 * `yyyy-MM-dd'T'HH:mm:ssXXX`): each compiles once to a regular expression with the positions
 * of its parts.
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
  /** an offset written in the value itself (`XXX`), as text */
  offset?: string;
}

type Part = keyof DateParts;

const TOKENS: [string, string, Part][] = [
  ['yyyy', '(\\d{4})', 'y'],
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
];

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
      if (parts.includes(token[2])) return { problem: `names ${token[0]} twice: "${format}"` };
      source += token[1];
      parts.push(token[2]);
      i += token[0].length;
      continue;
    }
    if (/[A-Za-z]/.test(format[i]!))
      return { problem: `has "${format[i]}", which is not one of yyyy MM M dd d HH H mm ss SSS XXX: "${format}"` };
    source += escape(format[i]!);
    i++;
  }
  const needed: Part[] = timestamp ? ['y', 'mo', 'd', 'h', 'mi'] : ['y', 'mo', 'd'];
  const missing = needed.filter((p) => !parts.includes(p));
  if (missing.length > 0) return { problem: `lacks ${missing.join(', ')}: "${format}"` };
  if (!timestamp && parts.some((p) => p !== 'y' && p !== 'mo' && p !== 'd')) return { problem: `has a time in a date column: "${format}"` };
  const re = new RegExp(`^${source}$`);
  return {
    hasOffset: parts.includes('offset'),
    parse(value) {
      const m = re.exec(value);
      if (!m) return undefined;
      const out: DateParts = { y: 0, mo: 0, d: 0, h: 0, mi: 0, s: 0, frac: '' };
      parts.forEach((p, k) => {
        if (p === 'frac' || p === 'offset') out[p] = m[k + 1]!;
        else out[p] = Number(m[k + 1]);
      });
      return out;
    },
  };
}
