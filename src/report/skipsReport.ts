import type { Ledger } from '../ledger/ledger.js';
import { isoWeek } from './isoWeek.js';
import { textTable } from './textTable.js';

export interface WeekOfSkips {
  week: string;
  skipped: number;
  held: number;
  files: { name: string; outcome: 'skipped' | 'held'; run: string | null; sameAs?: string; originalRun?: string }[];
}

/** `report skips`: skips and holds per ISO week over the last `weeks` weeks, newest first. */
export async function skipsByWeek(ledger: Ledger, weeks: number, now = new Date()): Promise<WeekOfSkips[]> {
  const since = new Date(now.getTime() - weeks * 7 * 86_400_000).toISOString();
  const byWeek = new Map<string, WeekOfSkips>();
  for (const e of await ledger.eventsSince(['skipped', 'held'], since)) {
    const week = isoWeek(new Date(e.at));
    const w = byWeek.get(week) ?? { week, skipped: 0, held: 0, files: [] };
    const outcome = e.event as 'skipped' | 'held';
    w[outcome]++;
    const d = e.details as { duplicateOf?: { name: string; run: string }; heldFor?: { name: string; run: string } };
    const other = d.duplicateOf ?? d.heldFor;
    w.files.push({ name: e.name, outcome, run: e.runId, ...(other ? { sameAs: other.name, originalRun: other.run } : {}) });
    byWeek.set(week, w);
  }
  return [...byWeek.values()].sort((a, b) => b.week.localeCompare(a.week));
}

export function formatSkips(weeks: WeekOfSkips[], span: number): string {
  if (weeks.length === 0) return `no skips or holds in the last ${span} weeks`;
  const rows: (string | number)[][] = [];
  for (const w of weeks) {
    w.files.forEach((f, i) => {
      const why = f.sameAs ? `${f.outcome === 'skipped' ? 'same bytes as' : 'twin of'} ${f.sameAs} (run ${f.originalRun})` : '';
      rows.push([i === 0 ? w.week : '', i === 0 ? w.skipped : '', i === 0 ? w.held : '', f.outcome, f.name, why]);
    });
  }
  return textTable(['week', 'skipped', 'held', 'outcome', 'file', 'why'], rows);
}
