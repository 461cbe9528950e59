import { dueDay } from '../calendar/dueDays.js';
import type { Expect } from '../calendar/expect.js';
import { UsageError } from '../errors.js';
import type { Ledger } from '../ledger/ledger.js';
import { deliveryDays, type DayFile } from './deliveries.js';
import { waiversOf, waiverWords, type Waiver } from './deliveryWaivers.js';
import { isDay } from './evidencePack.js';
import { firstOwedDay } from './firstOwedDay.js';
import { printable } from './printable.js';
import { utcTime } from './runsReport.js';

export interface WaiveRequest {
  partner: string;
  /** the partner's `expect`; undefined: it owes nothing, so nothing can be waived */
  expect: Expect | undefined;
  /** the partner's pattern as written: a date token in it says which day a file is for */
  patternText: string;
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
  /** what came for the day all the same, not enough to deliver it (a rejected file, fewer files than owed) */
  arrived: { name: string; outcome: DayFile['outcome'] }[];
}

/**
 * `waive`: checks everything before writing (exit 2 names what is wrong, nothing recorded), then
 * appends one event. Only an owed day of the partner's calendar can be waived (a weekend, a
 * holiday, a day it never owes is not owed anyway); a day already waived is not waived twice,
 * and only a waived day can be taken back. A day already delivered (its files loaded, on time or
 * late) is not waived: a waiver says its files will never come, and the ledger says they came:
 * the day asked is most likely the wrong one (or the partner). A day whose files came but did
 * not deliver it (rejected, or fewer than owed) may be waived, and the answer says what came.
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
  // the day as the reports judge it (report/deliveries.ts, the one place): delivered, or what came for it
  const [asJudged] = await deliveryDays(
    ledger,
    { partner: req.partner, expect: req.expect, patternText: req.patternText },
    req.day,
    req.day,
    req.now,
  );
  const loads = asJudged!.files.filter((f) => f.outcome === 'loaded');
  if (!req.undo && asJudged!.deliveredAt !== null) {
    const late = asJudged!.state === 'late' ? ', late' : '';
    throw new UsageError(
      `${due.weekday} ${req.day} of partner "${req.partner}" was delivered: ${loads.map((f) => `${printable(f.name)} loaded at ${utcTime(f.at)} UTC by run ${f.run ?? '?'}`).join(', ')}${late}. ` +
        "A waiver says the day's files will never come: nothing to waive (check the day and the partner asked for)",
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
  return {
    partner: req.partner,
    day: req.day,
    weekday: due.weekday,
    action,
    reason,
    operator: req.operator,
    tookBack: standing ?? null,
    arrived: asJudged!.files
      .filter((f) => f.outcome === 'loaded' || f.outcome === 'rejected')
      .map((f) => ({ name: f.name, outcome: f.outcome })),
  };
}
