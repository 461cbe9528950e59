import { describe, expect, it } from 'vitest';
import { isIanaZone, parseZone, zoneProblem } from '../../src/layout/values/timeZones.js';

describe('a mistyped time zone', () => {
  it.each([
    ['Europe/Amsterdm', 'Europe/Amsterdam'],
    ['America/New_Yrok', 'America/New_York'],
    ['Asia/Tokio', 'Asia/Tokyo'],
  ])('%s is refused with "did you mean %s?"', (typo, meant) => {
    expect(zoneProblem(typo)).toBe(`"${typo}" is not a time zone (did you mean "${meant}"?)`);
  });

  it('far from every zone, it is refused with what a zone looks like instead', () => {
    expect(zoneProblem('Mars/Olympus')).toBe(
      '"Mars/Olympus" is not a time zone (an IANA name such as "Europe/Amsterdam", "UTC", or "+01:00")',
    );
  });

  it('a real zone, UTC and an offset are no problem', () => {
    for (const zone of ['Europe/Amsterdam', 'UTC', '+01:00']) expect(zoneProblem(zone)).toBeUndefined();
  });

  it("a calendar's zone is an IANA name or UTC alone: an offset or an abbreviation is a zone of a log, never of a calendar", () => {
    for (const zone of ['Europe/Amsterdam', 'America/New_York', 'UTC']) expect(isIanaZone(zone), zone).toBe(true);
    for (const zone of ['+01:00', 'CET', 'Europe/Amsterdm', 'utc', 'Amsterdam']) expect(isIanaZone(zone), zone).toBe(false);
    // the log's reader takes what a calendar takes, and more
    for (const zone of ['Europe/Amsterdam', 'UTC', '+01:00']) expect(parseZone(zone), zone).toBeDefined();
    expect(parseZone('Europe/Amsterdm')).toBeUndefined();
  });
});
