import type { Settings } from '../config/settings.js';
import type { Ledger } from '../ledger/ledger.js';
import { openLedger } from '../ledger/openLedger.js';

/** The configured ledger: created or upgraded for `migrate`, required current otherwise. */
export function ledgerFromSettings(s: Settings, opts: { create: boolean } = { create: false }): Promise<Ledger> {
  return openLedger(s.ledger, { create: opts.create, busyTimeoutMs: s.ledgerTimeoutSeconds * 1000 });
}
