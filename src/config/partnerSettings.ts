import { tmpdir } from 'node:os';
import { UsageError } from '../errors.js';
import type { Expect } from '../calendar/expect.js';
import type { DecodeSettings } from '../delivery/decodeSettings.js';
import { expandDateTokens } from '../intake/names.js';
import type { KindSettings } from '../intake/openIntake.js';
import { DEFAULT_LAYOUT, type Layout } from '../layout/model/layout.js';
import { parseLayout } from '../layout/model/parseLayout.js';
import { isObject } from './configFile.js';
import { intakeKindKeys, kindSettingsFrom } from './intakeSettings.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from './optionTable.js';
import type { ConfigPicks, PartnerPicks, Picked } from './settingPicker.js';
import { namePattern, partnerReader, type KindValue, type SettingReader } from './settingValues.js';
import { transferLogSettings, type TransferLogSettings } from './transferLogSettings.js';

type Rows = typeof OPTION_TABLE;

/**
 * The settings made of several rows or read with more than their row (a default that is no
 * value, a check across rows): each below in `Composed`. Every other row of the table is a field
 * of `Settings` as it is, typed by its row: no code to write for it (see FlatSettings).
 */
export const COMPOSED = [
  'expect',
  'pattern',
  'staging',
  'layout',
  'maxRecordBytes',
  'ignore',
  'pgpKey',
  'pgpVerifyKey',
  'pgpPassphrase',
  'maxInflateRatio',
  'maxDecodedBytes',
  'transferLog',
  'transferLogRoot',
  'transferLogUser',
  'transferLogTimeZone',
  'transferLogClockSlack',
] as const satisfies readonly SettingKey[];

/** Keys read as they are: not composed, and no intake kind's (a kind reads its own into `kindSettings`). */
type FlatKey = {
  [K in SettingKey]: K extends (typeof COMPOSED)[number] ? never : Rows[K] extends { intakeKind: string } ? never : K;
}[SettingKey];

/** A row's value: one of its choices, else what its kind parses to. */
type RowValue<Row> = Row extends { choices: readonly (infer Choice)[] }
  ? Choice
  : Row extends { kind: infer Kind extends keyof KindValue }
    ? KindValue[Kind]
    : never;

/** A setting's field: a duration's name says its unit (`stableFor` is `stableForSeconds`). */
type FieldName<Key extends string, Row> = Row extends { kind: 'duration' } ? `${Key}Seconds` : Key;

/**
 * Every row read as it is, derived from the table: its field (FieldName), typed by its row
 * (RowValue), undefined only when the row has no typed default. A new setting of the table is
 * here by its row alone.
 */
export type FlatSettings = {
  [K in FlatKey as FieldName<K, Rows[K]>]: Rows[K] extends { default: unknown } ? RowValue<Rows[K]> : RowValue<Rows[K]> | undefined;
};

/** The settings composed from several rows, or read with more than their row. */
interface Composed {
  /** the partner these settings are for (`default` without `"partners"` in the config file) */
  partner: string;
  /** the deliveries the partner owes, when its settings say */
  expect: Expect | undefined;
  /** the pattern as written, with its date token (`settle_{yyyyMMdd}_*.csv`); `pattern` is its glob */
  patternText: string;
  /** whether a flag, the environment or the config file gave the pattern (else it is the default) */
  patternGiven: boolean;
  pattern: string;
  /** the system temp folder unless set */
  staging: string;
  /** the layout, with --max-record-bytes */
  layout: Layout;
  /** the layout names its table itself (`"table"`): the partner may share that table with another that does too */
  tableNamed: boolean;
  /** known neighbours in the intake, neither taken nor counted */
  ignore: string[];
  /** each intake kind's own settings (the SFTP kind's credentials, host key and limits): intake/openIntake.ts */
  kindSettings: KindSettings;
  /** compressed, zipped and OpenPGP deliveries (src/delivery/) */
  decode: DecodeSettings;
  /** the SFTP server's own log of uploads, for `audit` and `report evidence` */
  transferLog: TransferLogSettings;
}

/** One partner's settings: every row of the option table, typed by it, and what is composed of several. */
export type Settings = FlatSettings & Composed;

/** The rows read as they are, in table order (see FlatSettings), each with its field's name. */
const FLAT_FIELDS = new Map(
  SETTING_KEYS.filter(
    (key) => !(COMPOSED as readonly SettingKey[]).includes(key) && (OPTION_TABLE[key] as OptionSpec).intakeKind === undefined,
  ).map((key) => [key, (OPTION_TABLE[key] as OptionSpec).kind === 'duration' ? `${key}Seconds` : key]),
);

/** A row's field: its value, else its typed default. */
const flatValue = (read: SettingReader, key: SettingKey): unknown => read(key) ?? (OPTION_TABLE[key] as OptionSpec).default;

/** Every row read as it is: its value, else its typed default. */
function flatSettings(read: SettingReader): FlatSettings {
  return Object.fromEntries([...FLAT_FIELDS].map(([key, field]) => [field, flatValue(read, key)])) as FlatSettings;
}

/**
 * The rows read as they are for a partner that sets none of them itself, made once per config
 * and flags (ConfigPicks); null when one of them is refused: then each partner reads every row in
 * turn, and the first that reads it is refused, as alone.
 */
const sharedFlats = new WeakMap<ConfigPicks, FlatSettings | null>();

function sharedFlat(shared: ConfigPicks): FlatSettings | null {
  let flat = sharedFlats.get(shared);
  if (flat === undefined) {
    try {
      flat = flatSettings(partnerReader(shared.partner(undefined)));
    } catch {
      flat = null;
    }
    sharedFlats.set(shared, flat);
  }
  return flat;
}

/**
 * A partner's settings object to copy for the next partner of the same config and flags: the
 * shared rows and every composed field (their values the first partner's, each set again), made
 * from the first partner's settings (settingsFrom). A copy of an object of all the fields is one
 * step of V8's (a spread of a fast object clones its shape and its fields); fields added to a copy
 * of the shared rows alone grow its store three at a time: garbage 20,000 partners felt.
 */
const templates = new WeakMap<ConfigPicks, Settings>();

/**
 * One partner's rows read as they are: the shared ones as made once (sharedFlat), its own read
 * over them in table order, so a mistake is the same first one as when every row is read in turn.
 */
function partnerFlat(picks: PartnerPicks, read: SettingReader): FlatSettings {
  const shared = sharedFlat(picks.shared);
  if (shared === null) return flatSettings(read);
  const template = templates.get(picks.shared);
  const flat: Record<string, unknown> = template === undefined ? Object.assign({}, shared) : { ...template };
  for (const key of picks.own) {
    const field = FLAT_FIELDS.get(key);
    if (field !== undefined) flat[field] = flatValue(read, key);
  }
  return flat as FlatSettings;
}

/** After a partner's settings are made: the first one of its config and flags becomes their template, its own rows the shared ones again. */
function keepTemplate(picks: PartnerPicks, settings: Settings): void {
  const shared = sharedFlat(picks.shared);
  if (shared === null || templates.has(picks.shared)) return;
  const template: Record<string, unknown> = { ...settings };
  for (const key of picks.own) {
    const field = FLAT_FIELDS.get(key);
    if (field !== undefined) template[field] = (shared as Record<string, unknown>)[field];
  }
  templates.set(picks.shared, template as unknown as Settings);
}

/** The keys of the intake kinds' own settings (the SFTP kind's credentials, host key, limits). */
const KIND_KEYS = new Set(intakeKindKeys().map(({ key }) => key));

/** Each kind's own settings for the partners that set none of their keys, made once per config and flags. */
const sharedKindSettings = new WeakMap<ConfigPicks, KindSettings>();

function kindSettingsOf(picks: PartnerPicks, read: SettingReader): KindSettings {
  if (picks.own.some((key) => KIND_KEYS.has(key))) return kindSettingsFrom(read, picks.shared.env);
  let made = sharedKindSettings.get(picks.shared);
  if (made === undefined) {
    made = kindSettingsFrom(read, picks.shared.env);
    sharedKindSettings.set(picks.shared, made);
  }
  return made;
}

/**
 * What reading one config's partners learns once for all of them: each layout object as parsed,
 * by its JSON text (20,000 partners with one layout written out in each parse it once), each
 * layout with its record limit, and each `"expect"` as read, by its JSON text.
 */
export interface SettingsMemo {
  layouts: ByJsonText<Layout>;
  sizedLayouts: Map<Layout, Map<number, Layout>>;
  expects: ByJsonText<Expect | undefined>;
}

export const settingsMemo = (): SettingsMemo => ({ layouts: new ByJsonText(), sizedLayouts: new Map(), expects: new ByJsonText() });

/**
 * What is made of a value from the config file, made once per JSON text of the value. The text
 * is not even written when the value is the same as the last one asked (sameJson): the partners
 * of a large config usually follow one another with the same layout and `"expect"`, and writing
 * two texts a partner was a tenth of reading 20,000 of them.
 */
class ByJsonText<T> {
  private readonly made = new Map<string, T>();
  private last: { value: unknown; made: T } | undefined;

  /** What `make` makes of `value`, or made of a value of the same text before; a mistake `make` throws is never kept. */
  of(value: unknown, make: () => T): T {
    if (this.last !== undefined && sameJson(this.last.value, value)) return this.last.made;
    const text = JSON.stringify(value);
    const made = this.made.has(text) ? (this.made.get(text) as T) : make();
    this.made.set(text, made);
    this.last = { value, made };
    return made;
  }
}

/** Whether two values parsed from JSON have one text: the same keys in the same order, the same values. */
function sameJson(one: unknown, other: unknown): boolean {
  if (one === other) return true;
  if (one === null || other === null || typeof one !== 'object' || typeof other !== 'object') return false;
  if (Array.isArray(one) !== Array.isArray(other)) return false;
  const keys = Object.keys(one);
  const otherKeys = Object.keys(other);
  if (keys.length !== otherKeys.length) return false;
  for (let at = 0; at < keys.length; at++) {
    const key = keys[at]!;
    if (key !== otherKeys[at] || !sameJson((one as Record<string, unknown>)[key], (other as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** A layout as the settings give it, parsed once per text in a memo: a mistake is still named by the entry that holds it. */
function layoutOf(picked: Picked | undefined, memo: SettingsMemo | undefined): Layout {
  if (!picked) return DEFAULT_LAYOUT;
  if (typeof picked.value === 'string' || memo === undefined) return parseLayout(picked.value, picked.from);
  return memo.layouts.of(picked.value, () => parseLayout(picked.value, picked.from));
}

/** The layout with --max-record-bytes: one object per layout and limit in a memo, shared by the partners that have both. */
function sizedLayout(layout: Layout, maxRecordBytes: number, memo: SettingsMemo | undefined): Layout {
  if (memo === undefined) return { ...layout, maxRecordBytes };
  let bySize = memo.sizedLayouts.get(layout);
  if (bySize === undefined) memo.sizedLayouts.set(layout, (bySize = new Map<number, Layout>()));
  let sized = bySize.get(maxRecordBytes);
  if (sized === undefined) bySize.set(maxRecordBytes, (sized = { ...layout, maxRecordBytes }));
  return sized;
}

/** The partner's `"expect"`, read once per JSON text in a memo when it is the partner's own (a shared one is read once anyway). */
function expectOf(picks: PartnerPicks, read: SettingReader, memo: SettingsMemo | undefined): Expect | undefined {
  if (memo === undefined || !picks.owns('expect')) return read('expect') ?? undefined;
  return memo.expects.of(picks.pick('expect')!.value, () => read('expect') ?? undefined);
}

/** The system's temp folder, the default staging, asked once (os.tmpdir reads the environment at each call). */
let systemTemp: string | undefined;

/** One partner's settings from its picks (ConfigPicks.partner). */
export function settingsFrom(picks: PartnerPicks, partner: string, memo?: SettingsMemo): Settings {
  const { pick } = picks;
  const read = partnerReader(picks);

  const layoutPick = pick('layout');
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');

  const patternText = read('pattern') ?? OPTION_TABLE.pattern.default;
  const patternFrom = pick('pattern')?.from ?? 'pattern';
  // The composed fields set on the flat ones one by one, by name (on a copy of the template they
  // are there already: partnerFlat). Added by key (Object.assign, a loop) V8 (Node 20) turns an
  // object of this many fields into a dictionary: 4.5 kB a partner and half of what reading 20,000
  // partners allocated; added after a spread ({ ...flat, partner }) each object gets maps of its
  // own, many times slower. Every field of Composed is set here (test/unit/configScale.test.ts
  // holds a settings object to its fields, in fast mode).
  const settings = partnerFlat(picks, read) as Settings;
  settings.partner = partner;
  settings.expect = expectOf(picks, read, memo);
  settings.patternText = patternText;
  settings.patternGiven = pick('pattern') !== undefined;
  settings.pattern = namePattern(expandDateTokens(patternText), patternFrom);
  settings.staging = read('staging') ?? (systemTemp ??= tmpdir());
  settings.layout = sizedLayout(layoutOf(layoutPick, memo), read('maxRecordBytes') ?? OPTION_TABLE.maxRecordBytes.default, memo);
  settings.tableNamed = isObject(layoutPick?.value) && layoutPick.value.table !== undefined;
  settings.ignore = read('ignore') ?? [];
  settings.kindSettings = kindSettingsOf(picks, read);
  settings.transferLog = transferLogSettings(read, pick);
  settings.decode = {
    pgpKeyPath: read('pgpKey'),
    pgpVerifyKeyPath: read('pgpVerifyKey'),
    pgpPassphrase: read('pgpPassphrase'),
    maxInflateRatio: read('maxInflateRatio') ?? OPTION_TABLE.maxInflateRatio.default,
    maxDecodedBytes: read('maxDecodedBytes') ?? OPTION_TABLE.maxDecodedBytes.default,
  };
  keepTemplate(picks, settings);
  return settings;
}
