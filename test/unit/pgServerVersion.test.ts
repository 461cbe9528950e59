import { describe, expect, it } from 'vitest';
import { refuseUnsupportedServer } from '../../src/db/pgMigrate.js';
import { UsageError } from '../../src/errors.js';

describe('the PostgreSQL releases migrate accepts', () => {
  it('refuses a server older than 14, naming its version (exit 2)', () => {
    const refused = (() => {
      try {
        refuseUnsupportedServer(130016, '13.16');
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(UsageError);
    expect((refused as UsageError).exitStatus).toBe(2);
    expect((refused as UsageError).message).toBe(
      'PostgreSQL 13.16 is older than 14, the oldest release settle-ingest supports: upgrade the server',
    );
    expect(() => refuseUnsupportedServer(90624, '9.6.24')).toThrow(/^PostgreSQL 9\.6\.24 is older than 14/);
  });

  it('takes 14.0 and every later release, a beta included', () => {
    for (const [num, version] of [
      [140000, '14.0'],
      [140023, '14.23'],
      [180004, '18.4'],
      [190000, '19beta1'],
    ] as const) {
      expect(() => refuseUnsupportedServer(num, version)).not.toThrow();
    }
  });
});
