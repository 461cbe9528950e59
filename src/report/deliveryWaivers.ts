import type { LedgerQueries } from '../ledger/ledger.js';
import { printable } from './printable.js';

/**
 * An owed day the partner confirms will never come, waived by an operator: `waived` and
 * `unwaived` events in the ledger, append-only, each named by its day (`YYYY-MM-DD`, the
 * partner's local day) with the reason and the operator. The latest of them for a day decides
 * whether the day stands waived; report/deliveries.ts is the one place that lets a waiver count.
 */
export interface Waiver {
  reason: string;
  /** who waived it (operatorName: the real user; under sudo, the person sudo names) */
  operator: string;
  /** when it was waived (ISO, UTC) */
  at: string;
}

/** Every ledger time is after this: the waivers of a partner are read whatever their age (they are few). */
const EVER = '1970-01-01T00:00:00.000Z';

/** The days of the partner that stand waived now, each with its waiver. */
export async function waiversOf(ledger: LedgerQueries, partner: string): Promise<Map<string, Waiver>> {
  const waivers = new Map<string, Waiver>();
  for (const e of await ledger.eventsSince(['waived', 'unwaived'], EVER, [partner])) {
    if (e.event === 'unwaived') waivers.delete(e.name);
    else waivers.set(e.name, { reason: String(e.details.reason ?? ''), operator: String(e.details.operator ?? ''), at: e.at });
  }
  return waivers;
}

/**
 * `waived by alice at 2026-03-20 09:12 UTC: the partner confirmed no settlement that day`, as every
 * report prints it: the operator's name and reason are anyone's text, so their control and format
 * characters (a terminal's escapes, a bidi override) are spelled out (printable), here for all of them.
 */
export function waiverWords(waiver: Waiver): string {
  return printable(`waived by ${waiver.operator} at ${waiver.at.replace('T', ' ').slice(0, 16)} UTC: ${waiver.reason}`);
}
