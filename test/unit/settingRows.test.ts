import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  commandFlagDefault,
  commandFlagsOf,
  COMMAND_FLAGS,
  OPTION_TABLE,
  SETTING_KEYS,
  type OptionSpec,
} from '../../src/config/optionTable.js';
import { COMPOSED, type Settings } from '../../src/config/partnerSettings.js';
import { resolveSettings } from '../../src/config/settings.js';
import type { PartnerLoopSettings } from '../../src/pipeline/partnerLoop.js';

/** A row's field in Settings, as partnerSettings.ts derives it: a duration's name says its unit. */
const fieldOf = (key: string, spec: OptionSpec) => (spec.kind === 'duration' ? `${key}Seconds` : key);

describe('each setting declared once, in its row', () => {
  it('gives every row that is read as it is a field of Settings: its typed default when nothing sets it', () => {
    const settings = resolveSettings({}, {}) as unknown as Record<string, unknown>;
    let flat = 0;
    for (const key of SETTING_KEYS) {
      const spec: OptionSpec = OPTION_TABLE[key];
      const field = fieldOf(key, spec);
      if ((COMPOSED as readonly string[]).includes(key) || spec.intakeKind !== undefined) continue;
      expect(settings, key).toHaveProperty(field);
      flat += 1;
      expect(settings[field], key).toEqual(spec.default);
    }
    expect(flat).toBeGreaterThan(20);
    // a duration's field is in seconds, as its row's default is
    expect(settings.stableForSeconds).toBe(30);
    expect(settings).not.toHaveProperty('stableFor');
  });

  it('gives a set value its row’s type, read by its row’s kind', () => {
    const settings = resolveSettings({ stableFor: '2m', maxWaitingRuns: '5', readyMarker: '.done' }, { SETTLE_AUDIT_QUICK: 'yes' });
    expect([settings.stableForSeconds, settings.maxWaitingRuns, settings.readyMarker, settings.quick]).toEqual([120, 5, '.done', true]);
  });

  it('types Settings and the partner loop from the rows', () => {
    expectTypeOf<Settings['stableForSeconds']>().toEqualTypeOf<number>();
    expectTypeOf<Settings['readyMarker']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Settings['mode']>().toEqualTypeOf<'scheduled' | 'manual' | undefined>();
    expectTypeOf<Settings['quick']>().toEqualTypeOf<boolean>();
    // an intake kind's settings are its own, in kindSettings
    expectTypeOf<Settings>().not.toHaveProperty('sftpTimeout');
    // the settings are what the partner loop (and the run it hands them to) reads
    expectTypeOf<Settings>().toMatchTypeOf<PartnerLoopSettings>();
  });

  it("writes a command flag's default once: its help says it, the command reads it", () => {
    const help = (command: string, key: string) => commandFlagsOf(command).find((own) => own.key === key)?.description;
    expect(help('watch', 'poll')).toBe('how often an SFTP intake is listed, and the longest wait between cycles (default 60s)');
    expect(commandFlagDefault('poll', 'watch')).toBe('60s');
    expect(help('report deliveries', 'weeks')).toBe('how many weeks back (default 4)');
    expect(help('report skips', 'weeks')).toBe('how many weeks back (default 8)');
    for (const [key, spec] of Object.entries(COMMAND_FLAGS)) {
      for (const command of spec.commands) {
        const fallback = commandFlagDefault(key as keyof typeof COMMAND_FLAGS, command);
        if (fallback !== undefined) expect(help(command, key), `${command} ${spec.flag}`).toMatch(new RegExp(`\\(default ${fallback}\\)$`));
      }
    }
  });
});
