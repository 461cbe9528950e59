import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/config/settings.js';
import { siblingFolder } from '../../src/intake/openIntake.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { UsageError } from '../../src/errors.js';

const example = fileURLToPath(new URL('../../fixtures/settle-ingest.config.json', import.meta.url));

describe('settings', () => {
  it('reads the example config file, whose layout is the default one', () => {
    const s = resolveSettings({ config: example }, {});
    expect(s.intake).toBe('/srv/settle/intake');
    expect(s.layout).toEqual(DEFAULT_LAYOUT);
    expect(s.stableForSeconds).toBe(30);
  });

  it('lets flags beat the environment, and the environment beat the file', () => {
    const env = { SETTLE_CONFIG: example, SETTLE_STABLE_FOR: '5', SETTLE_PATTERN: 'env_*.csv', DATABASE_URL: 'postgres://env/db' };
    const s = resolveSettings({ stableFor: '0' }, env);
    expect(s.stableForSeconds).toBe(0);
    expect(s.pattern).toBe('env_*.csv');
    expect(s.databaseUrl).toBe('postgres://env/db');
    expect(s.ledger).toBe('/srv/settle/settle-ledger.sqlite');
  });

  it('has the documented defaults', () => {
    const s = resolveSettings({}, {});
    expect(s).toMatchObject({
      pattern: 'settle_*.csv',
      ledger: './settle-ledger.sqlite',
      schema: 'settle',
      stableForSeconds: 30,
      claimLeaseSeconds: 7200,
      dbTimeoutSeconds: 60,
    });
  });

  it('takes the finance database timeout from --db-timeout, SETTLE_DB_TIMEOUT or "dbTimeout"', () => {
    expect(resolveSettings({ dbTimeout: '2' }, { SETTLE_DB_TIMEOUT: '5' }).dbTimeoutSeconds).toBe(2);
    expect(resolveSettings({}, { SETTLE_DB_TIMEOUT: '5' }).dbTimeoutSeconds).toBe(5);
  });

  it.each([
    [{ stableFor: 'soon' }, 'expected a duration such as 30, 30s, 90m, 1h30m, 26h or 2d'],
    [{ stableFor: '30m1h' }, 'expected a duration'],
    [{ schema: 'Finance; DROP' }, 'lower-case SQL identifier'],
    [{ claimLease: '5' }, 'too short'],
    [{ dbTimeout: '0' }, 'at least 1s'],
    [{ config: '/nonexistent.json' }, 'cannot be read'],
  ])('refuses %j as bad configuration', (flags, words) => {
    expect(() => resolveSettings(flags, {})).toThrow(UsageError);
    expect(() => resolveSettings(flags, {})).toThrow(words);
  });

  it('takes the record-size limit from a flag, the environment or the config file, 1 MiB by default, into the layout', () => {
    expect(resolveSettings({}, {}).layout.maxRecordBytes).toBe(1024 * 1024);
    expect(resolveSettings({}, { SETTLE_MAX_RECORD_BYTES: '65536' }).layout.maxRecordBytes).toBe(65536);
    expect(resolveSettings({ maxRecordBytes: '4096' }, { SETTLE_MAX_RECORD_BYTES: '65536' }).layout.maxRecordBytes).toBe(4096);
    const dir = mkdtempSync(join(tmpdir(), 'settle-settings-'));
    const config = join(dir, 'c.json');
    writeFileSync(config, JSON.stringify({ maxRecordBytes: 2048, layout: { columns: [{ name: 'id', type: 'text' }], naturalKey: 'id' } }));
    expect(resolveSettings({ config }, {}).layout).toMatchObject({ naturalKey: ['id'], maxRecordBytes: 2048 });
  });

  it.each(['0', '1023', '1.5', '1MiB', '-5', String(64 * 1024 * 1024 + 1)])('refuses %j as a record-size limit', (value) => {
    expect(() => resolveSettings({ maxRecordBytes: value }, {})).toThrow(/--max-record-bytes: expected a whole number of bytes/);
  });

  it.each([
    ['30', 30],
    ['30s', 30],
    ['90m', 5400],
    ['1h30m', 5400],
    ['26h', 93_600],
    ['2d', 172_800],
    ['1d2h', 93_600],
    [45, 45],
  ])('reads the duration %j as %d seconds, for every duration setting', (value, seconds) => {
    const s = resolveSettings(
      { stableFor: value, maxWait: value, ledgerTimeout: value, dbTimeout: value },
      { SETTLE_MAX_AGE: String(value) },
    );
    expect([s.stableForSeconds, s.maxWaitSeconds, s.ledgerTimeoutSeconds, s.dbTimeoutSeconds, s.maxAgeSeconds]).toEqual(
      Array(5).fill(seconds),
    );
  });

  it('puts archive, duplicates and rejected beside the intake', () => {
    expect(siblingFolder('/srv/settle/intake', 'archive')).toBe('/srv/settle/archive');
    expect(siblingFolder('/srv/settle/intake/', 'rejected')).toBe('/srv/settle/rejected');
  });
});
