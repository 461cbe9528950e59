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
import { OPTION_TABLE, type SettingKey } from './optionTable.js';
import type { Picked } from './settingPicker.js';
import { namePattern, settingReader } from './settingValues.js';
import { transferLogSettings, type TransferLogSettings } from './transferLogSettings.js';

export interface Settings {
  /** the partner these settings are for (`default` without `"partners"` in the config file) */
  partner: string;
  /** the deliveries the partner owes, when its settings say */
  expect: Expect | undefined;
  /** the pattern as written, with its date token (`settle_{yyyyMMdd}_*.csv`); `pattern` is its glob */
  patternText: string;
  /** whether a flag, the environment or the config file gave the pattern (else it is the default) */
  patternGiven: boolean;
  intake: string | undefined;
  archive: string | undefined;
  duplicates: string | undefined;
  rejected: string | undefined;
  pattern: string;
  ledger: string;
  databaseUrl: string | undefined;
  schema: string;
  stableForSeconds: number;
  maxWaitSeconds: number;
  claimLeaseSeconds: number;
  ledgerTimeoutSeconds: number;
  /** connecting to the finance database, and each lock or statement wait there */
  dbTimeoutSeconds: number;
  staging: string;
  logFile: string | undefined;
  logLevel: string;
  layout: Layout;
  /** the layout names its table itself (`"table"`): the partner may share that table with another that does too */
  tableNamed: boolean;
  /** known neighbours in the intake, neither taken nor counted */
  ignore: string[];
  maxWaitingRuns: number;
  metricsFile: string | undefined;
  /** `migrate`: the group that may read the SQLite ledger */
  ledgerGroup: string | undefined;
  /** `run`: the summary lines are appended here too, each after its time */
  summaryFile: string | undefined;
  /** `doctor`: the user the runs run as, whose rights doctor started as root checks with */
  serviceUser: string | undefined;
  /** the partner's completeness sidecar suffix (`.done`): a file is taken only once NAME+suffix exists */
  readyMarker: string | undefined;
  /** `status`: how old the last successful run may be before the check is critical */
  maxAgeSeconds: number;
  mode: 'scheduled' | 'manual' | undefined;
  /** each intake kind's own settings (the SFTP kind's credentials, host key and limits): intake/openIntake.ts */
  kindSettings: KindSettings;
  /** compressed, zipped and OpenPGP deliveries (src/delivery/) */
  decode: DecodeSettings;
  /** the SFTP server's own log of uploads, for `audit` and `report evidence` */
  transferLog: TransferLogSettings;
  /** `audit --quick`: archived copies (and duplicates'/rejected files' kept copies) checked by size only */
  quick: boolean;
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

  const schema = read('schema') ?? OPTION_TABLE.schema.default;
  const layoutPick = pick('layout');
  const passphrase = pick('pgpPassphrase');
  if (passphrase?.source === 'flag')
    throw new UsageError('the PGP passphrase is never a flag: use SETTLE_PGP_PASSPHRASE or the config file');

  const patternText = read('pattern') ?? OPTION_TABLE.pattern.default;
  const patternFrom = pick('pattern')?.from ?? 'pattern';
  return {
    partner,
    expect: read('expect') ?? undefined,
    patternText,
    patternGiven: pick('pattern') !== undefined,
    intake: read('intake'),
    archive: read('archive'),
    duplicates: read('duplicates'),
    rejected: read('rejected'),
    pattern: namePattern(expandDateTokens(patternText), patternFrom),
    ledger: read('ledger') ?? OPTION_TABLE.ledger.default,
    databaseUrl: read('databaseUrl'),
    schema,
    stableForSeconds: read('stableFor') ?? OPTION_TABLE.stableFor.default,
    maxWaitSeconds: read('maxWait') ?? OPTION_TABLE.maxWait.default,
    claimLeaseSeconds: read('claimLease') ?? OPTION_TABLE.claimLease.default,
    ledgerTimeoutSeconds: read('ledgerTimeout') ?? OPTION_TABLE.ledgerTimeout.default,
    dbTimeoutSeconds: read('dbTimeout') ?? OPTION_TABLE.dbTimeout.default,
    staging: read('staging') ?? (systemTemp ??= tmpdir()),
    logFile: read('logFile'),
    logLevel: read('logLevel') ?? OPTION_TABLE.logLevel.default,
    layout: {
      ...layoutOf(layoutPick, memo),
      maxRecordBytes: read('maxRecordBytes') ?? OPTION_TABLE.maxRecordBytes.default,
    },
    tableNamed: isObject(layoutPick?.value) && layoutPick.value.table !== undefined,
    ignore: read('ignore') ?? [],
    maxWaitingRuns: read('maxWaitingRuns') ?? OPTION_TABLE.maxWaitingRuns.default,
    metricsFile: read('metricsFile'),
    summaryFile: read('summaryFile'),
    serviceUser: read('serviceUser'),
    ledgerGroup: read('ledgerGroup'),
    readyMarker: read('readyMarker'),
    maxAgeSeconds: read('maxAge') ?? OPTION_TABLE.maxAge.default,
    mode: read('mode') as Settings['mode'],
    kindSettings: kindSettingsFrom(read, env),
    transferLog: transferLogSettings(read, pick),
    quick: read('quick') ?? false,
    decode: {
      pgpKeyPath: read('pgpKey'),
      pgpVerifyKeyPath: read('pgpVerifyKey'),
      pgpPassphrase: read('pgpPassphrase'),
      maxInflateRatio: read('maxInflateRatio') ?? OPTION_TABLE.maxInflateRatio.default,
      maxDecodedBytes: read('maxDecodedBytes') ?? OPTION_TABLE.maxDecodedBytes.default,
    },
  };
}
