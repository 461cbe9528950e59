import { OPTION_TABLE, type OptionSpec, type SettingKey } from './optionTable.js';
import { readConfigFile, type ConfigFile } from './configFile.js';

/** The flags as commander gives them: each setting's, and `--config` and `--partner`. */
export type RawFlags = Partial<Record<SettingKey | 'config' | 'partner', unknown>>;

/** Where a setting's value came from, highest first. */
export type SettingSource = 'flag' | 'environment' | 'file';

export interface Picked {
  value: unknown;
  /** the flag, variable or file entry, for messages */
  from: string;
  source: SettingSource;
  /** a path setting from the config file: the file's folder, which the path is relative to */
  base?: string;
}

/**
 * The one precedence rule: a setting's value from a flag, else the environment, else the
 * partner's own entry under `"partners"`, else the top of the config file.
 */
export function settingPicker(
  flags: RawFlags,
  env: NodeJS.ProcessEnv = process.env,
  partner?: string,
): (key: SettingKey) => Picked | undefined {
  return pickerFor(loadConfig(flags, env), flags, env, partner);
}

export function loadConfig(flags: RawFlags, env: NodeJS.ProcessEnv): ConfigFile | undefined {
  const configPath = (flags.config as string | undefined) ?? env.SETTLE_CONFIG;
  return configPath ? readConfigFile(configPath) : undefined;
}

/** The picker of one partner (undefined: the top of the file) over a config file already read; see settingPicker. */
export function pickerFor(
  config: ConfigFile | undefined,
  flags: RawFlags,
  env: NodeJS.ProcessEnv,
  partner: string | undefined,
): (key: SettingKey) => Picked | undefined {
  const own = partner === undefined ? undefined : config?.partners?.get(partner);
  const fromFile = (entries: Record<string, unknown>, key: SettingKey, where: string): Picked => {
    const spec: OptionSpec = OPTION_TABLE[key];
    return {
      value: entries[key],
      from: `${config!.path}: ${where}"${key}"`,
      source: 'file',
      ...(spec.path ? { base: config!.dir } : {}),
    };
  };
  return (key: SettingKey): Picked | undefined => {
    const spec: OptionSpec = OPTION_TABLE[key];
    if (flags[key] !== undefined) return { value: flags[key], from: spec.flag ?? key, source: 'flag' };
    if (spec.env && env[spec.env] !== undefined && env[spec.env] !== '')
      return { value: env[spec.env], from: spec.env, source: 'environment' };
    if (own?.[key] !== undefined) return fromFile(own, key, `"partners"."${partner}".`);
    if (config?.top[key] !== undefined) return fromFile(config.top, key, '');
    return undefined;
  };
}
