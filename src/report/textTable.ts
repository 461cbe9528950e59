import { printable } from './printable.js';

/**
 * A plain, left-aligned text table for terminals and mail: no colours, no box drawing. Cells
 * are made printable here, before widths are measured, so every report gets it and stays aligned.
 */
export function textTable(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => printable(String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}
