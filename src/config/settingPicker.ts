import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from './optionTable.js';
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
  return new ConfigPicks(config, flags, env).partner(partner).pick;
}

/** One partner's picks (see ConfigPicks.partner). */
export interface PartnerPicks {
  /** the setting's value and where it came from, by the precedence rule (settingPicker) */
  pick: (key: SettingKey) => Picked | undefined;
  /**
   * the keys the partner's own entry gives and no flag or variable overrides, in the option
   * table's order: the only ones whose Picked is the partner's own; every other key's is the
   * same object for all the partners of `shared`
   */
  own: readonly SettingKey[];
  /** whether `key` is among `own` */
  owns: (key: SettingKey) => boolean;
  /** what all the partners share */
  shared: ConfigPicks;
}

/** A key's picks from outside a partner's own entry: a flag's or a variable's, which win over it, and the top of the file's, which it overrides. */
interface OutsidePicks {
  above: Picked | undefined;
  top: Picked | undefined;
}

/** Each key's place in the option table, to put a partner's own keys in its order. */
const TABLE_PLACE = new Map(SETTING_KEYS.map((key, at) => [key, at]));

/**
 * The picks of every partner of one config file under one set of flags and variables (the
 * precedence rule of settingPicker). What no partner sets itself (a flag, a variable, the top of
 * the file) is picked once, one Picked object for them all, so what is read from it can be read
 * once for them all too (settingValues.ts's partnerReader): a config of 20,000 partners that set
 * four keys each picks 80,000 own settings and the shared ones once, not 80 settings 20,000 times.
 */
export class ConfigPicks {
  private readonly outside = new Map<SettingKey, OutsidePicks>();

  constructor(
    readonly config: ConfigFile | undefined,
    readonly flags: RawFlags,
    readonly env: NodeJS.ProcessEnv,
  ) {
    for (const key of SETTING_KEYS) {
      const spec: OptionSpec = OPTION_TABLE[key];
      const envValue = spec.env ? env[spec.env] : undefined;
      const above: Picked | undefined =
        flags[key] !== undefined
          ? { value: flags[key], from: spec.flag ?? key, source: 'flag' }
          : envValue !== undefined && envValue !== ''
            ? { value: envValue, from: spec.env!, source: 'environment' }
            : undefined;
      const top = config?.top[key] !== undefined ? this.fromFile(config.top, key, '') : undefined;
      this.outside.set(key, { above, top });
    }
  }

  /** The picks of one partner of the file (undefined: the top of the file alone, as without `"partners"`). */
  partner(name: string | undefined): PartnerPicks {
    const entries = name === undefined ? undefined : this.config?.partners?.get(name);
    // the partner's own keys in table order (as a file usually has them already), each with its Picked, made once
    const own =
      entries === undefined
        ? []
        : (Object.keys(entries) as SettingKey[]).filter((key) => entries[key] !== undefined && this.outside.get(key)!.above === undefined);
    const place = (at: number) => TABLE_PLACE.get(own[at]!)!;
    if (own.some((_, at) => at > 0 && place(at - 1) > place(at))) own.sort((a, b) => TABLE_PLACE.get(a)! - TABLE_PLACE.get(b)!);
    const where = `"partners"."${name}".`;
    const ownPicks = own.map((key) => this.fromFile(entries!, key, where));
    const pick = (key: SettingKey): Picked | undefined => {
      const at = own.indexOf(key);
      if (at >= 0) return ownPicks[at];
      const { above, top } = this.outside.get(key)!;
      return above ?? top;
    };
    return { pick, own, owns: (key) => own.includes(key), shared: this };
  }

  private fromFile(entries: Record<string, unknown>, key: SettingKey, where: string): Picked {
    const spec: OptionSpec = OPTION_TABLE[key];
    return {
      value: entries[key],
      from: `${this.config!.path}: ${where}"${key}"`,
      source: 'file',
      ...(spec.path ? { base: this.config!.dir } : {}),
    };
  }
}
