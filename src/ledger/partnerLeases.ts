import type { SqlPort, SqlRow } from './sqlPort.js';
import { ownerIsGone } from '../owner.js';
import { iso } from './sqlRows.js';
import type { HeldLease, LeaseAnswer, LeaseHolder } from './types.js';

/**
 * Takes the partner's lease when it is free, expired (lease_until before now, by the real clock
 * as claims' leases are) or already this holder's; one statement, so two hosts asking at the same
 * instant cannot both win.
 */
const TAKE_SQL = `
INSERT INTO partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
ON CONFLICT (partner) DO UPDATE SET
  holder = excluded.holder, owner_host = excluded.owner_host, owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  run_id = NULL, taken_at = excluded.taken_at, lease_until = excluded.lease_until
WHERE partner_leases.lease_until < ? OR partner_leases.holder = excluded.holder OR partner_leases.holder = ?
RETURNING holder`;

const LEASE_ROW_SQL = 'SELECT holder, owner_host, owner_pid, owner_started_at, run_id, lease_until FROM partner_leases WHERE partner = ?';

function heldLease(row: SqlRow): HeldLease {
  return {
    host: String(row.owner_host),
    pid: Number(row.owner_pid),
    runId: row.run_id === null ? null : String(row.run_id),
    leaseUntil: iso(row.lease_until) ?? '',
  };
}

/**
 * The partner leases of a ledger shared by several hosts (docs/SCALING.md). A local ledger is
 * one host's: every lease is granted without a write, and runs go on as they always did.
 */
export class PartnerLeases {
  constructor(private readonly db: SqlPort) {}

  /** `replacing`: a holder found gone (its process dead on this host), whose lease is taken over */
  async take(partner: string, who: LeaseHolder, leaseUntil: Date, now: Date, replacing = ''): Promise<LeaseAnswer> {
    if (!this.db.sharedAcrossHosts) return { taken: true };
    const [before] = await this.db.all(LEASE_ROW_SQL, [partner]);
    const won = await this.db.all(TAKE_SQL, [
      partner,
      who.holder,
      who.host,
      who.pid,
      who.startedAt,
      now.toISOString(),
      leaseUntil.toISOString(),
      now.toISOString(),
      replacing,
    ]);
    if (won.length > 0) {
      // another holder's lease, with a run named on it, taken over: that run is dead
      if (!before || before.holder === who.holder || before.run_id === null) return { taken: true };
      return { taken: true, replaced: { ...heldLease(before), runId: String(before.run_id) } };
    }
    const [row] = await this.db.all(LEASE_ROW_SQL, [partner]);
    // released between the two statements: free now, asked again
    if (!row) return this.take(partner, who, leaseUntil, now);
    // its holder died on this host (a crash, a kill): the lease is taken over at once, as a stale claim is
    const gone = ownerIsGone({ host: String(row.owner_host), pid: Number(row.owner_pid), startedAt: String(row.owner_started_at) });
    if (gone && replacing === '') return this.take(partner, who, leaseUntil, now, String(row.holder));
    return { taken: false, heldBy: heldLease(row) };
  }

  /** Extends the holder's lease (and names the run working the partner): false when it was lost (expired and taken by another). */
  async renew(partner: string, holder: string, leaseUntil: Date, runId?: string): Promise<boolean> {
    if (!this.db.sharedAcrossHosts) return true;
    const changed = await this.db.run(
      'UPDATE partner_leases SET lease_until = ?, run_id = COALESCE(?, run_id) WHERE partner = ? AND holder = ?',
      [leaseUntil.toISOString(), runId ?? null, partner, holder],
    );
    return changed > 0;
  }

  async release(partner: string, holder: string): Promise<void> {
    if (!this.db.sharedAcrossHosts) return;
    await this.db.run('DELETE FROM partner_leases WHERE partner = ? AND holder = ?', [partner, holder]);
  }
}
