import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/config/settings.js';
import { UsageError } from '../../src/errors.js';

const configWith = (settings: Record<string, unknown>) => {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-audit-settings-')), 'config.json');
  writeFileSync(path, JSON.stringify(settings));
  return path;
};

describe("the audit's settings", () => {
  it('checks archived copies by their SHA-256 unless --quick (a flag, the environment or the file) says size only', () => {
    expect(resolveSettings({}, {}).quick).toBe(false);
    expect(resolveSettings({ quick: true }, {}).quick).toBe(true);
    expect(resolveSettings({}, { SETTLE_AUDIT_QUICK: 'yes' }).quick).toBe(true);
    expect(resolveSettings({}, { SETTLE_AUDIT_QUICK: '0' }).quick).toBe(false);
    expect(resolveSettings({ config: configWith({ quick: true }) }, {}).quick).toBe(true);
    expect(() => resolveSettings({}, { SETTLE_AUDIT_QUICK: 'maybe' })).toThrow(UsageError);
    expect(() => resolveSettings({ config: configWith({ quick: 'sometimes' }) }, {})).toThrow(/"quick".*expected true or false/);
  });

  it('allows the transfer log 2 s of clock slack unless --transfer-log-clock-slack says otherwise', () => {
    expect(resolveSettings({}, {}).transferLog.clockSlackSeconds).toBe(2);
    expect(resolveSettings({ transferLogClockSlack: '15s' }, {}).transferLog.clockSlackSeconds).toBe(15);
    expect(resolveSettings({}, { SETTLE_TRANSFER_LOG_CLOCK_SLACK: '0' }).transferLog.clockSlackSeconds).toBe(0);
    expect(() => resolveSettings({ transferLogClockSlack: 'soon' }, {})).toThrow(/--transfer-log-clock-slack: expected a duration/);
  });
});
