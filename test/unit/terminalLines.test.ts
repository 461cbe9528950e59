import { describe, expect, it } from 'vitest';
import { downloadLine, progressLine, waitingLine } from '../../src/cli/terminal.js';

describe('the progress line on a terminal', () => {
  it('shows a load as its share of the file, rows, bytes and rate', () => {
    const p = { file: 'settle_a01.csv', rows: 1_234_567, bytes: 56_200_000, totalBytes: 124_800_000, startedAt: 0 };
    expect(progressLine(p, 4000)).toBe('settle_a01.csv: 45% · 1,234,567 rows · 56 of 125 MB · 14.1 MB/s');
    expect(progressLine({ ...p, bytes: 300_000, totalBytes: 1_400_000 }, 100)).toBe('settle_a01.csv: 21% · 1,234,567 rows · 0.3 of 1.4 MB');
  });

  it('shows a download as its share, and bytes of the whole', () => {
    expect(downloadLine('settle_a01.csv', 3_500_000, 7_000_000)).toBe('settle_a01.csv: 50% read · 3.5 of 7.0 MB');
  });

  it('says what the completeness gate waits for, and how long at least', () => {
    expect(waitingLine({ files: ['settle_a01.csv'], remainingMs: 11_200, first: true }, 30)).toBe(
      'waiting for settle_a01.csv to stay unchanged for 30s (--stable-for): 12s to go',
    );
    expect(waitingLine({ files: ['a.csv', 'b.csv', 'c.csv'], remainingMs: 0, first: false }, 30)).toBe(
      'waiting for a.csv (and 2 more) to stay unchanged for 30s (--stable-for): 0s to go',
    );
  });
});
