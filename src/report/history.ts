import { basename } from 'node:path';
import type { Ledger } from '../ledger/ledger.js';
import type { LedgerEvent } from '../ledger/types.js';
import { printable } from './printable.js';
import { textTable } from './textTable.js';

/** `history FILE-OR-SHA256`: every ledger event for a file name (a path is reduced to its name) or a content hash. */
export async function fileHistory(ledger: Ledger, fileOrSha: string): Promise<LedgerEvent[]> {
  const key = /^[0-9a-fA-F]{64}$/.test(fileOrSha) ? fileOrSha.toLowerCase() : basename(fileOrSha);
  const direct = await ledger.eventsFor(key);
  // a name's history includes what happened to its content under other names (the original a01 of a resend a02)
  const shas = new Set(direct.map((e) => e.sha256).filter((s): s is string => s !== null));
  const all = new Map(direct.map((e) => [e.id, e]));
  for (const sha of shas) for (const e of await ledger.eventsFor(sha)) all.set(e.id, e);
  return [...all.values()].sort((a, b) => a.id - b.id);
}

function describe(e: LedgerEvent): string {
  const d = e.details as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof d.rows === 'number') parts.push(`${d.rows} rows`);
  const dup = d.duplicateOf as { name: string; run: string; source?: string } | undefined;
  if (dup) parts.push(`same bytes as ${dup.name}, run ${dup.run}${dup.source === 'finance-database' ? ' (per the finance database)' : ''}`);
  const held = d.heldFor as { name: string; run: string } | undefined;
  if (held) parts.push(`twin ${held.name} claimed by run ${held.run}`);
  if (typeof d.to === 'string') parts.push(`to ${d.to}`);
  if (d.adopted === true) parts.push(`adopted${d.assumedLoaded === true ? " on the operator's word" : ''} from ${String(d.from)}`);
  if (typeof d.reason === 'string') parts.push(d.reason);
  if (typeof d.operator === 'string') parts.push(`by ${d.operator}`);
  if (typeof d.leaseUntil === 'string' && e.event === 'claimed') parts.push(`lease until ${d.leaseUntil}`);
  if (typeof d.claimRun === 'string') parts.push(`claim of run ${d.claimRun}`);
  return parts.join('; ');
}

export function formatHistory(events: LedgerEvent[], asked: string): string {
  if (events.length === 0) return `no ledger events for ${printable(asked)}`;
  return textTable(
    ['time (UTC)', 'run', 'event', 'file', 'sha256', 'details'],
    events.map((e) => [
      e.at.replace('T', ' ').replace('Z', ''),
      e.runId ?? '-',
      e.event,
      e.name,
      e.sha256 ? `${e.sha256.slice(0, 12)}…` : '-',
      describe(e),
    ]),
  );
}
