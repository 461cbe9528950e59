import { addDays, localDay } from '../calendar/dueDays.js';
import type { Expect } from '../calendar/expect.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import { deliveryDays, lateText, type DayState, type DeliveryDay, type PartnerDeliveries } from './deliveries.js';
import { waiverWords } from './deliveryWaivers.js';
import { firstOwedDay } from './firstOwedDay.js';
import { isoWeek } from './isoWeek.js';
import { textTable } from './textTable.js';

/** A partner in the report: what it owes, if its settings say. */
export interface ReportedPartner {
  partner: string;
  expect: Expect | undefined;
  patternText: string;
}

export interface WeekCounts {
  week: string;
  onTime: number;
  late: number;
  missing: number;
  rejected: number;
  /** owed days an operator waived (`settle-ingest waive`): never overdue */
  waived: number;
  /** resends skipped and files held, on the days of the week */
  skipped: number;
  held: number;
}

export interface PartnerReport {
  partner: string;
  /** null: no `expect` in its settings, nothing judged */
  expect: Expect | null;
  /** its local days, oldest first, from its first run or the window's start */
  days: DeliveryDay[];
  weeks: WeekCounts[];
}

export interface DeliveriesReport {
  generatedAt: string;
  weeksBack: number;
  partners: PartnerReport[];
}

/** How each state is said to a person, and which count of the week it adds to. */
export const STATE_WORDS: Record<DayState, string> = {
  on_time: 'on time',
  late: 'late',
  missing: 'MISSING',
  rejected: 'REJECTED',
  due: 'due (within warnAfter)',
  not_due: 'not due yet',
  not_owed: 'not owed',
  waived: 'waived',
};

/** How a day's state reads: a waived day names who waived it, when and why. */
export function stateWords(deliveryDay: DeliveryDay): string {
  if (deliveryDay.state === 'not_owed') return `not owed (${deliveryDay.notOwedBecause})`;
  if (deliveryDay.state === 'waived') return waiverWords(deliveryDay.waiver!);
  // its files came after all: delivered, and the waiver still said
  return deliveryDay.waiver
    ? `${STATE_WORDS[deliveryDay.state]} (also ${waiverWords(deliveryDay.waiver)})`
    : STATE_WORDS[deliveryDay.state];
}

function weekCounts(days: DeliveryDay[]): WeekCounts[] {
  const byWeek = new Map<string, WeekCounts>();
  for (const d of days) {
    const week = isoWeek(new Date(`${d.day}T12:00:00Z`));
    const w = byWeek.get(week) ?? { week, onTime: 0, late: 0, missing: 0, rejected: 0, waived: 0, skipped: 0, held: 0 };
    if (d.state === 'on_time') w.onTime++;
    if (d.state === 'late') w.late++;
    if (d.state === 'missing') w.missing++;
    if (d.state === 'rejected') w.rejected++;
    if (d.state === 'waived') w.waived++;
    w.skipped += d.files.filter((f) => f.outcome === 'skipped').length;
    w.held += d.files.filter((f) => f.outcome === 'held').length;
    byWeek.set(week, w);
  }
  return [...byWeek.values()];
}

/**
 * `report deliveries`: per partner and local day over the last `weeks` weeks (from its first
 * run, if that is later), delivered on time, late and by how much, missing, rejected, with the
 * skips and holds of each day; and the weekly counts.
 */
export async function deliveriesReport(
  ledger: LedgerQueries,
  partners: ReportedPartner[],
  weeks: number,
  now: number,
): Promise<DeliveriesReport> {
  const out: PartnerReport[] = [];
  for (const reportedPartner of partners) {
    if (!reportedPartner.expect) {
      out.push({ partner: reportedPartner.partner, expect: null, days: [], weeks: [] });
      continue;
    }
    const judged: PartnerDeliveries = {
      partner: reportedPartner.partner,
      expect: reportedPartner.expect,
      patternText: reportedPartner.patternText,
    };
    const today = localDay(now, reportedPartner.expect.timeZone);
    const windowStart = addDays(today, -(weeks * 7 - 1));
    const started = (await firstOwedDay(ledger, reportedPartner.partner, reportedPartner.expect.timeZone, now)).day;
    const days = await deliveryDays(ledger, judged, started > windowStart ? started : windowStart, today, now);
    out.push({ partner: reportedPartner.partner, expect: reportedPartner.expect, days, weeks: weekCounts(days) });
  }
  return { generatedAt: new Date(now).toISOString(), weeksBack: weeks, partners: out };
}

/** `every business day by 04:00 Europe/Amsterdam, less the public holidays of NL; 1 file; warning after 1h, critical after 24h` */
export function expectWords(expect: Expect): string {
  const hours = (s: number) => lateText(s).replace(/^1m$/, '0m');
  const holidays = expect.holidays ? `, less the public holidays of ${expect.holidays}` : '';
  return `every ${expect.every} by ${expect.by} ${expect.timeZone}${holidays}; ${expect.files} ${expect.files === 1 ? 'file' : 'files'}; ${expect.warnAfterSeconds ? `warning after ${hours(expect.warnAfterSeconds)}` : 'warning once due'}, critical after ${hours(expect.errorAfterSeconds)}`;
}

/** A time as the partner's clock shows it: `Thu 03:00`. */
export function localTime(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    .format(new Date(iso))
    .replace(',', '');
}

export function formatDeliveries(deliveriesReport: DeliveriesReport): string {
  const out: string[] = [];
  for (const partnerReport of deliveriesReport.partners) {
    if (out.length) out.push('');
    if (!partnerReport.expect) {
      out.push(`${partnerReport.partner}: no "expect" in its settings: its deliveries are not judged`);
      continue;
    }
    const zone = partnerReport.expect.timeZone;
    out.push(`${partnerReport.partner}: ${expectWords(partnerReport.expect)}`);
    const rows = partnerReport.days.map((deliveryDay) => {
      const state = stateWords(deliveryDay);
      const files = deliveryDay.files.map((dayFile) =>
        dayFile.outcome === 'loaded' ? dayFile.name : `${dayFile.name} (${dayFile.outcome}${dayFile.why ? `: ${dayFile.why}` : ''})`,
      );
      return [
        `${deliveryDay.weekday} ${deliveryDay.day}`,
        state,
        deliveryDay.deliveredAt ? localTime(deliveryDay.deliveredAt, zone) : '-',
        deliveryDay.lateSeconds !== null && deliveryDay.state !== 'due' ? lateText(deliveryDay.lateSeconds) : '-',
        files.join(', ') || '-',
      ];
    });
    out.push(textTable(['day', 'state', `loaded (${zone})`, 'late', 'files'], [...rows].reverse()));
    out.push(
      '',
      textTable(
        ['week', 'on time', 'late', 'missing', 'rejected', 'waived', 'skipped', 'held'],
        [...partnerReport.weeks]
          .reverse()
          .map((weekCounts) => [
            weekCounts.week,
            weekCounts.onTime,
            weekCounts.late,
            weekCounts.missing,
            weekCounts.rejected,
            weekCounts.waived,
            weekCounts.skipped,
            weekCounts.held,
          ]),
      ),
    );
  }
  return out.length ? out.join('\n') : 'no partners to report';
}
