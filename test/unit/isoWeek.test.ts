import { describe, expect, it } from 'vitest';
import { isoWeek } from '../../src/report/isoWeek.js';

describe('ISO weeks', () => {
  it.each([
    ['2026-03-14T02:00:00Z', '2026-W11'],
    ['2026-01-01T00:00:00Z', '2026-W01'], // a Thursday: week 1
    ['2027-01-01T12:00:00Z', '2026-W53'], // a Friday: still the last week of 2026
    ['2024-12-30T00:00:00Z', '2025-W01'], // a Monday in December: already week 1 of 2025
    ['2026-11-29T23:59:59Z', '2026-W48'], // a Sunday closes its week
  ])('%s is %s', (at, week) => {
    expect(isoWeek(new Date(at))).toBe(week);
  });
});
