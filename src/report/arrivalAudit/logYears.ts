import { posix } from 'node:path';
import { finalName } from '../../intake/names.js';
import type { LedgerQueries } from '../../ledger/ledger.js';
import type { EventKind } from '../../ledger/types.js';
import type { TransferLogs } from '../../transferLog/logFiles.js';
import { shiftYears } from '../../transferLog/logTimes.js';
import { LARGEST_ZONE_GAP_MS } from './ownMoves.js';

/** How many of a log's uploads are weighed: enough to outvote a few names that recur every year. */
const SAMPLE = 50;
/** How many years before the reader's first guess a log may be from. */
const MAX_YEARS_BACK = 10;
/** How long after an upload a run's record of it may come: a file left waiting, a run a month late. */
const RECORD_WITHIN_MS = 40 * 86_400_000;
/** The records that say a run saw a file. */
const SEEN: ReadonlySet<EventKind> = new Set([
  'claimed',
  'loaded',
  'skipped',
  'held',
  'rejected',
  'failed',
  'recovered',
  'not_ready',
  'ignored',
]);

/**
 * The year a syslog log that writes none is from, weighed against the ledger's times: the reader
 * took the latest base year that puts the log's last line no later than now (logFiles.ts), which
 * is wrong for a log read a year on (a copy kept for an audit). Each such log's uploads (a sample
 * spread over it) are looked up by name in the ledger, and the base year under which the most of
 * them have a run's record of their name soon after them wins; on a tie, or with no record at all,
 * the reader's year stands. Returns the logs whose base year should change, or null when none.
 */
export async function yearsByLedger(
  ledger: LedgerQueries,
  logs: TransferLogs,
  partners: string[],
  slackMs: number,
): Promise<Map<string, number> | null> {
  const changed = new Map<string, number>();
  for (const [family, base] of logs.years) {
    const named: { at: number; name: string }[] = [];
    for (const event of logs.events) {
      if (!event.server.startsWith(`${family}@`)) continue;
      if (event.kind === 'upload' && event.complete) named.push({ at: event.at, name: finalName(posix.basename(event.path)) });
      if (event.kind === 'rename') named.push({ at: event.at, name: posix.basename(event.to) });
    }
    if (named.length === 0) continue;
    const step = Math.ceil(named.length / SAMPLE);
    const sample = named.filter((_, i) => i % step === 0);
    const recorded = new Map<string, number[]>();
    for (const { name } of sample) {
      if (recorded.has(name)) continue;
      const events = await ledger.eventsFor(name);
      recorded.set(
        name,
        events
          .filter((ledgerEvent) => ledgerEvent.name === name && SEEN.has(ledgerEvent.event) && partners.includes(ledgerEvent.partner))
          .map((ledgerEvent) => Date.parse(ledgerEvent.at)),
      );
    }
    const earliest = Math.min(...[...recorded.values()].flat());
    if (!Number.isFinite(earliest)) continue; // the ledger has no record of any: nothing to weigh by
    const latestUpload = Math.max(...sample.map((u) => u.at));
    let best = { shift: 0, score: -1 };
    for (let shift = 0; shift >= -MAX_YEARS_BACK; shift--) {
      if (shiftYears(latestUpload, shift) + RECORD_WITHIN_MS < earliest) break; // every record is later than this year's uploads could be seen
      const score = sample.filter(({ at, name }) => {
        const moved = shiftYears(at, shift);
        return recorded.get(name)!.some((t) => t >= moved - LARGEST_ZONE_GAP_MS - slackMs && t <= moved + RECORD_WITHIN_MS);
      }).length;
      if (score > best.score) best = { shift, score };
    }
    if (best.shift !== 0 && best.score > 0) changed.set(family, base + best.shift);
  }
  return changed.size > 0 ? changed : null;
}
