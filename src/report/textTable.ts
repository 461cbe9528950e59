import { printable } from './printable.js';

/**
 * A plain, left-aligned text table for terminals and mail: no colours, no box drawing. Cells
 * are made printable here, before widths are measured, so every report gets it and stays aligned.
 */
export function textTable(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => printable(String(c))))];
  // a fold, not Math.max(...list): a report of 200,000 rows is more arguments than a call takes
  const widths = header.map((_, i) => cells.reduce((width, r) => Math.max(width, (r[i] ?? '').length), 0));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}
