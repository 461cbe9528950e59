import { describe, expect, it } from 'vitest';
import { terminalLine } from '../../src/cli/logger.js';

describe('logs on a terminal', () => {
  it('show time, level, file and message of a JSON log line', () => {
    const json = JSON.stringify({
      level: 40,
      time: new Date(Date.UTC(2026, 2, 14, 2, 0, 3)).toISOString(),
      file: 'settle_a02.csv',
      msg: 'skipped: same content as settle_a01.csv',
    });
    expect(terminalLine(json)).toBe('02:00:03 WARN  settle_a02.csv: skipped: same content as settle_a01.csv\n');
  });

  it('pass anything else through unchanged', () => {
    expect(terminalLine('not json\n')).toBe('not json\n');
  });
});
