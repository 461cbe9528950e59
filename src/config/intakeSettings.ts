import { INTAKE_KINDS, type KindSettings } from '../intake/openIntake.js';
import type { IntakeKind, OwnSettingReader } from '../intake/intakeKind.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from './optionTable.js';
import type { SettingReader } from './settingValues.js';

/** The option keys the option table marks for an intake kind (`intakeKind`), with the kind's name. */
export function intakeKindKeys(): { key: SettingKey; kind: string }[] {
  return SETTING_KEYS.flatMap((key) => {
    const spec: OptionSpec = OPTION_TABLE[key];
    return spec.intakeKind === undefined ? [] : [{ key, kind: spec.intakeKind }];
  });
}

/**
 * What one kind may read: the keys it owns, each parsed by its kind in the option table. A key
 * it does not own, or of another type than asked, is a mistake in the code, not in the settings.
 */
function ownReader(kind: IntakeKind, read: SettingReader, env: NodeJS.ProcessEnv): OwnSettingReader {
  const owned = (key: string, type: 'string' | 'number'): unknown => {
    const spec: OptionSpec | undefined = OPTION_TABLE[key as SettingKey];
    if (!Object.hasOwn(kind.options, key) || spec?.intakeKind !== kind.name) {
      throw new Error(`intake kind "${kind.name}" reads "${key}", a setting the option table does not give it`);
    }
    const value: unknown = read(key as SettingKey);
    if (value !== undefined && typeof value !== type) throw new Error(`intake kind "${kind.name}" reads "${key}" as a ${type}`);
    return value;
  };
  return {
    text: (key) => owned(key, 'string') as string | undefined,
    number: (key) => owned(key, 'number') as number | undefined,
    env: (name) => env[name],
  };
}

/** Every registered kind's own settings (`kinds`: the registry), each read and refused when wrong whatever kind the intake is. */
export function kindSettingsFrom(read: SettingReader, env: NodeJS.ProcessEnv, kinds: readonly IntakeKind[] = INTAKE_KINDS): KindSettings {
  return Object.fromEntries(kinds.map((kind) => [kind.name, kind.settings(ownReader(kind, read, env))]));
}

/** What `config` shows for the kinds' keys nothing set, where the default depends on the machine. */
export function kindShownDefaults(kindSettings: KindSettings): Partial<Record<SettingKey, string>> {
  const shown: Partial<Record<SettingKey, string>> = {};
  for (const kind of INTAKE_KINDS as readonly IntakeKind[]) Object.assign(shown, kind.shownDefaults(kindSettings[kind.name]));
  return shown;
}
