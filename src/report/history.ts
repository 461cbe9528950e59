import { sameAsWords } from '../ledger/ledgerEvents.js';
import { basename } from 'node:path';
import { UsageError } from '../errors.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import { DEFAULT_PARTNER, type LedgerEvent } from '../ledger/types.js';
import { printable } from './printable.js';
import { textTable } from './textTable.js';

const SHA256 = /^[0-9a-f]{64}$/i;
/** Short enough to type from a mail, long enough to be unique in any real ledger. */
const SHA256_PREFIX = /^[0-9a-f]{8,63}$/i;

/** Every event of a name or content, plus what happened to its contents under other names. */
async function eventsWithTwins(ledger: LedgerQueries, key: string): Promise<LedgerEvent[]> {
  const direct = await ledger.eventsFor(key);
  // a name's history includes what happened to its content under other names (the original a01 of a resend a02)
  const shas = new Set(direct.map((e) => e.sha256).filter((s): s is string => s !== null));
  const all = new Map(direct.map((e) => [e.id, e]));
  for (const sha of shas) {
    for (const e of await ledger.eventsFor(sha)) all.set(e.id, e);
    // a wrapped delivery's content, and so every other delivery of it (re-compressed, re-encrypted)
    const contents = new Set((await ledger.knowsContent(sha)).map((f) => f.contentSha256).filter((c) => c !== null && c !== sha));
    for (const content of contents) for (const e of await ledger.eventsFor(content!)) all.set(e.id, e);
  }
  return [...all.values()].sort((a, b) => a.id - b.id);
}

/**
 * `history FILE-OR-SHA256-OR-PREFIX`: every ledger event for a file name (a path is reduced
 * to its name), a content hash, or the first 8+ hex digits of one. A prefix that fits
 * several contents is refused with them listed, never guessed.
 */
export async function fileHistory(ledger: LedgerQueries, asked: string): Promise<LedgerEvent[]> {
  if (SHA256.test(asked)) return eventsWithTwins(ledger, asked.toLowerCase());
  const byName = await eventsWithTwins(ledger, basename(asked));
  if (byName.length > 0 || !SHA256_PREFIX.test(asked)) return byName;
  const shas = await ledger.contentsWithPrefix(asked.toLowerCase(), 6);
  if (shas.length > 1) {
    const listed = shas.slice(0, 5).join(', ');
    throw new UsageError(`${asked} is the start of several contents (${listed}${shas.length > 5 ? ', …' : ''}): give more of the SHA-256`);
  }
  return shas[0] ? eventsWithTwins(ledger, shas[0]) : [];
}

/** One ledger event for `--json` (`history`, `report run`). */
export function eventJson(ledgerEvent: LedgerEvent): Record<string, unknown> {
  return {
    id: ledgerEvent.id,
    partner: ledgerEvent.partner,
    run: ledgerEvent.runId,
    at: ledgerEvent.at,
    event: ledgerEvent.event,
    name: ledgerEvent.name,
    sha256: ledgerEvent.sha256,
    details: ledgerEvent.details,
  };
}

/** ` of adyen` when the original of a skip is another partner's file: content identity is the ledger's, not a partner's. */
export function ofPartner(original: string | undefined, own: string): string {
  return original && original !== own ? ` of ${original}` : '';
}

/** An event's details as a person reads them: the original a skip duplicated, a reject's reason, … */
export function describeEvent(ledgerEvent: LedgerEvent, opts: { rows: boolean } = { rows: true }): string {
  const details = ledgerEvent.details;
  const parts: string[] = [];
  if (opts.rows && typeof details.rows === 'number') parts.push(`${details.rows} rows`);
  const dup = details.duplicateOf as { name: string; run: string; partner?: string; source?: string } | undefined;
  const decoded = typeof details.contentSha256 === 'string';
  if (dup) {
    const db = dup.source === 'finance-database' ? ' (per the finance database)' : '';
    parts.push(`${sameAsWords(details)} ${dup.name}${ofPartner(dup.partner, ledgerEvent.partner)}, run ${dup.run}${db}`);
  }
  // a wrapped delivery (gzip, zip, OpenPGP): the content inside has its own hash, the file marker's
  if (decoded)
    parts.push(
      `content ${String(details.contentSha256).slice(0, 12)}… inside ${(details.layers as string[] | undefined)?.join(' > ') ?? 'its wrapping'}`,
    );
  const held = details.heldFor as { name: string; run: string } | undefined;
  if (held) parts.push(`twin ${held.name} claimed by run ${held.run}`);
  if (ledgerEvent.event === 'move_failed') {
    // the outcome stands; the move out of the intake is what failed, and the next run tries it again
    const by = typeof details.decidedBy === 'string' && details.decidedBy !== ledgerEvent.runId ? ` by run ${details.decidedBy}` : '';
    parts.push(
      `${typeof details.outcome === 'string' ? details.outcome : 'decided'}${by}, not moved${details.lost === true ? ' (lost)' : ''}`,
    );
  }
  if (typeof details.to === 'string') parts.push(`to ${details.to}`);
  if (details.adopted === true)
    parts.push(`adopted${details.assumedLoaded === true ? " on the operator's word" : ''} from ${String(details.from)}`);
  if (typeof details.reason === 'string') parts.push(details.reason);
  if (typeof details.operator === 'string') parts.push(`by ${details.operator}`);
  if (typeof details.leaseUntil === 'string' && ledgerEvent.event === 'claimed') parts.push(`lease until ${details.leaseUntil}`);
  if (typeof details.claimRun === 'string') parts.push(`claim of run ${details.claimRun}`);
  return parts.join('; ');
}

export function formatHistory(events: LedgerEvent[], asked: string, askedIsRun: boolean): string {
  if (events.length === 0)
    return `no ledger events for ${printable(asked)}${askedIsRun ? `: it is a run, see \`settle-ingest report run ${asked}\`` : ''}`;
  const byPartner = events.some((e) => e.partner !== DEFAULT_PARTNER);
  return textTable(
    ['time (UTC)', ...(byPartner ? ['partner'] : []), 'run', 'event', 'file', 'sha256', 'details'],
    events.map((e) => [
      e.at.replace('T', ' ').replace('Z', ''),
      ...(byPartner ? [e.partner] : []),
      e.runId ?? '-',
      e.event,
      e.name,
      e.sha256 ? `${e.sha256.slice(0, 12)}…` : '-',
      describeEvent(e),
    ]),
  );
}
