import { namedWidth, type CsvRecord } from '../reader/csvRecords.js';
import { quoteValue } from '../values/quoteValue.js';
import type { Draft } from './draftLayout.js';

/** The lines a sample ends with that are no rows: where they start, and the pattern that finds their first line. */
export interface FooterGuess {
  /** the file's line the footer starts on, when the sample is the whole file */
  firstLine?: number;
  lines: string[];
  /** `footer.startsAt`: the first line's opening, as a pattern */
  startsAt: string;
  /** a footer line stating the number of rows, when one does: its capture's pattern and the figure */
  count?: { pattern: string; stated: number; line: string };
}

/** The capture a draft names the footer's count by, and the figure's name in its statement total. */
export const STATED_ROWS = 'stated_rows';

/** A line that opens with a mark no row opens with: `#`, or a run of `-`, `=`, `*`. */
const MARKED = /^\s*(?:#|[-=*~]{3,})/;
/** Counts of rows as statements state them: `共13笔记录`, `13 records`, `Transactions: 13`, `Anzahl Buchungen: 13`. */
const COUNTS = [
  /共\s*(\d+)\s*[笔條条]/u,
  /(\d+)\s*笔记录/u,
  /\b(\d+)\s+(?:records?|transactions?|rows?|entries|items|operations?|Buchungen|Umsätze|opérations|movimientos|transacciones)\b/iu,
  /\b(?:records?|transactions?|rows?|entries|count|number of (?:records|transactions|rows|entries)|Anzahl(?: der)? (?:Buchungen|Umsätze)|nombre d'opérations)\s*[:=]?\s*(\d+)\b/iu,
];

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * A line's text as a pattern a person can read and the next month's file still matches: special
 * characters escaped, a run of three or more of one mark as `-+`, digits (with their marks) as
 * `\d+` or `[\d.,]+`; at most 40 characters of the line.
 */
function generalised(text: string): string {
  let out = '';
  const runs = /([^\p{L}\p{N}\s])\1{2,}|\d+(?:[.,]\d+)*|./gsu;
  let taken = 0;
  for (let m = runs.exec(text); m !== null && taken < 40; m = runs.exec(text)) {
    const piece = m[0];
    // a run of one mark reads as one
    taken += m[1] !== undefined ? 1 : piece.length;
    if (m[1] !== undefined) out += `${escaped(m[1])}+`;
    else if (/^\d/.test(piece)) out += /[.,]/.test(piece) ? '[\\d.,]+' : '\\d+';
    else out += escaped(piece);
  }
  return out;
}

/**
 * The lines after a sample's rows that are no rows, as a person sees them: the lines the file
 * ends with (blank ones aside) that open with a mark no row opens with (`#`, `-----`), or that
 * have a third of the header's fields or fewer (`共13笔记录` alone on its line), from the last back to the
 * last row. Their first line's opening is the pattern that finds it (`footer.startsAt`); it must
 * match no row above it. A footer line that states a number of rows equal to the rows the sample
 * read is proposed as the statement's count (`captures` `at` the footer, a `statement` total),
 * which `check` then proves over the whole file. Undefined when the file ends with a row.
 */
export function guessFooter(
  text: string,
  delimiter: string,
  records: readonly CsvRecord[],
  draft: Draft,
  /** `text` is the whole file; otherwise its end (its first line may be cut), the rows' count unknown */
  whole: boolean,
): FooterGuess | undefined {
  const layout = draft.layout;
  if (layout.header === false || layout.recordTypes !== undefined) return undefined;
  const headerLine = ((layout.skipLines as number | undefined) ?? 0) + 1;
  const header = records.find((r) => r.line >= headerLine);
  if (!header) return undefined;
  const width = namedWidth(header.fields);
  const lines = text.split(/\r\n|\n|\r/);
  // the end of a file: its first line may start mid-line, and no line of it is the header
  if (!whole) lines[0] = '';
  const top = whole ? header.line : 1;
  // by its fields, empty ones too: a sparse row (Adyen's fee lines) keeps its delimiters, free text has few
  const narrow = (line: string) => line.split(delimiter).length <= Math.max(1, Math.floor(width / 3));
  let first = lines.length;
  for (let i = lines.length - 1; i >= top; i--) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    if (!MARKED.test(line) && !(width >= 4 && narrow(line))) break;
    first = i;
  }
  if (first >= lines.length) return undefined;
  const footerLines = lines.slice(first).filter((l) => l.trim() !== '');
  const opening = footerLines[0]!.split(delimiter)[0]!.trim();
  const startsAt = `^${generalised(opening)}`;
  const pattern = new RegExp(startsAt, 'u');
  const rows = lines.slice(top, first);
  // a pattern that a row above also matches would end the rows there
  if (!pattern.test(footerLines[0]!) || rows.some((row) => pattern.test(row))) return undefined;
  const guess: FooterGuess = { ...(whole ? { firstLine: first + 1 } : {}), lines: footerLines, startsAt };
  // the rows the sample read, when it is the whole file: a stated count must be theirs (else the whole file's check decides)
  const sampled = whole ? records.filter((r) => r.line > header.line && r.line <= first).length : undefined;
  for (const line of footerLines) {
    for (const count of COUNTS) {
      const stated = count.exec(line);
      if (!stated || (sampled !== undefined && Number(stated[1]) !== sampled)) continue;
      const at = stated.index + stated[0].indexOf(stated[1]!);
      // the word after the figure (`笔记录`, ` transactions`): enough to tell the line
      const after = /^(?:\s?[^\d\s,;|\t]{1,12})?/u.exec(line.slice(at + stated[1]!.length))![0];
      guess.count = { pattern: `^${generalised(line.slice(0, at))}(\\d+)${escaped(after)}`, stated: Number(stated[1]), line };
      return guess;
    }
  }
  return guess;
}

/** A draft given the footer guessed: declared, said, its count proposed as a control total. */
export function addFooter(draft: Draft, guess: FooterGuess): void {
  const { layout } = draft;
  layout.footer = { startsAt: guess.startsAt };
  const many = guess.lines.length === 1 ? 'the line' : `the ${guess.lines.length} lines`;
  draft.notes.push(
    `${many} after the rows${guess.firstLine !== undefined ? `, from line ${guess.firstLine}` : ''} (${quoteValue(guess.lines[0]!)}), are a footer: set aside, never rows ("footer": {"startsAt": ${JSON.stringify(guess.startsAt)}}); a file without that line is incomplete`,
  );
  if (!guess.count) return;
  layout.captures = {
    ...(layout.captures ?? {}),
    [STATED_ROWS]: { line: guess.count.pattern, at: 'footer' },
  };
  layout.totals = [...((layout.totals as unknown[] | undefined) ?? []), { statement: { count: STATED_ROWS } }];
  draft.notes.push(
    `its line ${quoteValue(guess.count.line)} states the number of rows, ${guess.count.stated}: captured and checked as the statement's count ("captures" ${STATED_ROWS}, "totals")`,
  );
}

/** A draft's footer count that the whole file refused (it counts something else): taken out, said among the doubts. */
export function dropFooterCount(draft: Draft, why: string): boolean {
  const { layout } = draft;
  const captures = layout.captures as Record<string, unknown> | undefined;
  if (!captures?.[STATED_ROWS]) return false;
  delete captures[STATED_ROWS];
  if (Object.keys(captures).length === 0) delete layout.captures;
  const totals = (layout.totals as { statement?: { count?: string } }[]).filter((t) => t.statement?.count !== STATED_ROWS);
  if (totals.length > 0) layout.totals = totals;
  else delete layout.totals;
  draft.notes = draft.notes.filter((n) => !n.includes(`"captures" ${STATED_ROWS}`));
  draft.unsure.push(`the footer's count: ${why.slice(0, 200)}; not checked as the number of rows: see what it counts`);
  return true;
}
