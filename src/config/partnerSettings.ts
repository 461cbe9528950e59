import { tmpdir } from 'node:os';
import { UsageError } from '../errors.js';
import type { Expect } from '../calendar/expect.js';
import type { DecodeSettings } from '../delivery/decodeSettings.js';
import { expandDateTokens } from '../intake/names.js';
import type { KindSettings } from '../intake/openIntake.js';
import { DEFAULT_LAYOUT, type Layout } from '../layout/model/layout.js';
import { parseLayout } from '../layout/model/parseLayout.js';
import { isObject } from './configFile.js';
import { kindSettingsFrom } from './intakeSettings.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec, type SettingKey } from './optionTable.js';
import type { Picked } from './settingPicker.js';
import { namePattern, settingReader, type KindValue, type SettingReader } from './settingValues.js';
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

/** The rows read as they are, in table order (see FlatSettings). */
const FLAT_KEYS = SETTING_KEYS.filter(
  (key) => !(COMPOSED as readonly SettingKey[]).includes(key) && (OPTION_TABLE[key] as OptionSpec).intakeKind === undefined,
);

/** Every row read as it is: its value, else its typed default. */
function flatSettings(read: SettingReader): FlatSettings {
  return Object.fromEntries(
    FLAT_KEYS.map((key) => {
      const spec: OptionSpec = OPTION_TABLE[key];
      return [spec.kind === 'duration' ? `${key}Seconds` : key, read(key) ?? spec.default];
    }),
  ) as FlatSettings;
}

/**
 * What reading one config's partners learns once for all of them: each layout object as parsed,
 * by its JSON text (20,000 partners with one layout written out in each parse it once).
 */
export interface SettingsMemo {
  layouts: Map<string, Layout>;
}

/** A layout as the settings give it, parsed once per text in a memo: a mistake is still named by the entry that holds it. */
function layoutOf(picked: Picked | undefined, memo: SettingsMemo | undefined): Layout {
  if (!picked) return DEFAULT_LAYOUT;
  if (typeof picked.value === 'string' || memo === undefined) return parseLayout(picked.value, picked.from);
  const text = JSON.stringify(picked.value);
  let layout = memo.layouts.get(text);
  if (layout === undefined) {
    layout = parseLayout(picked.value, picked.from);
    memo.layouts.set(text, layout);
  }
  return layout;
}

/** The system's temp folder, the default staging, asked once (os.tmpdir reads the environment at each call). */
let systemTemp: string | undefined;

/** One partner's settings from the picker bound to it. */
export function settingsFrom(
  pick: (key: SettingKey) => Picked | undefined,
  env: NodeJS.ProcessEnv,
  partner: string,
  memo?: SettingsMemo,
): Settings {
  const read = settingReader(pick);

  const layoutPick = pick('layout');
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');

  const patternText = read('pattern') ?? OPTION_TABLE.pattern.default;
  const patternFrom = pick('pattern')?.from ?? 'pattern';
  return {
    ...flatSettings(read),
    partner,
    expect: read('expect') ?? undefined,
    patternText,
    patternGiven: pick('pattern') !== undefined,
    pattern: namePattern(expandDateTokens(patternText), patternFrom),
    staging: read('staging') ?? (systemTemp ??= tmpdir()),
    layout: {
      ...layoutOf(layoutPick, memo),
      maxRecordBytes: read('maxRecordBytes') ?? OPTION_TABLE.maxRecordBytes.default,
    },
    tableNamed: isObject(layoutPick?.value) && layoutPick.value.table !== undefined,
    ignore: read('ignore') ?? [],
    kindSettings: kindSettingsFrom(read, env),
    transferLog: transferLogSettings(read, pick),
    decode: {
      pgpKeyPath: read('pgpKey'),
      pgpVerifyKeyPath: read('pgpVerifyKey'),
      pgpPassphrase: read('pgpPassphrase'),
      maxInflateRatio: read('maxInflateRatio') ?? OPTION_TABLE.maxInflateRatio.default,
      maxDecodedBytes: read('maxDecodedBytes') ?? OPTION_TABLE.maxDecodedBytes.default,
    },
  };
}
