import type { SqlPort, SqlRow } from './sqlPort.js';
import { ownerIsGone } from '../owner.js';
import { leaseRunOut } from './staleClaim.js';
import { iso } from './sqlRows.js';
import type { HeldLease, LeaseAnswer, LeaseHolder, LeaseTerms, PartnerLease, SkipNote, WaitingInIntake } from './types.js';

/**
 * The lease row with the ledger's now, read in one statement: the row is judged by the clock of
 * the statement that read it, never this host's. `lease_text` is the end as the store writes it
 * as text, which the takeover compares (a Date read back may have lost the server's microseconds,
 * or be `infinity`).
 */
const LEASE_ROW_SQL = `SELECT holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until, skipped_at, skipped_by, waiting,
  CAST(lease_until AS text) AS lease_text, ledger_now() AS ledger_now FROM partner_leases WHERE partner = ?`;

/** A free partner: the lease is this holder's, unless another inserted it first (ON CONFLICT: asked again). */
const INSERT_SQL = `INSERT INTO partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
VALUES (?, ?, ?, ?, ?, NULL, ledger_now(), ledger_after(?)) ON CONFLICT (partner) DO NOTHING`;

/**
 * The lease passed to this holder from the one read, unless it changed since (renewed by its
 * holder, taken by a third): one statement, so two hosts taking it over at once cannot both win.
 */
const TAKE_OVER_SQL = `UPDATE partner_leases SET holder = ?, owner_host = ?, owner_pid = ?, owner_started_at = ?, run_id = NULL,
  taken_at = ledger_now(), lease_until = ledger_after(?), skipped_at = NULL, skipped_by = NULL, waiting = NULL
WHERE partner = ? AND holder = ? AND CAST(lease_until AS text) = ?`;

/** How often a take is asked again when the row changed under it (inserted, renewed or taken between two statements). */
const TAKE_ATTEMPTS = 5;

function heldLease(row: SqlRow): HeldLease {
  return {
    holder: String(row.holder),
    host: String(row.owner_host),
    pid: Number(row.owner_pid),
    runId: row.run_id === null ? null : String(row.run_id),
    takenAt: iso(row.taken_at) ?? '',
    leaseUntil: iso(row.lease_until) ?? '',
  };
}

const ms = (value: unknown) => (value instanceof Date ? value.getTime() : Date.parse(String(value)));

/**
 * The partner leases of a ledger shared by several hosts (docs/SCALING.md). Every time in them is
 * the ledger's clock: a lease ends the ledger's now plus --claim-lease after it is taken or
 * renewed, and is judged by the ledger's now (leaseRunOut), so a host whose clock is wrong can
 * neither end another's lease early nor hold one past its end. A local ledger is one host's:
 * every lease is granted without a write, and runs go on as they always did.
 */
export class PartnerLeases {
  constructor(private readonly db: SqlPort) {}

  async take(partner: string, who: LeaseHolder, terms: LeaseTerms): Promise<LeaseAnswer> {
    if (!this.db.sharedAcrossHosts) return { taken: true };
    for (let attempt = 0; ; attempt++) {
      const [row] = await this.db.all(LEASE_ROW_SQL, [partner]);
      if (!row) {
        const inserted = await this.db.run(INSERT_SQL, [partner, who.holder, who.host, who.pid, who.startedAt, terms.leaseSeconds]);
        if (inserted === 1) return { taken: true };
        continue; // another holder inserted it between the two statements: judged on the next read
      }
      const held = heldLease(row);
      const own = held.holder === who.holder;
      // its holder died on this host (a crash, a kill): taken over at once, as a stale claim is, whatever the clocks say
      const gone = ownerIsGone({ host: held.host, pid: held.pid, startedAt: String(row.owner_started_at) });
      const runOut = leaseRunOut(iso(row.lease_until), { nowMs: ms(row.ledger_now), leaseSeconds: terms.leaseSeconds });
      if (!own && !gone && (runOut === null || !terms.takeRunOut)) {
        if (runOut !== null) held.runOut = runOut;
        return { taken: false, heldBy: held };
      }
      const changed = await this.db.run(TAKE_OVER_SQL, [
        who.holder,
        who.host,
        who.pid,
        who.startedAt,
        terms.leaseSeconds,
        partner,
        held.holder,
        row.lease_text,
      ]);
      if (changed === 1) {
        // another holder's lease, with a run named on it, taken over: that run is dead
        if (own || held.runId === null) return { taken: true };
        return { taken: true, replaced: { ...held, runId: held.runId } };
      }
      if (attempt >= TAKE_ATTEMPTS) return { taken: false, heldBy: held };
    }
  }

  /** Extends the holder's lease to the ledger's now plus `leaseSeconds` (and names the run working the partner): false when it was lost (taken by another). */
  async renew(partner: string, holder: string, leaseSeconds: number, runId?: string): Promise<boolean> {
    if (!this.db.sharedAcrossHosts) return true;
    const changed = await this.db.run(
      'UPDATE partner_leases SET lease_until = ledger_after(?), run_id = COALESCE(?, run_id) WHERE partner = ? AND holder = ?',
      [leaseSeconds, runId ?? null, partner, holder],
    );
    return changed > 0;
  }

  async release(partner: string, holder: string): Promise<void> {
    if (!this.db.sharedAcrossHosts) return;
    await this.db.run('DELETE FROM partner_leases WHERE partner = ? AND holder = ?', [partner, holder]);
  }

  /** A run skipped the partner, starved, while `holder` held it: what it saw, on the lease row (gone with it). */
  async noteSkipped(partner: string, holder: string, note: SkipNote): Promise<void> {
    if (!this.db.sharedAcrossHosts) return;
    await this.db.run('UPDATE partner_leases SET skipped_at = ledger_now(), skipped_by = ?, waiting = ? WHERE partner = ? AND holder = ?', [
      note.by,
      JSON.stringify(note.waiting),
      partner,
      holder,
    ]);
  }

  /** The partner's lease as it stands, with the ledger's now to judge it by; undefined when free (or on a local ledger). */
  async read(partner: string): Promise<PartnerLease | undefined> {
    if (!this.db.sharedAcrossHosts) return undefined;
    const [row] = await this.db.all(LEASE_ROW_SQL, [partner]);
    if (!row) return undefined;
    const skippedAt = iso(row.skipped_at);
    return {
      ...heldLease(row),
      ledgerNowMs: ms(row.ledger_now),
      skipped:
        skippedAt === null
          ? null
          : {
              at: skippedAt,
              by: String(row.skipped_by),
              waiting: JSON.parse(String(row.waiting ?? '{"error":"not recorded"}')) as WaitingInIntake,
            },
    };
  }
}
