import { printable } from './printable.js';

/**
 * A plain, left-aligned text table for terminals and mail: no colours, no box drawing. Cells
 * are made printable here, before widths are measured, so every report gets it and stays aligned.
 */
export function textTable(header: string[], rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map((c) => printable(String(c))));
  // a fold, not Math.max(...list): a report of 200,000 rows is more arguments than a call takes
  const widths = header.map((title, i) => cells.reduce((width, r) => Math.max(width, (r[i] ?? '').length), title.length));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  // the lines gathered in one list, header first, without copying the rows' (`config` of 20,000 partners prints 660,000)
  const lines = [line(header)];
  for (const r of cells) lines.push(line(r));
  return lines.join('\n');
}
