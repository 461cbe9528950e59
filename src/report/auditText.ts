import type { AuditResult } from './audit.js';
import { printable } from './printable.js';
import { totalsText } from '../layout/reader/totalsCheck.js';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** `audit`'s answer for a person: each check, then what the transfer log showed, then the verdict. */
export function auditText(result: AuditResult): string {
  const lines: string[] = [];
  for (const c of result.checks) {
    const n = c.discrepancies.length;
    lines.push(`audit: ${c.name}: ${n === 0 ? 'ok' : plural(n, 'discrepancy', 'discrepancies')}`);
    for (const d of c.discrepancies) lines.push(`  ${printable(d.message)}`);
  }
  if (result.balanced) {
    lines.push(`audit: ${plural(result.balanced.length, 'loaded file', 'loaded files')} proved their control totals before loading:`);
    for (const balancedFile of result.balanced)
      lines.push(`  ${printable(balancedFile.file)} (run ${balancedFile.run}): ${printable(totalsText(balancedFile.totals))}`);
  }
  const transferAuditResult = result.transferLog;
  if (transferAuditResult) {
    for (const f of transferAuditResult.logs) {
      const unreadable =
        (f.unreadable === 0 ? '' : `, ${f.unreadable} UNREADABLE`) +
        (f.overLong === 0 ? '' : `, ${f.overLong} OVER-LONG`) +
        (f.stopped === null ? '' : `, STOPPED in line ${f.stopped.line}`);
      lines.push(
        `transfer log ${printable(f.file)} (${f.format}): ${plural(f.lines, 'line', 'lines')}, ${f.transferLines} of transfers, ${f.otherLines} of other things${unreadable}`,
      );
      for (const u of f.unreadableQuoted) lines.push(`  line ${u.line} could not be read: ${printable(JSON.stringify(u.text))}`);
      if (f.unreadable > f.unreadableQuoted.length) lines.push(`  and ${f.unreadable - f.unreadableQuoted.length} more`);
    }
    const counts = Object.entries(transferAuditResult.counts)
      .map(([k, n]) => `${k}=${n}`)
      .join(' ');
    lines.push(
      `transfer log: ${plural(transferAuditResult.arrivals.length, 'upload', 'uploads')} into the intakes: ${counts || 'none'}; unmatched=${transferAuditResult.unmatched}`,
    );
    for (const accountedArrival of transferAuditResult.arrivals) lines.push(`  ${printable(accountedArrival.message)}`);
    if (transferAuditResult.outsideIntakes.length > 0) {
      lines.push(`transfer log: ${plural(transferAuditResult.outsideIntakes.length, 'upload', 'uploads')} into folders no run reads:`);
      for (const s of transferAuditResult.outsideIntakes) lines.push(`  ${printable(s.message)}`);
    }
  }
  const n = result.discrepancies;
  // a verdict that did not read the kept copies says so where it is read
  const depth = result.archiveCheck === 'size' ? ' (archived and kept copies checked by size only, not SHA-256: --quick)' : '';
  lines.push(
    `audit ${n === 0 ? 'clean' : 'found problems'}: ${plural(result.checks.length, 'check', 'checks')}, ${plural(n, 'discrepancy', 'discrepancies')}${depth}`,
  );
  return `${lines.join('\n')}\n`;
}
