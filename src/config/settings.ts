import { UsageError } from '../errors.js';
import { resolvePartners } from './partners.js';
import type { Settings } from './partnerSettings.js';
import type { RawFlags } from './settingPicker.js';

// what the commands import, from one place
export { resolvePartners, type PartnerSelection } from './partners.js';
export type { Settings } from './partnerSettings.js';
export { settingPicker, type RawFlags } from './settingPicker.js';

/**
 * The settings of the one partner a command works on (`check`, `adopt`, reprocessing): the
 * config's only partner, or the one chosen with --partner.
 */
export function resolveSettings(flags: RawFlags, env: NodeJS.ProcessEnv = process.env): Settings {
  const { partners, configured } = resolvePartners(flags, env);
  if (partners.length !== 1) {
    throw new UsageError(
      `the config file names ${configured.length} partners (${configured.join(', ')}): this command works on one: choose it with --partner NAME`,
    );
  }
  return partners[0]!;
}
