import { UsageError } from '../errors.js';
import { folderPlaces, type FolderPlace } from '../intake/openIntake.js';
import type { FolderLooks } from '../intake/intakeKind.js';
import { createTableSql } from '../finance/layoutTable.js';
import type { Layout } from '../layout/model/layout.js';
import { PRESETS } from '../layout/model/presets.js';
import { DEFAULT_PARTNER } from '../ledger/types.js';
import { nearest } from '../nearest.js';
import { PARTNER_NAME, type ConfigFile } from './configFile.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec } from './optionTable.js';
import { settingsFrom, settingsMemo, type Settings } from './partnerSettings.js';
import { ConfigPicks, loadConfig, type RawFlags } from './settingPicker.js';

/** The chosen partners' settings, each resolved and checked; see resolvePartners. */
export interface PartnerSelection {
  /** the partners chosen (by --partner or SETTLE_PARTNER; else all), in the config file's order */
  partners: Settings[];
  /** every partner the config file names; `default` alone without `"partners"` */
  configured: string[];
  /** their settings, as the file gives them (a flag for a partner's own setting applies to the one chosen) */
  all: Settings[];
  /** the config file names its partners (`"partners"`) */
  named: boolean;
  /** the --partner filter: the chosen partners' names when --partner or SETTLE_PARTNER chose them; undefined when none was asked for (all) */
  asked: string[] | undefined;
  /** the config file, as read once for all of them; undefined without one */
  config: ConfigFile | undefined;
}

/** `--partner a --partner b`, `--partner a,b` or SETTLE_PARTNER=a,b; undefined when none is given. */
function askedPartners(flags: RawFlags, env: NodeJS.ProcessEnv): { names: string[]; from: string } | undefined {
  const given =
    flags.partner !== undefined
      ? { value: flags.partner, from: '--partner' }
      : env.SETTLE_PARTNER
        ? { value: env.SETTLE_PARTNER, from: 'SETTLE_PARTNER' }
        : undefined;
  if (!given) return undefined;
  const names = [given.value]
    .flat()
    .flatMap((v) => String(v).split(','))
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (names.length === 0) throw new UsageError(`${given.from}: expected a partner name`);
  return { names: [...new Set(names)], from: given.from };
}

/**
 * Every partner's settings, resolved and checked before anything is touched (a mistake in any
 * partner's is exit 2 naming it and the key), then the ones asked for. Without `"partners"`
 * the config is one partner, `default`. `unconfigured: 'allow'` (the reports): a name the
 * config does not know still filters what the ledger shows, when the config names no partners.
 */
export function resolvePartners(
  flags: RawFlags,
  env: NodeJS.ProcessEnv = process.env,
  opts: { unconfigured?: 'refuse' | 'allow' } = {},
): PartnerSelection {
  const config = loadConfig(flags, env);
  const named = config?.partners !== undefined;
  const configured = named ? [...config.partners!.keys()] : [DEFAULT_PARTNER];
  const memo = settingsMemo();
  const resolveOne = (partner: string, picks: ConfigPicks) => settingsFrom(picks.partner(named ? partner : undefined), partner, memo);
  // every partner is checked as the file has it, before any is chosen: a mistake anywhere is exit 2
  const own = ownSettingsGiven(flags, env);
  const filePicks = named ? new ConfigPicks(config, own.flags, own.env) : new ConfigPicks(config, flags, env);
  const all = configured.map((partner) => resolveOne(partner, filePicks));
  refuseSharedFolders(all);
  refuseClashingTables(all);
  const asked = askedPartners(flags, env);
  const chosen = asked ? asked.names.map((name) => chosenPartner(name, asked.from, all, config, opts.unconfigured ?? 'refuse')) : all;
  if (chosen.length > 1 && own.given) {
    const names = chosen.map((p) => p.partner).join(', ');
    throw new UsageError(
      `${own.given} is one partner's own setting: with ${chosen.length} partners (${names}), choose one with --partner NAME, or set it per partner in the config file`,
    );
  }
  // one chosen partner takes the flags for its own settings too
  const partners = asked ? inFileOrder(chosen, configured) : [...all];
  if (named && partners.length === 1 && own.given && configured.includes(partners[0]!.partner)) {
    partners[0] = resolveOne(partners[0]!.partner, new ConfigPicks(config, flags, env));
  }
  return { partners, configured, named, all, asked: asked ? partners.map((p) => p.partner) : undefined, config };
}

/** The partners asked for, in the config file's order whatever order they were asked in (a name it does not know last). */
function inFileOrder(chosen: Settings[], configured: string[]): Settings[] {
  const places = new Map(configured.map((name, at) => [name, at]));
  const order = (p: Settings) => places.get(p.partner) ?? configured.length;
  return [...chosen].sort((a, b) => order(a) - order(b));
}

/**
 * The flags and variables without those of a partner's own settings (its intake, folders,
 * pattern, layout, keys), and the first of them given: applied to every partner they would
 * make them all the same, so they apply only to one chosen partner.
 */
function ownSettingsGiven(flags: RawFlags, env: NodeJS.ProcessEnv): { flags: RawFlags; env: NodeJS.ProcessEnv; given: string | null } {
  const rest = { flags: { ...flags }, env: { ...env }, given: null as string | null };
  for (const key of SETTING_KEYS) {
    const spec: OptionSpec = OPTION_TABLE[key];
    if (spec.scope !== 'own') continue;
    if (flags[key] !== undefined) rest.given ??= spec.flag;
    else if (spec.env && env[spec.env]) rest.given ??= spec.env;
    delete rest.flags[key];
    if (spec.env) delete rest.env[spec.env];
  }
  return rest;
}

function chosenPartner(
  name: string,
  from: string,
  all: Settings[],
  config: ConfigFile | undefined,
  unconfigured: 'refuse' | 'allow',
): Settings {
  const known = all.find((p) => p.partner === name);
  if (known) return known;
  if (config?.partners === undefined && unconfigured === 'allow' && PARTNER_NAME.test(name)) return { ...all[0]!, partner: name };
  const configured = all.map((p) => p.partner);
  const guess = nearest(name, configured);
  const where = config ? `config file ${config.path}` : 'the settings (no config file)';
  throw new UsageError(
    `${from}: no partner "${name}" in ${where} (${guess ? `did you mean "${guess}"? ` : ''}partners: ${configured.join(', ')})`,
  );
}

/**
 * Each partner's folders are its own: two partners reading one intake would take each other's
 * files, and one's archive (or duplicates, rejected) being another's intake would feed it what
 * the first moved; a final folder shared would mix two partners' evidence. Compared where the
 * folders really are (links resolved, per SFTP login and server: folderPlaces).
 */
function refuseSharedFolders(partners: Settings[]): void {
  const seen = new Map<string, { partner: string; use: FolderPlace }>();
  const realPaths: FolderLooks = new Map();
  for (const settings of partners) {
    if (!settings.intake) continue;
    for (const use of folderPlaces(settings, realPaths)) {
      const first = seen.get(use.place);
      if (first === undefined) seen.set(use.place, { partner: settings.partner, use });
      if (first === undefined || first.partner === settings.partner) continue;
      const other = { partner: first.partner, ...first.use };
      const both =
        other.folder === use.folder
          ? `${other.partner}'s ${other.role} and ${settings.partner}'s ${use.role} are both ${use.folder}`
          : `${other.partner}'s ${other.role} ${other.folder} and ${settings.partner}'s ${use.role} ${use.folder} are one folder, ${use.place}${use.folder.includes('://') ? '' : ' (links resolved)'}`;
      const hint =
        use.role === 'intake' && other.role === 'intake' ? '' : ' (archive, duplicates and rejected default to siblings of its intake)';
      throw new UsageError(
        `partners "${other.partner}" and "${settings.partner}" share one folder: ${both}: each partner needs folders of its own${hint}`,
      );
    }
  }
}

/**
 * Two partners write one finance table only when each one's layout says so: names the table
 * itself (`"table": "settlement_rows"`; a preset: `{ "extends": "default", "table": … }`). Two
 * partners left on the default layout, or on one preset, would otherwise mix their rows in one
 * table without anybody having chosen it; then, as `migrate` creates the table once, their
 * layouts must define it alike (columns, types, natural key), or one's rows could not fit it.
 */
function refuseClashingTables(partners: Settings[]): void {
  const namingHint = (layout: Layout) => {
    const preset = layout.name.replace(/ \(extended\)$/, '');
    return PRESETS.has(preset)
      ? `a preset's or the default's by extending it: "layout": { "extends": "${preset}", "table": "${layout.table}" }`
      : `a layout object of its own: "table": "${layout.table}" among its keys`;
  };
  const byTable = new Map<string, { partner: string; tableNamed: boolean; definition: string }>();
  // one definition per layout as parsed (partners share its columns) and schema: not one SQL text per partner;
  // partners that share the layout object itself (partnerSettings.ts's memo) are not even compared by shape
  const definitions = new WeakMap<Layout['columns'], Map<string, string>>();
  const byLayout = new Map<Layout, Map<string, string>>();
  const definitionOf = (schema: string, layout: Layout): string => {
    let bySchema = byLayout.get(layout);
    if (bySchema === undefined) byLayout.set(layout, (bySchema = new Map<string, string>()));
    let definition = bySchema.get(schema);
    if (definition === undefined) bySchema.set(schema, (definition = definitionByShape(schema, layout)));
    return definition;
  };
  const definitionByShape = (schema: string, layout: Layout): string => {
    const byShape = definitions.get(layout.columns) ?? new Map<string, string>();
    definitions.set(layout.columns, byShape);
    const shape = JSON.stringify([schema, layout.table, layout.naturalKey, layout.occurrence]);
    let definition = byShape.get(shape);
    if (definition === undefined) {
      definition = createTableSql(schema, layout).join(';\n');
      byShape.set(shape, definition);
    }
    return definition;
  };
  for (const settings of partners) {
    const table = `${settings.schema}.${settings.layout.table}`;
    const definition = definitionOf(settings.schema, settings.layout);
    const other = byTable.get(table);
    if (other === undefined) {
      byTable.set(table, { partner: settings.partner, tableNamed: settings.tableNamed, definition });
      continue;
    }
    if (!other.tableNamed || !settings.tableNamed) {
      const silent = [other, settings].filter((x) => !x.tableNamed).map((x) => `"${x.partner}"`);
      const unnamed = silent.length === 1 ? `the layout of ${silent[0]} does not name it` : `neither one's layout names it`;
      throw new UsageError(
        `partners "${other.partner}" and "${settings.partner}" both load into table ${table}, and ${unnamed}: ` +
          `partners share a table only when each one's layout names it. To share it, add "table": "${settings.layout.table}" to each one's layout ` +
          `(${namingHint(settings.layout)}); ` +
          `to keep them apart, give one a table of its own ("table": "${settings.partner.replace(/-/g, '_')}_rows")`,
      );
    }
    if (other.definition !== definition) {
      throw new UsageError(
        `partners "${other.partner}" and "${settings.partner}" both load into table ${table}, but their layouts define it differently: give one layout a "table" of its own (or the same columns and natural key, to share it)`,
      );
    }
  }
}
