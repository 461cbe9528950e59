import type { Command } from 'commander';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from '../config/optionTable.js';
import { defaultText, shownDefault } from '../config/optionSpec.js';
import { resolvePartners, type RawFlags, type Settings } from '../config/settings.js';
import { pickerFor } from '../config/settingPicker.js';
import { settingReader } from '../config/settingValues.js';
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

/** The value the settings hold for one key when nothing set it: the default, shown as the run sees it. */
function defaultOf(key: SettingKey, s: Settings): string | null {
  const spec: OptionSpec = OPTION_TABLE[key];
  const typed = spec.kind === 'switch' ? undefined : defaultText(spec);
  if (typed !== undefined) return typed;
  const v: Partial<Record<SettingKey, unknown>> = {
    archive: s.intake ? OPTION_TABLE.archive.shownDefault : null,
    duplicates: s.intake ? OPTION_TABLE.duplicates.shownDefault : null,
    rejected: s.intake ? OPTION_TABLE.rejected.shownDefault : null,
    ...kindShownDefaults(s.kindSettings),
    staging: s.staging,
    databaseUrl: LIBPQ.some((k) => process.env[k]) ? 'from the PG* variables' : null,
  };
  if (key in v) return v[key] === null ? null : String(v[key]);
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

/**
 * Every setting's effective value, secrets hidden, and where it came from; with `"partners"`,
 * the shared settings once and then each chosen partner's own. Invalid settings are refused first.
 */
export function effectiveConfig(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): EffectiveSetting[] {
  const { partners, named, config } = resolvePartners(flags, env);
  const effective = (settings: Settings, keys: SettingKey[], partner: string | null | undefined): EffectiveSetting[] => {
    const pick = pickerFor(config, flags, env, named ? settings.partner : undefined);
    const read = settingReader(pick);
    return keys.map((key) => {
      const picked = pick(key);
      const where = partner === undefined ? {} : { partner };
      // a path as the run takes it: a relative one in the file is the file's folder's
      const value = (OPTION_TABLE[key] as OptionSpec).path ? read(key) : picked?.value;
      if (picked) return { ...where, setting: key, value: shown(key, value), source: picked.source, from: picked.from };
      return { ...where, setting: key, value: defaultOf(key, settings), source: 'default', from: null };
    });
  };
  const shared = (key: SettingKey) => (OPTION_TABLE[key] as OptionSpec).scope === 'shared';
  const out: EffectiveSetting[] = named
    ? [
        ...effective(partners[0]!, SETTING_KEYS.filter(shared), null),
        ...partners.flatMap((s) =>
          effective(
            s,
            SETTING_KEYS.filter((k) => !shared(k)),
            s.partner,
          ),
        ),
      ]
    : effective(partners[0]!, SETTING_KEYS, undefined);
  if (flags.config ?? env.SETTLE_CONFIG) {
    const from = flags.config !== undefined ? '--config' : 'SETTLE_CONFIG';
    out.unshift({
      ...(named ? { partner: null } : {}),
      setting: 'config',
      value: String(flags.config ?? env.SETTLE_CONFIG),
      source: from === '--config' ? 'flag' : 'environment',
      from,
    });
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
      const rows = settings.map((effectiveSetting) => [
        effectiveSetting.setting,
        effectiveSetting.value ?? '(not set)',
        effectiveSetting.from ? `${effectiveSetting.source} ${effectiveSetting.from}` : effectiveSetting.source,
      ]);
      const byPartner = settings.some((e) => e.partner !== undefined);
      process.stdout.write(
        byPartner
          ? `${textTable(
              ['partner', 'setting', 'value', 'from'],
              settings.map((e, i) => [e.partner ?? '(all)', ...rows[i]!]),
            )}\n`
          : `${textTable(['setting', 'value', 'from'], rows)}\n`,
      );
    });
}
