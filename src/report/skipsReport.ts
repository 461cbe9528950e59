import type { LedgerQueries } from '../ledger/ledger.js';
import { COUNT_KEY, type LedgerEvent } from '../ledger/types.js';
import { nowMs } from '../clock.js';
import { sameAsWords } from '../ledger/ledgerEvents.js';
import { ofPartner } from './history.js';
import { manyPartners } from './runsReport.js';
import { isoWeek } from './isoWeek.js';
import { textTable } from './textTable.js';

/** What the weekly review counts; ops/weekly-skips.sql counts the same kinds per the same ISO weeks. */
const REVIEWED = ['skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored'] as const;
type Reviewed = (typeof REVIEWED)[number];
/** Outcomes listed file by file in their own sections, not among the skips. */
type Listed = 'rejected' | 'failed' | 'not_ready' | 'ignored';

export interface WeekOfSkips {
  week: string;
  skipped: number;
  held: number;
  rejected: number;
  failed: number;
  notReady: number;
  ignored: number;
  files: {
    partner: string;
    name: string;
    outcome: 'skipped' | 'held';
    run: string | null;
    /** the delivered bytes' hash, and the content's inside them (the same for a plain file) */
    sha256: string | null;
    contentSha256: string | null;
    sameAs?: string;
    originalRun?: string;
    /** the partner whose file it duplicated (content identity is the ledger's, not a partner's) */
    originalPartner?: string;
    /** how it matches `sameAs`: the same delivered bytes, the same content in other bytes, or a held twin */
    why?: 'same bytes as' | 'same content as' | 'twin of';
  }[];
}

/** A file that was rejected, failed, not ready or ignored in the period, however many times. */
export interface ListedFile {
  partner: string;
  name: string;
  sha256: string | null;
  times: number;
  firstAt: string;
  lastAt: string;
  lastRun: string | null;
  /** the latest reason given */
  reason: string | null;
}

export interface SkipsReport {
  weeksBack: number;
  /** newest first */
  weeks: WeekOfSkips[];
  rejected: ListedFile[];
  failed: ListedFile[];
  notReady: ListedFile[];
  ignored: ListedFile[];
}

/** A week counts each reviewed outcome under the same name as a run does. */
const weekKey = (e: Reviewed) => COUNT_KEY[e] as Exclude<keyof WeekOfSkips, 'week' | 'files'>;

function listFiles(events: LedgerEvent[]): ListedFile[] {
  const byFile = new Map<string, ListedFile>();
  for (const ledgerEvent of events) {
    const key = `${ledgerEvent.partner}\0${ledgerEvent.name}\0${ledgerEvent.sha256 ?? ''}`;
    const listedFile = byFile.get(key) ?? {
      partner: ledgerEvent.partner,
      name: ledgerEvent.name,
      sha256: ledgerEvent.sha256,
      times: 0,
      firstAt: ledgerEvent.at,
      lastAt: ledgerEvent.at,
      lastRun: null,
      reason: null,
    };
    listedFile.times++;
    listedFile.lastAt = ledgerEvent.at;
    listedFile.lastRun = ledgerEvent.runId;
    listedFile.reason = typeof ledgerEvent.details.reason === 'string' ? ledgerEvent.details.reason : listedFile.reason;
    byFile.set(key, listedFile);
  }
  return [...byFile.values()].sort((a, b) => b.lastAt.localeCompare(a.lastAt));
}

/**
 * `report skips`: the weekly review over the last `weeks` weeks. Per ISO week, newest first,
 * every count and each skip and hold with the file it duplicated; then rejected, failed,
 * not-ready and ignored files, each once, in their own sections.
 */
export async function skipsByWeek(
  ledger: LedgerQueries,
  weeks: number,
  partners?: string[],
  now = new Date(nowMs()),
): Promise<SkipsReport> {
  const since = new Date(now.getTime() - weeks * 7 * 86_400_000).toISOString();
  const events = await ledger.eventsSince([...REVIEWED], since, partners);
  const byWeek = new Map<string, WeekOfSkips>();
  for (const ledgerEvent of events) {
    const week = isoWeek(new Date(ledgerEvent.at));
    const weekOfSkips = byWeek.get(week) ?? { week, skipped: 0, held: 0, rejected: 0, failed: 0, notReady: 0, ignored: 0, files: [] };
    weekOfSkips[weekKey(ledgerEvent.event as Reviewed)]++;
    if (ledgerEvent.event === 'skipped' || ledgerEvent.event === 'held') {
      const details = ledgerEvent.details as {
        duplicateOf?: { name: string; run: string; partner?: string };
        heldFor?: { name: string; run: string };
        contentSha256?: string;
      };
      weekOfSkips.files.push({
        partner: ledgerEvent.partner,
        name: ledgerEvent.name,
        outcome: ledgerEvent.event,
        run: ledgerEvent.runId,
        sha256: ledgerEvent.sha256,
        contentSha256: details.contentSha256 ?? ledgerEvent.sha256,
        ...(details.heldFor ? { sameAs: details.heldFor.name, originalRun: details.heldFor.run, why: 'twin of' as const } : {}),
        ...(details.duplicateOf
          ? {
              sameAs: details.duplicateOf.name,
              originalRun: details.duplicateOf.run,
              ...(details.duplicateOf.partner ? { originalPartner: details.duplicateOf.partner } : {}),
              why: sameAsWords(ledgerEvent.details),
            }
          : {}),
      });
    }
    byWeek.set(week, weekOfSkips);
  }
  const listed = (kind: Listed) => listFiles(events.filter((e) => e.event === kind));
  return {
    weeksBack: weeks,
    weeks: [...byWeek.values()].sort((a, b) => b.week.localeCompare(a.week)),
    rejected: listed('rejected'),
    failed: listed('failed'),
    notReady: listed('not_ready'),
    ignored: lastSeen(listed('ignored'), await ledger.ignoredSince(since, partners)),
  };
}

/**
 * An ignored name is recorded once (and again when it changes), so its events say when it was
 * new: the last run that saw it comes from the ledger's record of the name. A name seen in the
 * period that was recorded before it is listed too, recorded 0 times in the period.
 */
function lastSeen(
  recorded: ListedFile[],
  seen: { partner: string; name: string; reason: string; lastAt: string; lastRun: string }[],
): ListedFile[] {
  const key = (f: { partner: string; name: string }) => `${f.partner}\0${f.name}`;
  const byName = new Map(recorded.map((listedFile) => [key(listedFile), listedFile]));
  for (const sighting of seen) {
    const listedFile = byName.get(key(sighting)) ?? {
      partner: sighting.partner,
      name: sighting.name,
      sha256: null,
      times: 0,
      firstAt: sighting.lastAt,
      lastAt: sighting.lastAt,
      lastRun: null,
      reason: null,
    };
    Object.assign(listedFile, { lastAt: sighting.lastAt, lastRun: sighting.lastRun, reason: sighting.reason });
    byName.set(key(sighting), listedFile);
  }
  return [...byName.values()].sort((a, b) => b.lastAt.localeCompare(a.lastAt));
}

const SECTIONS: [string, Exclude<keyof SkipsReport, 'weeksBack' | 'weeks'>][] = [
  ['rejected', 'rejected'],
  ['failed', 'failed'],
  ['not ready', 'notReady'],
  ['ignored', 'ignored'],
];

export function formatSkips(skipsReport: SkipsReport): string {
  if (skipsReport.weeks.length === 0)
    return `nothing skipped, held, rejected, failed, not ready or ignored in the last ${skipsReport.weeksBack} weeks`;
  const out = [
    textTable(
      ['week', 'skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored'],
      skipsReport.weeks.map((weekOfSkips) => [
        weekOfSkips.week,
        weekOfSkips.skipped,
        weekOfSkips.held,
        weekOfSkips.rejected,
        weekOfSkips.failed,
        weekOfSkips.notReady,
        weekOfSkips.ignored,
      ]),
    ),
  ];
  const byPartner = manyPartners([
    ...skipsReport.weeks.flatMap((w) => w.files),
    ...skipsReport.rejected,
    ...skipsReport.failed,
    ...skipsReport.notReady,
    ...skipsReport.ignored,
  ]);
  const partnerCell = (f: { partner: string }) => (byPartner ? [f.partner] : []);
  const partnerHead = byPartner ? ['partner'] : [];
  const skips = skipsReport.weeks.flatMap((w) =>
    w.files.map((f, i) => {
      const why = f.sameAs ? `${f.why} ${f.sameAs}${ofPartner(f.originalPartner, f.partner)} (run ${f.originalRun})` : '';
      return [i === 0 ? w.week : '', ...partnerCell(f), f.outcome, f.name, f.run ?? '-', why];
    }),
  );
  out.push('', 'skips and holds:', skips.length ? textTable(['week', ...partnerHead, 'outcome', 'file', 'run', 'why'], skips) : '  none');
  for (const [title, key] of SECTIONS) {
    const files = skipsReport[key];
    const rows = files.map((listedFile) => [
      ...partnerCell(listedFile),
      listedFile.name,
      listedFile.times,
      listedFile.lastAt.replace('T', ' ').slice(0, 19),
      listedFile.lastRun ?? '-',
      listedFile.reason ?? '',
    ]);
    out.push('', `${title}:`, files.length ? textTable([...partnerHead, 'file', 'times', 'last (UTC)', 'run', 'reason'], rows) : '  none');
  }
  return out.join('\n');
}
