import { describe, expect, it } from 'vitest';
import { exactIsoMs, isoText, utcText } from '../../src/isoInstants.js';
import { isoTime } from '../../src/transferLog/logTimes.js';

const DAY = 86_400_000;
const MAX = 8.64e15;

/** Instants around the edges a day cache could get wrong: midnights either side, leap days, the year 0, four-digit years' ends, the Date range's ends. */
function edgeInstants(): number[] {
  const days = [
    Date.UTC(2026, 0, 1),
    Date.UTC(2026, 11, 31),
    Date.UTC(2024, 1, 29),
    Date.UTC(2100, 1, 28),
    Date.UTC(1970, 0, 1),
    Date.UTC(1969, 11, 31),
    new Date('0000-01-01T00:00:00.000Z').getTime(),
    new Date('9999-12-31T00:00:00.000Z').getTime(),
    new Date('+010000-01-01T00:00:00.000Z').getTime(),
    new Date('-000001-12-31T00:00:00.000Z').getTime(),
    -MAX,
    MAX - DAY,
  ];
  const out: number[] = [];
  for (const day of days) for (const offset of [-1, 0, 1, 999, 1000, 59_999, 3_600_000, DAY - 1001, DAY - 1, DAY]) out.push(day + offset);
  return out.filter((ms) => Math.abs(ms) <= MAX);
}

/** A walk that keeps the cache on one day for a while, then jumps: what an audit's records do. */
function walk(): number[] {
  const out: number[] = [];
  let ms = Date.UTC(2026, 2, 29, 0, 59, 58, 123);
  for (let i = 0; i < 20_000; i++) {
    ms += i % 997 === 0 ? -3 * DAY + 17 : (i * 7919) % 65_537;
    out.push(ms);
  }
  return out;
}

describe('instants as toISOString writes them, by the day', () => {
  it('writes what toISOString writes, and the same time for people as its first 19 characters', () => {
    for (const ms of [...edgeInstants(), ...walk(), ...edgeInstants().reverse()]) {
      const iso = new Date(ms).toISOString();
      expect(isoText(ms)).toBe(iso);
      expect(utcText(ms)).toBe(`${iso.slice(0, 19).replace('T', ' ')} UTC`);
    }
  });

  it('drops a fraction of a millisecond as a Date does, and has no text for an instant a Date has none for', () => {
    isoText(Date.UTC(2026, 0, 1));
    expect(isoText(Date.UTC(2026, 0, 1) + 0.75)).toBe('2026-01-01T00:00:00.000Z');
    expect(isoText(-0)).toBe('1970-01-01T00:00:00.000Z');
    for (const bad of [Number.NaN, Infinity, MAX + 1]) {
      expect(() => isoText(bad)).toThrow(RangeError);
      expect(() => utcText(bad)).toThrow(RangeError);
    }
  });

  it('reads back exactly the text it writes, whichever day it held before', () => {
    const all = [...edgeInstants(), ...walk()];
    for (const ms of all) expect(exactIsoMs(new Date(ms).toISOString())).toBe(ms);
    for (const ms of all.reverse()) {
      isoText(Math.min(ms + DAY, MAX));
      expect(exactIsoMs(new Date(ms).toISOString())).toBe(ms);
    }
  });

  it('refuses a time Date.parse takes whose text toISOString would write otherwise, on the day held and off it', () => {
    const others = [
      '2026-02-30T00:00:00.000Z',
      '2026-12-01T24:00:00.000Z',
      '2026-12-01T23:60:00.000Z',
      '2026-12-01T23:59:60.000Z',
      '2026-12-01T02:00Z',
      '2026-12-01T02:00:01Z',
      '2026-12-01T02:00:01.5Z',
      '2026-12-01T02:00:01.5000Z',
      '2026-12-01T02:00:01.500z',
      '2026-12-01T02:00:01.500+00:00',
      '2026-12-01 02:00:01.500Z',
      '2026-12-01T02:00:01,500Z',
      '2026-12-01T02-00:01.500Z',
      '2026-12-01T0a:00:01.500Z',
      '2026-12-01T02:00:01.5a0Z',
      '2026-12-01T02:00:01.500ZZ',
      '2026-12-01',
      '+002026-12-01T02:00:01.500Z',
      'Tue, 01 Dec 2026 02:00:01 GMT',
      '',
      'T02:00:01.500Z',
    ];
    for (const text of others) {
      exactIsoMs('2026-12-01T00:00:00.000Z');
      expect({ text, ms: exactIsoMs(text) }).toEqual({ text, ms: Number.NaN });
      isoText(Date.UTC(1999, 0, 1));
      expect({ text, ms: exactIsoMs(text) }).toEqual({ text, ms: Number.NaN });
    }
  });
});

describe("a transfer log's time in toISOString's form", () => {
  it('is read as the instant it writes, in whatever zone the log is read, as the pattern reads it', () => {
    const zones = [{ fixed: 0 }, { fixed: 60 }, { iana: 'Europe/Amsterdam' }] as const;
    for (let i = 0; i < 5_000; i++) {
      const ms = Date.UTC(1990, 0, 1) + i * 7_919_003_117 + (i % 1000);
      const iso = new Date(ms).toISOString();
      for (const zone of zones) expect(isoTime(iso, zone)).toBe(ms);
      // the same text the pattern reads: a fraction of other length, and an offset spelled out
      expect(isoTime(iso.replace('Z', '0Z'), zones[2])).toBe(ms);
      expect(isoTime(iso.replace('Z', '+00:00'), zones[1])).toBe(ms);
    }
    expect(isoTime('2026-02-30T00:00:00.000Z', zones[0])).toBeNaN();
  });
});
