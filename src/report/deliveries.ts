import { formatDuration } from '../durations.js';
import { addDays, daysBetween, dueDay, localDay } from '../calendar/dueDays.js';
import type { Expect } from '../calendar/expect.js';
import { dayInName } from '../intake/names.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import type { LedgerEvent } from '../ledger/types.js';
import { waiversOf, type Waiver } from './deliveryWaivers.js';
import { firstOwedDay } from './firstOwedDay.js';

/** What judging a partner's deliveries needs from its settings. */
export interface PartnerDeliveries {
  partner: string;
  expect: Expect;
  /** the pattern as written: a date token in it says which day a file is for */
  patternText: string;
}

/**
 * How a day stands: `on_time` or `late` (its files loaded, after `by` for late); `missing` or
 * `rejected` (past `by` + `warnAfter` without them; rejected: files came and were rejected, which
 * is arrived, not delivered); `due` (past `by`, within `warnAfter`); `not_due` (before `by`);
 * `not_owed` (a weekend, a holiday, not a delivery day); `waived` (owed, not delivered, and waived
 * by an operator: the partner confirmed there is none; never overdue).
 */
export type DayState = 'on_time' | 'late' | 'missing' | 'rejected' | 'due' | 'not_due' | 'not_owed' | 'waived';

export interface DayFile {
  name: string;
  outcome: 'loaded' | 'rejected' | 'skipped' | 'held';
  at: string;
  run: string | null;
  rows: number | null;
  /** a reject's reason; for a skip or hold, the file it duplicated or waits for */
  why: string | null;
}

export interface DeliveryDay {
  day: string;
  weekday: string;
  owed: boolean;
  notOwedBecause: string | null;
  /** when its files are due (ISO, UTC) */
  dueBy: string;
  state: DayState;
  /** when the file that completed the day loaded */
  deliveredAt: string | null;
  /** after `by`: how late it loaded, or (still missing) how late it is now */
  lateSeconds: number | null;
  /** for an owed day past `warnAfter` without its delivery */
  level: 'warning' | 'critical' | null;
  /** the operator's waiver of the day, if one stands (also on a day whose files came after all) */
  waiver: Waiver | null;
  files: DayFile[];
}

export interface OverdueDelivery {
  partner: string;
  day: string;
  weekday: string;
  dueBy: string;
  by: string;
  timeZone: string;
  lateSeconds: number;
  level: 'warning' | 'critical';
  filesLoaded: number;
  filesExpected: number;
  rejected: number;
  /** `no delivery for Mon 2026-03-16, due by 04:00 Europe/Amsterdam, 6h late` (where several partners are judged, `stripe: ` before it) */
  message: string;
}

/** How far back `status` and the run look for owed days: older gaps stay in `report deliveries`. */
export const LOOKBACK_DAYS = 31;

const KINDS = ['loaded', 'recovered', 'rejected', 'skipped', 'held'] as const;

/** `20s`, `45m`, `6h`, `30h`, `4d`: how late, as an on-call engineer says it (seconds only under a minute, never `0s`). */
export const lateText = (seconds: number): string =>
  seconds < 59.5
    ? formatDuration(Math.max(1, seconds), { parts: 1 })
    : formatDuration(seconds, { parts: 1, largest: 'd', daysFrom: 72 * 3600, smallest: 'm' });

/** The day a file is for: the date its name carries by the pattern, else the local day it was recorded on. */
export function fileDay(partnerDeliveries: PartnerDeliveries, pick: Pick<LedgerEvent, 'name' | 'at'>): string {
  return dayInName(partnerDeliveries.patternText, pick.name) ?? localDay(Date.parse(pick.at), partnerDeliveries.expect.timeZone);
}

function dayFile(e: LedgerEvent): DayFile {
  const d = e.details as { rows?: number; reason?: string; duplicateOf?: { name: string }; heldFor?: { name: string } };
  const outcome = e.event === 'recovered' ? 'loaded' : (e.event as DayFile['outcome']);
  const why = d.duplicateOf ? `same as ${d.duplicateOf.name}` : d.heldFor ? `twin ${d.heldFor.name} loading` : (d.reason ?? null);
  return {
    name: e.name,
    outcome,
    at: e.at,
    run: e.runId,
    rows: typeof d.rows === 'number' ? d.rows : null,
    why: outcome === 'loaded' ? null : why,
  };
}

/**
 * Each day from `first` to `last` (the partner's local days) judged against what the ledger
 * holds for it at `now`: a late file closes its day, a rejected one counts as arrived but not
 * delivered, a skipped resend is not a delivery (its original is), and a holiday or weekend is
 * never owed. Newest day last.
 */
export async function deliveryDays(
  ledger: LedgerQueries,
  partnerDeliveries: PartnerDeliveries,
  first: string,
  last: string,
  now: number,
): Promise<DeliveryDay[]> {
  // a file for a day may load before it (sent the evening before) or long after it (a backfill)
  const since = new Date(Date.parse(`${addDays(first, -2)}T00:00:00Z`)).toISOString();
  const events = await ledger.eventsSince([...KINDS], since, [partnerDeliveries.partner]);
  const byDay = new Map<string, LedgerEvent[]>();
  for (const ledgerEvent of events) {
    const day = fileDay(partnerDeliveries, ledgerEvent);
    byDay.set(day, [...(byDay.get(day) ?? []), ledgerEvent]);
  }
  const waivers = await waiversOf(ledger, partnerDeliveries.partner);
  const { expect } = partnerDeliveries;
  return daysBetween(first, last).map((day) => {
    const due = dueDay(expect, day);
    const files = (byDay.get(day) ?? []).map(dayFile);
    const loads = files.filter((f) => f.outcome === 'loaded').sort((a, b) => a.at.localeCompare(b.at));
    const base = {
      day,
      weekday: due.weekday,
      owed: due.owed,
      notOwedBecause: due.notOwedBecause ?? null,
      dueBy: new Date(due.dueBy).toISOString(),
      waiver: waivers.get(day) ?? null,
      files,
    };
    const delivered = loads.length >= expect.files ? loads[expect.files - 1]! : undefined;
    if (delivered) {
      const late = Date.parse(delivered.at) - due.dueBy;
      const onTime = late <= 0 || !due.owed;
      return {
        ...base,
        state: due.owed ? (onTime ? 'on_time' : 'late') : 'not_owed',
        deliveredAt: delivered.at,
        lateSeconds: onTime ? null : Math.round(late / 1000),
        level: null,
      };
    }
    if (!due.owed) return { ...base, state: 'not_owed', deliveredAt: null, lateSeconds: null, level: null };
    // the one place a waiver counts: a waived day is never due, late or overdue for status, the run or the metrics
    if (base.waiver) return { ...base, state: 'waived', deliveredAt: null, lateSeconds: null, level: null };
    const overdueSeconds = (now - due.dueBy) / 1000;
    if (overdueSeconds <= 0) return { ...base, state: 'not_due', deliveredAt: null, lateSeconds: null, level: null };
    const level = overdueSeconds > expect.errorAfterSeconds ? 'critical' : overdueSeconds > expect.warnAfterSeconds ? 'warning' : null;
    const state: DayState = level === null ? 'due' : files.some((f) => f.outcome === 'rejected') ? 'rejected' : 'missing';
    return { ...base, state, deliveredAt: null, lateSeconds: Math.round(overdueSeconds), level };
  });
}

/** The owed days `status` and the run look at: from the partner's first run (or LOOKBACK_DAYS ago) to today. */
export async function recentDays(
  ledger: LedgerQueries,
  partnerDeliveries: PartnerDeliveries,
  now: number,
): Promise<{ first: string; last: string } | null> {
  const started = await firstOwedDay(ledger, partnerDeliveries.partner, partnerDeliveries.expect.timeZone, now);
  if (!started.ran) return null; // a partner never run owes nothing yet
  const today = localDay(now, partnerDeliveries.expect.timeZone);
  const earliest = addDays(today, -LOOKBACK_DAYS);
  return { first: started.day > earliest ? started.day : earliest, last: today };
}

/** The owed days past `by` + `warnAfter` without their delivery, oldest first. */
export async function overdueDeliveries(
  ledger: LedgerQueries,
  partnerDeliveries: PartnerDeliveries,
  now: number,
): Promise<OverdueDelivery[]> {
  const window = await recentDays(ledger, partnerDeliveries, now);
  if (!window) return [];
  const days = await deliveryDays(ledger, partnerDeliveries, window.first, window.last, now);
  return days.filter((d) => d.level !== null).map((d) => overdueOf(partnerDeliveries, d));
}

function overdueOf(partnerDeliveries: PartnerDeliveries, day: DeliveryDay): OverdueDelivery {
  const loaded = day.files.filter((f) => f.outcome === 'loaded').length;
  const rejected = day.files.filter((f) => f.outcome === 'rejected').length;
  const expected = partnerDeliveries.expect.files;
  const what = loaded > 0 ? `${loaded} of ${expected} files for` : `no delivery for`;
  const rejects = rejected > 0 ? ` (${rejected} ${rejected === 1 ? 'file' : 'files'} rejected)` : '';
  return {
    partner: partnerDeliveries.partner,
    day: day.day,
    weekday: day.weekday,
    dueBy: day.dueBy,
    by: partnerDeliveries.expect.by,
    timeZone: partnerDeliveries.expect.timeZone,
    lateSeconds: Math.round(day.lateSeconds!),
    level: day.level!,
    filesLoaded: loaded,
    filesExpected: expected,
    rejected,
    message: `${what} ${day.weekday} ${day.day}${rejects}, due by ${partnerDeliveries.expect.by} ${partnerDeliveries.expect.timeZone}, ${lateText(day.lateSeconds!)} late`,
  };
}

/** The latest load of a partner's files (ms), null when none ever loaded: the metrics' last delivery. */
export async function lastDeliveryAt(ledger: LedgerQueries, partner: string): Promise<number | null> {
  const last = await ledger.latestEvent(['loaded', 'recovered'], partner);
  return last ? Date.parse(last.at) : null;
}

/**
 * When the partner was last accounted for (ms): its latest load, or, when later, the due time of
 * the latest day waived as never coming that is not ahead of `nowMs` (a waiver for a day to come
 * accounts for nothing yet); null when neither. The metrics' "nothing for days" alert reads this,
 * so that a waived week (the partner confirmed there is none) does not fire it.
 */
export async function lastAccountedAt(
  ledger: LedgerQueries,
  partner: { partner: string; expect?: Expect | undefined },
  nowMs: number,
): Promise<number | null> {
  let latest = await lastDeliveryAt(ledger, partner.partner);
  if (!partner.expect) return latest;
  for (const day of (await waiversOf(ledger, partner.partner)).keys()) {
    const due = dueDay(partner.expect, day).dueBy;
    if (due <= nowMs && (latest === null || due > latest)) latest = due;
  }
  return latest;
}
