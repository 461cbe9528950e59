import { UsageError } from '../../errors.js';
import { intakeFolders, type IntakeSettings } from '../../intake/openIntake.js';
import { globToRegExp } from '../../intake/names.js';
import type { Ledger } from '../../ledger/ledger.js';
import { accountArrivals, strayLine, type AccountedArrival, type IntakeNow } from './accountArrivals.js';
import { arrivalsOf, type IntakeView } from './arrivals.js';
import { expandLogFiles, readTransferLogs } from './logFiles.js';
import { logZone } from './logTimes.js';
import type { LogFileReport } from './transferEvents.js';

export interface TransferAuditResult {
  /** each log file read: its format, its lines, and those it could not read */
  logs: (Omit<LogFileReport, 'firstAt' | 'lastAt'> & { firstAt: string | null; lastAt: string | null })[];
  /** every upload into an intake, with what the ledger did with it */
  arrivals: AccountedArrival[];
  /** uploads into folders no partner's run reads */
  outsideIntakes: { path: string; at: string; size: number; user: string | null; message: string }[];
  /** per outcome (and per reason an arrival has no record) */
  counts: Record<string, number>;
  unmatched: number;
  unreadableTotal: number;
}

/** What the transfer log audit needs of a partner's settings. */
export interface TransferLogPartner extends IntakeSettings {
  partner: string;
  pattern: string;
  ignore: string[];
  readyMarker: string | undefined;
  transferLog: { files: string[]; root: string; timeZone: string | undefined; clockSlackSeconds: number };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The transfer log audit: the partners' logs (each partner's own `transferLog`, read once when
 * several share one) made into arrivals in each partner's intake, and each arrival matched to
 * what the ledger did with it; `intakeNow` lists a partner's intake as it is now, for the uploads
 * the ledger left waiting there. Null when no partner names a transfer log.
 */
export async function transferAudit(
  ledger: Ledger,
  partners: TransferLogPartner[],
  intakeNow: (partner: string) => Promise<IntakeNow>,
): Promise<TransferAuditResult | null> {
  const withLogs = partners.filter((p) => p.transferLog.files.length > 0);
  if (withLogs.length === 0) return null;
  // partners reading the same files (and zone) share one reading of them
  const groups = new Map<string, { files: string[]; zone: string | undefined; slackMs: number; partners: TransferLogPartner[] }>();
  for (const p of withLogs) {
    if (!p.intake) throw new UsageError(`${p.partner}: a transfer log is matched to an intake: set --intake (or "intake") too`);
    const files = await expandLogFiles(p.transferLog.files);
    const slackMs = p.transferLog.clockSlackSeconds * 1000;
    const k = JSON.stringify([files, p.transferLog.timeZone ?? null, slackMs]);
    const group = groups.get(k) ?? { files, zone: p.transferLog.timeZone, slackMs, partners: [] };
    group.partners.push(p);
    groups.set(k, group);
  }
  const result: TransferAuditResult = { logs: [], arrivals: [], outsideIntakes: [], counts: {}, unmatched: 0, unreadableTotal: 0 };
  for (const group of groups.values()) {
    const logs = await readTransferLogs(group.files, logZone(group.zone).zone);
    const intakes: IntakeView[] = group.partners.map((p) => ({
      partner: p.partner,
      folder: intakeFolders(p).intake,
      root: p.transferLog.root,
      pattern: globToRegExp(p.pattern),
      ignore: p.ignore.map(globToRegExp),
      readyMarker: p.readyMarker,
    }));
    const { arrivals, strays } = arrivalsOf(logs.events, intakes);
    for (const a of await accountArrivals(ledger, arrivals, { clockSlackMs: group.slackMs, intakeNow })) result.arrivals.push(a);
    // one push per item: a spread of a million arguments overflows the stack
    for (const stray of strays) {
      const { upload } = stray;
      result.outsideIntakes.push({
        path: stray.path,
        at: iso(upload.at)!,
        size: upload.size,
        user: upload.user,
        message: strayLine(stray),
      });
    }
    for (const f of logs.files) result.logs.push({ ...f, firstAt: iso(f.firstAt), lastAt: iso(f.lastAt) });
  }
  for (const a of result.arrivals) {
    const k = a.outcome ?? a.noRecord!;
    result.counts[k] = (result.counts[k] ?? 0) + 1;
  }
  result.unmatched = result.arrivals.filter((a) => a.unmatched).length;
  result.unreadableTotal = result.logs.reduce((n, f) => n + f.unreadable, 0);
  return result;
}
