import { dueDay } from '../calendar/dueDays.js';
import type { Expect } from '../calendar/expect.js';
import { UsageError } from '../errors.js';
import type { Ledger, LedgerQueries } from '../ledger/ledger.js';
import { isDay } from './evidencePack.js';
import { firstOwedDay } from './firstOwedDay.js';
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

export interface WaiveRequest {
  partner: string;
  /** the partner's `expect`; undefined: it owes nothing, so nothing can be waived */
  expect: Expect | undefined;
  day: string;
  reason: string;
  operator: string;
  /** take a standing waiver back */
  undo: boolean;
  /** now (ms): a partner that has never run owes no day before today */
  now: number;
}

export interface WaiveOutcome {
  partner: string;
  day: string;
  weekday: string;
  action: 'waived' | 'unwaived';
  reason: string;
  operator: string;
  /** the waiver an undo took back */
  tookBack: Waiver | null;
}

/**
 * `waive`: checks everything before writing (exit 2 names what is wrong, nothing recorded), then
 * appends one event. Only an owed day of the partner's calendar can be waived (a weekend, a
 * holiday, a day it never owes is not owed anyway); a day already waived is not waived twice,
 * and only a waived day can be taken back.
 */
export async function waiveDay(ledger: Ledger, req: WaiveRequest): Promise<WaiveOutcome> {
  const reason = req.reason.trim();
  if (reason === '') throw new UsageError(`--reason is required: why the partner's ${req.day} is ${req.undo ? 'owed again' : 'waived'}`);
  if (!isDay(req.day)) throw new UsageError(`--day ${printable(req.day)} is not a day: write a real calendar day YYYY-MM-DD`);
  if (!req.expect) {
    throw new UsageError(`partner "${req.partner}" has no "expect" in its settings: it owes no day, so there is none to waive`);
  }
  const due = dueDay(req.expect, req.day);
  if (!due.owed) {
    throw new UsageError(
      `${due.weekday} ${req.day} is not a due day of partner "${req.partner}" (${due.notOwedBecause}): nothing to waive`,
    );
  }
  const standing = (await waiversOf(ledger, req.partner)).get(req.day);
  if (req.undo && !standing) throw new UsageError(`${due.weekday} ${req.day} of partner "${req.partner}" is not waived: nothing to undo`);
  if (!req.undo && standing) {
    throw new UsageError(
      `${due.weekday} ${req.day} of partner "${req.partner}" is already ${waiverWords(standing)}; --undo first to change it`,
    );
  }
  // a day before the partner's first run was never owed (status and the reports never count it): a
  // waiver of it would only say something untrue; taking one back stays possible
  const first = await firstOwedDay(ledger, req.partner, req.expect.timeZone, req.now);
  if (!req.undo && req.day < first.day) {
    throw new UsageError(
      first.ran
        ? `${due.weekday} ${req.day} was never due: partner "${req.partner}" first ran on ${first.day}, and no day before it is owed: nothing to waive`
        : `${due.weekday} ${req.day} was never due: partner "${req.partner}" has not run yet, and its owed days start with its first run: nothing to waive`,
    );
  }
  const action = req.undo ? 'unwaived' : 'waived';
  await ledger.forPartner(req.partner).record({
    runId: null,
    event: action,
    name: req.day,
    sha256: null,
    details: { day: req.day, reason, operator: req.operator, ...(standing ? { tookBack: standing } : {}) },
  });
  return { partner: req.partner, day: req.day, weekday: due.weekday, action, reason, operator: req.operator, tookBack: standing ?? null };
}
