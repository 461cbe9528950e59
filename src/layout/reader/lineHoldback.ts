/** A line of spaces and tabs only, or nothing: not counted among a footer's lines. */
const BLANK = /^[ \t]*$/;
/** A line end as the record reader reads them: CRLF, LF or CR. */
const LINE_END = /\r\n|\n|\r/;

/**
 * The look-ahead of a layout's `"footer": {"lines": N}`: the last N lines of a text that are not
 * blank are held back as the text streams past, so that what may be the file's footer never
 * reaches the record reader until the file has ended and shown which lines are its last. Each
 * piece of text `push`ed returns the text that now surely comes before them (whole lines, ending
 * at a line start); `end` splits what is left into the rest of the rows and the footer.
 *
 * Memory is the N lines held and the line in progress. A line in progress longer than
 * `maxLineUnits` (a record's size limit: one UTF-16 unit is at least one byte) is no footer line
 * anyone writes: everything held goes on at once, and the record reader refuses the record it is
 * part of as it would without a footer.
 */
export class LineHoldback {
  /** the text not handed on yet: from the start of the earliest line that may be the footer's */
  private held = '';

  constructor(
    private readonly count: number,
    private readonly maxLineUnits: number,
  ) {}

  /** More text: returns the text before the lines that may yet be the footer (possibly ''). */
  push(text: string): string {
    const held = this.held + text;
    const last = lastBreakBefore(held, held.length);
    if (held.length - (last?.end ?? 0) > this.maxLineUnits) {
      this.held = '';
      return held;
    }
    // the line in progress after the last line end is not whole yet: it is held, and not counted
    const cut = last ? this.footerStart(held, last.start) : 0;
    this.held = held.slice(cut);
    return held.slice(0, cut);
  }

  /**
   * The end of the text (`text`, the last of it, may be ''): the rows' last lines, and the footer:
   * the last N lines that are not blank, with the blank ones among and after them.
   */
  end(text: string): { rows: string; footer: string } {
    const held = this.held + text;
    this.held = '';
    const cut = this.footerStart(held, held.length);
    return { rows: held.slice(0, cut), footer: held.slice(cut) };
  }

  /** Everything held, handed on as it is: the text stops at bytes that cannot be read, which the record reader names where they are. */
  flush(): string {
    const held = this.held;
    this.held = '';
    return held;
  }

  /**
   * Where the N-th last line that is not blank starts, looking back from the line that ends at
   * `lineEnd`, one line at a time (only the lines held are looked at); 0 when there are fewer.
   */
  private footerStart(held: string, lineEnd: number): number {
    let found = 0;
    for (let end = lineEnd; ;) {
      const before = lastBreakBefore(held, end);
      const start = before?.end ?? 0;
      if (!BLANK.test(held.slice(start, end)) && ++found === this.count) return start;
      if (!before) return 0;
      end = before.start;
    }
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The last line end in `text` before `before`: where it starts and ends. A CRLF is one (found
 * from its LF); a CR last in a text that goes on may be the first half of one, and ends the line
 * before it either way.
 */
function lastBreakBefore(text: string, before: number): { start: number; end: number } | undefined {
  if (before <= 0) return undefined;
  const at = Math.max(text.lastIndexOf('\n', before - 1), text.lastIndexOf('\r', before - 1));
  if (at < 0) return undefined;
  if (text.charCodeAt(at) === LF && at > 0 && text.charCodeAt(at - 1) === CR) return { start: at - 1, end: at + 1 };
  return { start: at, end: at + 1 };
}

/** The lines of a text, the last one ended by the text's end. */
function linesOf(text: string): string[] {
  const lines = text.split(LINE_END);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The lines of a footer's text, numbered from `firstLine`, blank ones left out (they are counted, as everywhere). */
export function footerLines(text: string, firstLine: number): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  linesOf(text).forEach((lineText, i) => {
    if (!BLANK.test(lineText)) out.push({ text: lineText, line: firstLine + i });
  });
  return out;
}
