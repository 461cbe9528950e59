import { CLOCK_SKEW_LIMIT_SECONDS, measureSkew, skewText, type ClockSkew } from '../clock.js';
import type { LedgerReads } from './ledger.js';

/**
 * This host's clock against a shared ledger's (its PostgreSQL server's, which writes every time
 * several hosts compare); null for a SQLite ledger, whose clock is this host's own.
 */
export async function ledgerSkew(ledger: Pick<LedgerReads, 'ledgerNow' | 'sharedAcrossHosts'>): Promise<ClockSkew | null> {
  if (!ledger.sharedAcrossHosts) return null;
  return measureSkew(() => ledger.ledgerNow());
}

/** What every run, watch cycle and `doctor` say of a clock off the ledger's by more than the limit, and what follows from it. */
export function skewWarning(skew: ClockSkew): string {
  return (
    `this host's clock is ${skewText(skew, "the ledger server's")}, more than ${CLOCK_SKEW_LIMIT_SECONDS} s: ` +
    "set it right (NTP: timedatectl, chronyc tracking); the ledger's times are its server's, and until then this host takes over no other host's lease or claim"
  );
}

/** The short form on a run's summary line (the log has skewWarning). */
export function skewSummary(skew: ClockSkew): string {
  return `clock: this host's is ${skewText(skew, "the ledger server's")}, past the ${CLOCK_SKEW_LIMIT_SECONDS} s allowed: no other host's lease or claim taken over`;
}
