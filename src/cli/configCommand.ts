import type { Command } from 'commander';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from '../config/optionTable.js';
import { defaultText, shownDefault } from '../config/optionSpec.js';
import { resolvePartners, type RawFlags, type Settings } from '../config/settings.js';
import { ConfigPicks, type Picked } from '../config/settingPicker.js';
import { partnerReader } from '../config/settingValues.js';
import { kindShownDefaults } from '../config/intakeSettings.js';
import { configJsonSchema } from '../config/jsonSchema.js';
import { redactSecrets } from '../redactSecrets.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
import { textTable } from '../report/textTable.js';

export interface EffectiveSetting {
  /** with `"partners"` in the config file: the partner a setting is for; null for the shared ones */
  partner?: string | null;
  setting: string;
  /** null: not set, and no default */
  value: string | null;
  source: 'flag' | 'environment' | 'file' | 'default';
  /** the flag, variable or config file entry that gave it */
  from: string | null;
}

/** The libpq variables node-postgres reads for both the finance database and a PostgreSQL ledger. */
const LIBPQ = ['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE', 'PGPASSWORD', 'PGPASSFILE', 'PGSSLMODE', 'PGSSLROOTCERT'] as const;
const SECRET = /password|passphrase/i;

/** What `config` shows for the kinds' keys nothing set, by the kinds' settings (one object for the partners that share them). */
const kindDefaults = new WeakMap<Settings['kindSettings'], Partial<Record<SettingKey, string>>>();

/** Each key's typed default as text (a duration written out), once: what nothing set is the same for every partner. */
const typedDefaults = new Map(
  SETTING_KEYS.map((key): [SettingKey, string | undefined] => {
    const spec: OptionSpec = OPTION_TABLE[key];
    return [key, spec.kind === 'switch' ? undefined : defaultText(spec)];
  }),
);

/** The value the settings hold for one key when nothing set it: the default, shown as the run sees it. */
function defaultOf(key: SettingKey, s: Settings): string | null {
  const spec: OptionSpec = OPTION_TABLE[key];
  const typed = typedDefaults.get(key);
  if (typed !== undefined) return typed;
  if (key === 'archive' || key === 'duplicates' || key === 'rejected') return s.intake ? (spec.shownDefault ?? null) : null;
  if (key === 'staging') return s.staging;
  if (key === 'databaseUrl') return LIBPQ.some((k) => process.env[k]) ? 'from the PG* variables' : null;
  let kinds = kindDefaults.get(s.kindSettings);
  if (kinds === undefined) kindDefaults.set(s.kindSettings, (kinds = kindShownDefaults(s.kindSettings)));
  if (key in kinds) return String(kinds[key]);
  return shownDefault(spec) ?? null;
}

function shown(key: string, value: unknown): string {
  if (SECRET.test(key)) return '***';
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.join(',');
  if (key === 'expect' && value && typeof value === 'object') return JSON.stringify(value);
  if (key === 'layout' && value && typeof value === 'object')
    return `custom (${(value as { columns?: unknown[] }).columns?.length ?? 0} columns)`;
  return JSON.stringify(value);
}

/** A shared pick's value as `config` shows it (ConfigPicks: one Picked for the partners that do not set the key), by the pick. */
const shownShared = new WeakMap<Picked, string>();

/**
 * Every setting's effective value, secrets hidden, and where it came from; with `"partners"`,
 * the shared settings once and then each chosen partner's own. Invalid settings are refused first.
 */
export function effectiveConfig(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): EffectiveSetting[] {
  const { partners, named, config } = resolvePartners(flags, env);
  const picks = new ConfigPicks(config, flags, env);
  const out: EffectiveSetting[] = [];
  if (flags.config ?? env.SETTLE_CONFIG) {
    const from = flags.config !== undefined ? '--config' : 'SETTLE_CONFIG';
    out.push({
      ...(named ? { partner: null } : {}),
      setting: 'config',
      value: String(flags.config ?? env.SETTLE_CONFIG),
      source: from === '--config' ? 'flag' : 'environment',
      from,
    });
  }
  /** Each of `keys` of one partner's settings, onto `out`. */
  const effective = (settings: Settings, keys: SettingKey[], partner: string | null | undefined): void => {
    const partnerPicks = picks.partner(named ? settings.partner : undefined);
    const read = partnerReader(partnerPicks);
    // a path as the run takes it: a relative one in the file is the file's folder's
    const shownValue = (key: SettingKey, picked: Picked) => shown(key, (OPTION_TABLE[key] as OptionSpec).path ? read(key) : picked.value);
    for (const key of keys) {
      const picked = partnerPicks.pick(key);
      let value: string | null;
      if (picked === undefined) value = defaultOf(key, settings);
      else if (partnerPicks.owns(key)) value = shownValue(key, picked);
      else {
        value = shownShared.get(picked) ?? shownValue(key, picked);
        shownShared.set(picked, value);
      }
      const source = picked?.source ?? 'default';
      const from = picked?.from ?? null;
      // a literal of its own for each shape: 660,000 rows for 20,000 partners, where a spread first is slow to add to
      out.push(partner === undefined ? { setting: key, value, source, from } : { partner, setting: key, value, source, from });
    }
  };
  const shared = (key: SettingKey) => (OPTION_TABLE[key] as OptionSpec).scope === 'shared';
  const ownKeys = SETTING_KEYS.filter((k) => !shared(k));
  if (!named) effective(partners[0]!, SETTING_KEYS, undefined);
  else {
    effective(partners[0]!, SETTING_KEYS.filter(shared), null);
    for (const settings of partners) effective(settings, ownKeys, settings.partner);
  }
  for (const variable of LIBPQ) {
    if (env[variable])
      out.push({
        ...(named ? { partner: null } : {}),
        setting: variable,
        value: shown(variable, env[variable]),
        source: 'environment',
        from: variable,
      });
  }
  return out;
}

export function registerConfig(program: Command): void {
  withSettingOptions(program.command('config'), 'config')
    .description('print the effective configuration (secrets hidden) and where each value came from: flag, environment, file, default')
    .action((flags: RawFlags & { json?: boolean; jsonSchema?: boolean }) => {
      if (flags.jsonSchema) {
        // the file's shape, not its values: nothing is read, so it works before there is a config
        process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
        return;
      }
      const settings = effectiveConfig(flags);
      if (flags.json) {
        process.stdout.write(`${jsonDocument({ settings })}\n`);
        return;
      }
      const byPartner = settings.some((e) => e.partner !== undefined);
      const row = (e: EffectiveSetting) => [e.setting, e.value ?? '(not set)', e.from ? `${e.source} ${e.from}` : e.source];
      process.stdout.write(
        byPartner
          ? `${textTable(
              ['partner', 'setting', 'value', 'from'],
              settings.map((e) => [e.partner ?? '(all)', ...row(e)]),
            )}\n`
          : `${textTable(['setting', 'value', 'from'], settings.map(row))}\n`,
      );
    });
}
