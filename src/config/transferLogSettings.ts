import { UsageError } from '../errors.js';
import { zoneProblem } from '../layout/values/timeZones.js';
import { OPTION_TABLE, type SettingKey } from './optionTable.js';
import type { Picked } from './settingPicker.js';
import type { SettingReader } from './settingValues.js';

export interface TransferLogSettings {
  /** the log files (a wildcard in a file name as written: expanded when they are read); empty: none */
  files: string[];
  /** the folder, in the intake's own terms, that the log's paths start from (a chroot) */
  root: string;
  /** the login the partner uploads as, as the log names it; undefined: an SFTP intake's own */
  user: string | undefined;
  /** the zone of times a line does not give one for; undefined: this host's */
  timeZone: string | undefined;
  /** how far the log's clock and the ledger's may disagree (--transfer-log-clock-slack) */
  clockSlackSeconds: number;
}

/** The SFTP server's own log of uploads, as a partner's settings give it. */
export function transferLogSettings(read: SettingReader, pick: (key: SettingKey) => Picked | undefined): TransferLogSettings {
  return {
    files: read('transferLog') ?? [],
    root: transferLogRoot(read('transferLogRoot')),
    user: transferLogUser(read('transferLogUser'), pick('transferLogUser')?.from),
    timeZone: timeZoneSetting(read('transferLogTimeZone'), pick('transferLogTimeZone')?.from),
    clockSlackSeconds: read('transferLogClockSlack') ?? OPTION_TABLE.transferLogClockSlack.default,
  };
}

/** The transfer log's root, a path as the intake names it (absolute, without `..`: its option's format), without a trailing `/`. */
function transferLogRoot(value: string | undefined): string {
  if (value === undefined) return '/';
  return value.length > 1 ? value.replace(/\/+$/, '') || '/' : value;
}

/** A login as a syslog line names it (`session opened for local user NAME`): one word. */
function transferLogUser(value: string | undefined, from: string | undefined): string | undefined {
  if (value !== undefined && !/^[^\s\p{Cc}\p{Cf}]+$/u.test(value)) {
    throw new UsageError(`${from}: ${JSON.stringify(value)} is not a login: one word as the log names it, such as adyen`);
  }
  return value;
}

function timeZoneSetting(value: string | undefined, from: string | undefined): string | undefined {
  const problem = value === undefined ? undefined : zoneProblem(value);
  if (problem) throw new UsageError(`${from}: ${problem}`);
  return value;
}
