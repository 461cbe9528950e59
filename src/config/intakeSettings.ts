import { homedir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { kindOf, type SftpSettings } from '../intake/openIntake.js';
import { DEFAULTS } from './optionTable.js';
import type { SettingReader } from './settingValues.js';

export type { SftpSettings };

/** Only the intake kinds of the registry (intake/openIntake.ts) are intakes; `ftp://x` must not become a folder named "ftp:". */
export function intakeLocation(value: string | undefined, from: string | undefined): string | undefined {
  if (value === undefined) return value;
  try {
    kindOf(value);
  } catch (err) {
    throw err instanceof UsageError ? new UsageError(`${from}: ${err.message}`) : err;
  }
  return value;
}

/** How to reach and trust an sftp:// intake's server. */
export function sftpSettings(read: SettingReader, env: NodeJS.ProcessEnv): SftpSettings {
  return {
    keyPath: read('sftpKey'),
    keyPassphrase: env.SETTLE_SFTP_KEY_PASSPHRASE || undefined,
    password: read('sftpPassword'),
    agentSocket: env.SSH_AUTH_SOCK || undefined,
    knownHosts: read('knownHosts') ?? join(env.HOME ?? homedir(), '.ssh', 'known_hosts'),
    hostKeyFingerprint: read('hostKeyFingerprint'),
    timeoutSeconds: read('sftpTimeout') ?? DEFAULTS.sftpTimeout,
    minBytesPerSecond: read('sftpMinRate') ?? DEFAULTS.sftpMinRate,
  };
}
