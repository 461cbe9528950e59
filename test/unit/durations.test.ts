import { describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/durations.js';
import { durationText } from '../../src/config/optionSpec.js';
import { lateText } from '../../src/report/deliveries.js';
import { runTimeText } from '../../src/report/runsReport.js';
import { ago } from '../../src/report/status.js';
import { clockOffsetMessage } from '../../src/report/arrivalAudit/ownMoves.js';

const texts = (format: (seconds: number) => string, seconds: number[]) => seconds.map(format);

describe('formatDuration, one formatter for every style', () => {
  it('exact (an option default): every unit that is not zero, days only when whole and two or more', () => {
    expect(texts(durationText, [0, 30, 300, 5400, 3661, 26 * 3600, 86_400, 172_800, 49 * 3600])).toEqual([
      '0',
      '30s',
      '5m',
      '1h30m',
      '1h1m1s',
      '26h',
      '24h',
      '2d',
      '49h',
    ]);
  });

  it('a run time: tenths under a minute, then two padded parts', () => {
    expect(texts(runTimeText, [4.24, 59.9, 60, 185, 3599.4, 3600, 3720, 30 * 3600])).toEqual([
      '4.2s',
      '59.9s',
      '1m00s',
      '3m05s',
      '59m59s',
      '1h00m',
      '1h02m',
      '30h00m',
    ]);
    expect(runTimeText(null)).toBe('-');
  });

  it('ago: the largest unit only, hours at most, never 0m for seconds ago', () => {
    expect(texts(ago, [0.2, 6, 59.4, 59.6, 45 * 60 + 59, 3 * 3600 + 3599, 30 * 3600])).toEqual([
      '0s',
      '6s',
      '59s',
      '1m',
      '45m',
      '3h',
      '30h',
    ]);
  });

  it('how late: seconds under a minute (never 0s, never "1m" for a second), minutes, hours up to three days, then days', () => {
    expect(texts(lateText, [0, 1, 45, 59.6, 90, 45 * 60, 6 * 3600, 47 * 3600, 72 * 3600 - 1, 72 * 3600, 5 * 86_400])).toEqual([
      '1s',
      '1s',
      '45s',
      '1m',
      '1m',
      '45m',
      '6h',
      '47h',
      '71h',
      '3d',
      '5d',
    ]);
  });

  it('spaced (a clock offset): units as words, either sign', () => {
    expect(texts((seconds) => formatDuration(seconds, { spaced: true }), [0, 3600, 5.5 * 3600, -125, 0.4])).toEqual([
      '0 s',
      '1 h',
      '5 h 30 min',
      '2 min 5 s',
      '0 s',
    ]);
    expect(clockOffsetMessage({ kind: 'zone', offsetMs: -5.5 * 3_600_000, moves: 3, of: 4 }, 'UTC')).toMatch(
      /^the transfer log runs 5 h 30 min behind/,
    );
  });

  it('cuts whole units, never rounding a larger one up', () => {
    expect(formatDuration(3599, { parts: 1 })).toBe('59m');
    expect(formatDuration(3599, { parts: 2 })).toBe('59m59s');
    expect(formatDuration(90_061, { largest: 'd', daysFrom: 86_400 })).toBe('1d1h1m1s');
    expect(formatDuration(90_061, { largest: 'd', daysFrom: 86_400, smallest: 'm' })).toBe('1d1h1m');
  });
});
