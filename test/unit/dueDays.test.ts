import { describe, expect, it } from 'vitest';
import { dueDay, localDay, wallClock } from '../../src/calendar/dueDays.js';
import type { Expect } from '../../src/calendar/expect.js';
import { lateText } from '../../src/report/deliveries.js';

const businessDays = (holidays?: string): Expect => ({
  every: 'business day',
  weekdays: [1, 2, 3, 4, 5],
  holidays,
  by: '04:00',
  timeZone: 'Europe/Amsterdam',
  files: 1,
  warnAfterSeconds: 0,
  errorAfterSeconds: 86_400,
});

describe("a partner's due days", () => {
  it('owes Monday to Friday less its country’s public holidays, and says why a day is not owed', () => {
    expect(dueDay(businessDays('NL'), '2026-04-24')).toMatchObject({ weekday: 'Fri', owed: true });
    expect(dueDay(businessDays('NL'), '2026-04-25')).toMatchObject({ weekday: 'Sat', owed: false, notOwedBecause: 'weekend' });
    expect(dueDay(businessDays('NL'), '2026-04-27')).toMatchObject({ owed: false, notOwedBecause: 'Koningsdag' });
    expect(dueDay(businessDays(), '2026-04-27')).toMatchObject({ owed: true }); // no holidays named: every weekday
    // a region's own holiday: Epiphany in Bavaria, a working day in Germany at large
    expect(dueDay(businessDays('DE-BY'), '2026-01-06').owed).toBe(false);
    expect(dueDay(businessDays('DE'), '2026-01-06').owed).toBe(true);
  });

  it('reads `by` on the wall clock of the partner’s zone, across a change to summer time', () => {
    expect(new Date(wallClock('2026-03-27', '04:00', 'Europe/Amsterdam')).toISOString()).toBe('2026-03-27T03:00:00.000Z');
    expect(new Date(wallClock('2026-03-30', '04:00', 'Europe/Amsterdam')).toISOString()).toBe('2026-03-30T02:00:00.000Z');
    expect(localDay(Date.parse('2026-03-29T22:30:00Z'), 'Europe/Amsterdam')).toBe('2026-03-30');
    expect(localDay(Date.parse('2026-03-29T22:30:00Z'), 'UTC')).toBe('2026-03-29');
  });

  it('says lateness as an on-call engineer does', () => {
    expect([lateText(90), lateText(6 * 3600), lateText(47 * 3600), lateText(5 * 86_400)]).toEqual(['1m', '6h', '47h', '5d']);
  });
});
