import { describe, expect, it } from 'vitest';
import { intakeKindKeys, kindSettingsFrom } from '../../src/config/intakeSettings.js';
import { OPTION_TABLE, SETTING_KEYS, optionRows, optionsOf } from '../../src/config/optionTable.js';
import type { IntakeKind } from '../../src/intake/intakeKind.js';
import { resolveSettings } from '../../src/config/settings.js';
import { UsageError } from '../../src/errors.js';
import { INTAKE_KINDS, kindOf } from '../../src/intake/openIntake.js';
import { sftpKind, type SftpSettings } from '../../src/intake/sftp/kind.js';

/** The usage error a call throws; fails the test when it throws nothing else. */
function usageError(call: () => unknown): UsageError {
  try {
    call();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error('expected a usage error');
}

describe('the intake-kind registry', () => {
  it("gathers each kind's own settings into the option table, marked with the kind, in the kind's order", () => {
    const kinds: readonly IntakeKind[] = INTAKE_KINDS;
    const marked = intakeKindKeys();
    expect(marked.length).toBeGreaterThan(0);
    for (const { key, kind } of marked) {
      const owners = kinds.filter((candidate) => Object.hasOwn(candidate.options, key));
      expect(
        owners.map((owner) => owner.name),
        key,
      ).toEqual([kind]);
    }
    for (const kind of kinds) {
      const keys = Object.keys(kind.options);
      expect(SETTING_KEYS.filter((key) => keys.includes(key))).toEqual(keys);
      for (const key of keys) {
        expect(OPTION_TABLE[key as keyof typeof OPTION_TABLE], `${kind.name}: ${key}`).toEqual({
          ...kind.options[key],
          intakeKind: kind.name,
          commands: expect.any(Array),
        });
      }
    }
  });

  it("gives a kind's settings to every command that reaches an intake, and to no other", () => {
    const reaching = ['run', 'watch', 'audit', 'evidence', 'adopt', 'config', 'doctor'] as const;
    for (const command of reaching)
      expect(optionsOf(command).map((o) => o.key)).toEqual(expect.arrayContaining(Object.keys(sftpKind.options)));
    for (const command of ['migrate', 'report', 'history', 'status', 'check', 'waive'] as const) {
      expect(optionsOf(command).filter((o) => Object.hasOwn(sftpKind.options, o.key))).toEqual([]);
    }
  });

  it('refuses a kind that declares a setting the table or another kind has already', () => {
    const stray = { ...sftpKind, name: 'stray', options: { schema: sftpKind.options.sftpKey } };
    expect(() => optionRows([sftpKind, stray])).toThrow(
      'intake kind "stray" declares the setting "schema", which the option table has already',
    );
    const twin = { ...sftpKind, name: 'twin' };
    expect(() => optionRows([sftpKind, twin])).toThrow(
      'intake kind "twin" declares the setting "sftpKey", which the option table has already',
    );
  });

  it('has one kind per name and per scheme, and one for a local folder', () => {
    const names = INTAKE_KINDS.map((kind) => kind.name);
    const schemes = INTAKE_KINDS.map((kind) => kind.scheme);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(schemes).size).toBe(schemes.length);
    expect(schemes).toContain(null);
    expect(kindOf('/srv/settle/intake').scheme).toBeNull();
    expect(kindOf('SFTP://in@sftp.example/out').name).toBe('sftp');
  });

  it('refuses a scheme no kind answers with the usage error naming the setting and the kinds there are', () => {
    const err = usageError(() => resolveSettings({ intake: 'ftp://in@ftp.example/out' }, {}));
    expect(err.message).toBe('--intake: "ftp://in@ftp.example/out" must be a local folder or sftp://user@host[:port]/path');
    expect(err.exitStatus).toBe(2);
    const fromEnv = usageError(() => resolveSettings({}, { SETTLE_INTAKE: 's3://bucket/in' }));
    expect(fromEnv.message).toMatch(/^SETTLE_INTAKE: "s3:\/\/bucket\/in" must be a local folder or /);
  });

  it("puts the SFTP kind's own settings in its part of kindSettings, and nothing of it beside the intake", () => {
    const s = resolveSettings(
      { intake: 'sftp://in@sftp.example/out', sftpTimeout: '5m', hostKeyFingerprint: 'SHA256:abc', knownHosts: '/etc/ssh/known' },
      { SETTLE_SFTP_KEY_PASSPHRASE: 'secret', SSH_AUTH_SOCK: '/run/agent.sock' },
    );
    expect(s.kindSettings.sftp as SftpSettings).toEqual({
      keyPath: undefined,
      keyPassphrase: 'secret',
      password: undefined,
      agentSocket: '/run/agent.sock',
      knownHosts: '/etc/ssh/known',
      hostKeyFingerprint: 'SHA256:abc',
      timeoutSeconds: 300,
      minBytesPerSecond: 1024,
    });
    expect(Object.keys(s.kindSettings).sort()).toEqual(INTAKE_KINDS.map((kind) => kind.name).sort());
    expect(s).not.toHaveProperty('sftp');
  });

  it('still refuses a wrong setting of the SFTP kind when the intake is a local folder', () => {
    const err = usageError(() => resolveSettings({ intake: '/srv/settle/intake', sftpTimeout: '0' }, {}));
    expect(err.message).toBe('--sftp-timeout: "0" is too short: at least 1s (a server must have time to answer)');
  });

  it('lets a kind read only the keys the option table gives it, as the type they are', () => {
    const read = ((key: string) => ({ sftpTimeout: 30, schema: 'settle' })[key]) as Parameters<typeof kindSettingsFrom>[0];
    const stray = { ...sftpKind, settings: (own: { text(key: string): unknown }) => own.text('schema') };
    expect(() => kindSettingsFrom(read, {}, [stray])).toThrow(
      'intake kind "sftp" reads "schema", a setting the option table does not give it',
    );
    const misread = { ...sftpKind, settings: (own: { text(key: string): unknown }) => own.text('sftpTimeout') };
    expect(() => kindSettingsFrom(read, {}, [misread])).toThrow('intake kind "sftp" reads "sftpTimeout" as a string');
    expect(kindSettingsFrom(read, { HOME: '/home/settle' }, [sftpKind]).sftp).toMatchObject({
      timeoutSeconds: 30,
      knownHosts: '/home/settle/.ssh/known_hosts',
    });
  });
});

describe("the registry's reading of a recorded location", () => {
  it('gives the path on the server and the place without its login, whatever the name holds (a line break too)', async () => {
    const { locationPath, placeWithoutLogin } = await import('../../src/intake/openIntake.js');
    expect(locationPath('sftp://127.0.0.1:2222/archive/settle_n\n01.csv')).toBe('/archive/settle_n\n01.csv');
    expect(placeWithoutLogin('sftp://alpha@127.0.0.1:2222/archive/settle_n\n01.csv')).toBe(
      'sftp://127.0.0.1:2222/archive/settle_n\n01.csv',
    );
    expect(placeWithoutLogin('sftp://127.0.0.1:2222/archive/x.csv')).toBe('sftp://127.0.0.1:2222/archive/x.csv');
    // a local location is a path already
    expect(locationPath('/srv/settle/archive/x.csv')).toBe('/srv/settle/archive/x.csv');
    expect(placeWithoutLogin('/srv/settle/archive/x.csv')).toBe('/srv/settle/archive/x.csv');
  });
});
