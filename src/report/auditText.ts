import type { AuditResult } from './audit.js';
import type { AccountedArrival } from './arrivalAudit/accountArrivals.js';
import { pieceText, type AnswerPiece } from './arrivalAudit/accountedList.js';
import { printable } from './printable.js';
import { totalsText } from '../layout/reader/totalsCheck.js';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** How the text output lists an upload the transfer log audit accounted (`AccountedList`'s `text` form): the unmatched ones are named under their check instead. */
export const accountedArrivalLine = (arrival: AccountedArrival): string | null =>
  arrival.unmatched ? null : `  ${printable(arrival.message)}`;

/** `audit`'s answer for a person, whole (an evidence pack's `audit.txt`). */
export function auditText(result: AuditResult): string {
  let text = '';
  for (const piece of auditLines(result)) text += `${pieceText(piece)}\n`;
  return text;
}

/**
 * `audit`'s answer for a person, a line at a time: each check, then what the transfer log showed
 * (its accounted uploads read back from where they were written as they were accounted, several
 * lines to a piece, as bytes), then the verdict, always last: output cut short anywhere before it
 * never reads as clean. Each piece is followed by a line break.
 */
export function* auditLines(result: AuditResult): Generator<AnswerPiece> {
  const lines: string[] = [];
  for (const check of result.checks) {
    const count = check.discrepancies.length;
    lines.push(`audit: ${check.name}: ${count === 0 ? 'ok' : plural(count, 'discrepancy', 'discrepancies')}`);
    for (const discrepancy of check.discrepancies) lines.push(`  ${printable(discrepancy.message)}`);
  }
  if (result.balanced) {
    lines.push(`audit: ${plural(result.balanced.length, 'loaded file', 'loaded files')} proved their control totals before loading:`);
    for (const balancedFile of result.balanced)
      lines.push(`  ${printable(balancedFile.file)} (run ${balancedFile.run}): ${printable(totalsText(balancedFile.totals))}`);
  }
  const transferAuditResult = result.transferLog;
  if (transferAuditResult) {
    for (const log of transferAuditResult.logs) {
      const unreadable =
        (log.unreadable === 0 ? '' : `, ${log.unreadable} UNREADABLE`) +
        (log.overLong === 0 ? '' : `, ${log.overLong} OVER-LONG`) +
        (log.stopped === null ? '' : `, STOPPED in line ${log.stopped.line}`);
      lines.push(
        `transfer log ${printable(log.file)} (${log.format}): ${plural(log.lines, 'line', 'lines')}, ${log.transferLines} of transfers, ${log.otherLines} of other things${unreadable}`,
      );
      for (const unreadableLine of log.unreadableQuoted)
        lines.push(`  line ${unreadableLine.line} could not be read: ${printable(JSON.stringify(unreadableLine.text))}`);
      if (log.unreadable > log.unreadableQuoted.length) lines.push(`  and ${log.unreadable - log.unreadableQuoted.length} more`);
    }
    const counts = Object.entries(transferAuditResult.counts)
      .map(([k, n]) => `${k}=${n}`)
      .join(' ');
    // the unmatched uploads, and those of no one partner, are discrepancies named once, under their check above
    const named = transferAuditResult.unmatched > 0 ? ' (named above)' : '';
    lines.push(
      `transfer log: ${plural(transferAuditResult.arrivals.count, 'upload', 'uploads')} into the intakes: ${counts || 'none'}; unmatched=${transferAuditResult.unmatched}${named}`,
    );
    yield* lines.splice(0);
    yield* transferAuditResult.arrivals.joined('text', '\n');
    if (transferAuditResult.ambiguous.length > 0) {
      lines.push(`transfer log: ${plural(transferAuditResult.ambiguous.length, 'upload', 'uploads')} of no one partner (named above)`);
    }
    if (transferAuditResult.outsideIntakes.length > 0) {
      lines.push(`transfer log: ${plural(transferAuditResult.outsideIntakes.length, 'upload', 'uploads')} into folders no run reads:`);
      for (const upload of transferAuditResult.outsideIntakes) lines.push(`  ${printable(upload.message)}`);
    }
  }
  const totalDiscrepancies = result.discrepancies;
  // a verdict that did not read the kept copies says so where it is read
  const depth = result.archiveCheck === 'size' ? ' (archived and kept copies checked by size only, not SHA-256: --quick)' : '';
  lines.push(
    `audit ${totalDiscrepancies === 0 ? 'clean' : 'found problems'}: ${plural(result.checks.length, 'check', 'checks')}, ${plural(totalDiscrepancies, 'discrepancy', 'discrepancies')}${depth}`,
  );
  yield* lines;
}
