import { claimedEvent, movedEvent, staleClaimEvent } from './ledgerEvents.js';
import type { ClaimRequest, EventInput, FinalState, Ledger, MovedFile } from './ledger.js';
import type { SqlPort, SqlRow } from './sqlPort.js';
import type { EventKind, FileRow, FileState, LedgerEvent, RunCounts, RunMode, RunRow, RunStatus } from './types.js';

const now = () => new Date().toISOString();
const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? null : String(v));
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

function fileRow(r: SqlRow): FileRow {
  return {
    id: Number(r.id),
    name: String(r.name),
    sha256: String(r.sha256),
    state: r.state as FileState,
    runId: String(r.run_id),
    size: Number(r.size),
    rowCount: num(r.row_count),
    reason: text(r.reason),
    ownerHost: text(r.owner_host),
    ownerPid: num(r.owner_pid),
    ownerStartedAt: text(r.owner_started_at),
    leaseUntil: iso(r.lease_until),
    location: text(r.location),
    arrival: text(r.arrival),
    movingTo: (text(r.moving_to) as FileRow['movingTo']) ?? null,
    firstSeenAt: iso(r.first_seen_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

function runRow(r: SqlRow): RunRow {
  return {
    runId: String(r.run_id),
    status: (text(r.status) as RunStatus | null) ?? null,
    reason: text(r.reason),
    mode: r.mode as RunMode,
    host: String(r.host),
    pid: Number(r.pid),
    startedAt: iso(r.started_at)!,
    endedAt: iso(r.ended_at),
    loaded: num(r.loaded),
    skipped: num(r.skipped),
    held: num(r.held),
    rejected: num(r.rejected),
    failed: num(r.failed),
    notReady: num(r.not_ready),
    ignored: num(r.ignored),
    stale: num(r.stale),
    moveFailed: num(r.move_failed),
    reprocessed: num(r.reprocessed),
    rowCount: num(r.row_count),
    exitStatus: num(r.exit_status),
  };
}

function eventRow(r: SqlRow): LedgerEvent {
  return {
    id: Number(r.id),
    runId: text(r.run_id),
    at: iso(r.at)!,
    event: r.event as EventKind,
    name: String(r.name),
    sha256: text(r.sha256),
    details: (typeof r.details === 'string' ? JSON.parse(r.details) : r.details) as Record<string, unknown>,
  };
}

/** States a new claim may take over: the earlier decision about this (name, content) was not final for the content. */
const RECLAIMABLE: FileState[] = ['duplicate', 'held', 'rejected', 'failed'];

/**
 * The claim: ONE statement. It inserts the (name, content) as claimed, or takes over a
 * non-live row of the same (name, content). While the content is live (claimed or loaded)
 * under another name, the partial unique index on sha256 refuses the insert: the port
 * reports a unique violation, which is a lost claim. The NOT EXISTS keeps a re-claim from
 * even trying while a committed twin is live. SQLite and PostgreSQL run the same text.
 */
const CLAIM_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, owner_host, owner_pid, owner_started_at,
                             lease_until, first_seen_at, updated_at)
VALUES (?, ?, 'claimed', ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name, sha256) DO UPDATE SET
  state = 'claimed', run_id = excluded.run_id, size = excluded.size, arrival = excluded.arrival, owner_host = excluded.owner_host,
  owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  lease_until = excluded.lease_until, location = NULL, reason = NULL, row_count = NULL,
  updated_at = excluded.updated_at
WHERE processed_files.state IN (${RECLAIMABLE.map((s) => `'${s}'`).join(', ')})
  AND NOT EXISTS (SELECT 1 FROM processed_files live
                  WHERE live.sha256 = excluded.sha256 AND live.state IN ('claimed', 'loaded'))
RETURNING id`;

/** Clears a claim's owner and lease as it becomes final. */
const END_CLAIM = `owner_host = NULL, owner_pid = NULL, owner_started_at = NULL, lease_until = NULL`;

/**
 * The ledger's rules, written once for every store. Each public method is one step of the
 * ledger, run one at a time per process: a transaction is never interleaved with another
 * method's statements on the same connection.
 */
export class SqlLedger implements Ledger {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: SqlPort) {}

  get location(): string {
    return this.db.location;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.queue.then(fn, fn);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return this.serial(() => this.db.transaction(fn));
  }

  private read(sql: string, params: unknown[] = []): Promise<SqlRow[]> {
    return this.serial(() => this.db.all(sql, params));
  }

  async close(): Promise<void> {
    await this.serial(() => this.db.close());
  }

  // ---- runs

  /**
   * Records a new run under the first id from `newId` that is not taken yet (two runs may
   * start in the same minute with the same short random tag) and returns that id.
   */
  async startRun(run: { mode: RunMode; host: string; pid: number }, newId: () => string): Promise<string> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const runId = newId();
      const inserted = await this.tx(() =>
        this.db.run(
          `INSERT INTO runs (run_id, mode, host, pid, started_at, status) VALUES (?, ?, ?, ?, ?, 'running') ON CONFLICT DO NOTHING`,
          [runId, run.mode, run.host, run.pid, now()],
        ),
      );
      if (inserted === 1) return runId;
    }
    throw new Error('could not find a free run id');
  }

  /** Closes a run with its counts and exit status; `not_started` with the reason it could not work. */
  async finishRun(
    runId: string,
    c: RunCounts,
    exitStatus: number,
    end: { status: 'finished' | 'not_started'; reason?: string } = { status: 'finished' },
  ): Promise<void> {
    await this.tx(() =>
      this.db.run(
        `UPDATE runs SET ended_at = ?, status = ?, reason = ?, loaded = ?, skipped = ?, held = ?, rejected = ?, failed = ?,
           not_ready = ?, ignored = ?, stale = ?, move_failed = ?, reprocessed = ?, row_count = ?, exit_status = ?
         WHERE run_id = ?`,
        [
          now(),
          end.status,
          end.reason ?? null,
          c.loaded,
          c.skipped,
          c.held,
          c.rejected,
          c.failed,
          c.notReady,
          c.ignored,
          c.stale,
          c.moveFailed,
          c.reprocessed ?? null,
          c.rows,
          exitStatus,
          runId,
        ],
      ),
    );
  }

  /** Runs without an end, oldest first: running now, or dead and not yet closed. */
  async openRuns(): Promise<RunRow[]> {
    return (await this.read('SELECT * FROM runs WHERE ended_at IS NULL ORDER BY started_at')).map(runRow);
  }

  /** A run whose process is gone without an end is closed as `died` by the run that found it; false if already closed. */
  async closeDeadRun(runId: string, foundBy: string, reason: string): Promise<boolean> {
    const changed = await this.tx(() =>
      this.db.run(`UPDATE runs SET ended_at = ?, status = 'died', reason = ? WHERE run_id = ? AND ended_at IS NULL`, [
        now(),
        `${reason}; closed by run ${foundBy}`,
        runId,
      ]),
    );
    return changed === 1;
  }

  async run(runId: string): Promise<RunRow | undefined> {
    const rows = await this.read('SELECT * FROM runs WHERE run_id = ?', [runId]);
    return rows[0] ? runRow(rows[0]) : undefined;
  }

  async recentRuns(limit: number): Promise<RunRow[]> {
    return (await this.read('SELECT * FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?', [limit])).map(runRow);
  }

  /** Runs from before statuses were kept (status NULL) count as finished once they have an end. */
  async latestIngestRun(opts: { successful: boolean }): Promise<RunRow | undefined> {
    const rows = await this.read(
      `SELECT * FROM runs WHERE mode <> 'reprocess' AND ended_at IS NOT NULL AND (status = 'finished' OR status IS NULL)
         ${opts.successful ? 'AND exit_status = 0' : ''} ORDER BY ended_at DESC, run_id DESC LIMIT 1`,
    );
    return rows[0] ? runRow(rows[0]) : undefined;
  }

  // ---- events

  private appendEvent(e: EventInput): Promise<number> {
    return this.db.run('INSERT INTO ledger_events (run_id, at, event, name, sha256, details) VALUES (?, ?, ?, ?, ?, ?)', [
      e.runId,
      now(),
      e.event,
      e.name,
      e.sha256,
      JSON.stringify(e.details ?? {}),
    ]);
  }

  private async events(where: string, params: unknown[]): Promise<LedgerEvent[]> {
    return (await this.read(`SELECT * FROM ledger_events WHERE ${where} ORDER BY id`, params)).map(eventRow);
  }

  async record(e: EventInput): Promise<void> {
    await this.tx(() => this.appendEvent(e));
  }

  eventsOfRun(runId: string): Promise<LedgerEvent[]> {
    return this.events('run_id = ?', [runId]);
  }

  /** Every event for a file name or a content hash, oldest first. */
  eventsFor(nameOrSha: string): Promise<LedgerEvent[]> {
    return this.events('name = ? OR sha256 = ?', [nameOrSha, nameOrSha.toLowerCase()]);
  }

  /** Events of the given kinds at or after `since` (ISO time), oldest first. */
  eventsSince(kinds: EventKind[], since: string): Promise<LedgerEvent[]> {
    return this.events(`event IN (${marks(kinds.length)}) AND at >= ?`, [...kinds, since]);
  }

  async contentsWithPrefix(prefix: string, limit: number): Promise<string[]> {
    const rows = await this.read('SELECT DISTINCT sha256 FROM ledger_events WHERE sha256 LIKE ? ORDER BY sha256 LIMIT ?', [
      `${prefix}%`,
      limit,
    ]);
    return rows.map((r) => String(r.sha256));
  }

  /** Contents recorded as loaded (or recovered as loaded) by more than one event: must never happen. */
  async contentsLoadedTwice(): Promise<{ sha256: string; loads: number }[]> {
    const rows = await this.read(
      `SELECT sha256, count(*) AS loads FROM ledger_events WHERE event IN ('loaded', 'recovered') AND sha256 IS NOT NULL
        GROUP BY sha256 HAVING count(*) > 1`,
    );
    return rows.map((r) => ({ sha256: String(r.sha256), loads: Number(r.loads) }));
  }

  // ---- files

  private async files(where: string, params: unknown[]): Promise<FileRow[]> {
    return (await this.read(`SELECT * FROM processed_files WHERE ${where} ORDER BY id`, params)).map(fileRow);
  }

  async file(name: string, sha256: string): Promise<FileRow | undefined> {
    return (await this.files('name = ? AND sha256 = ?', [name, sha256]))[0];
  }

  /** The row that currently owns this content (claimed or loaded), if any. */
  async liveHolder(sha256: string): Promise<FileRow | undefined> {
    return (await this.files(`sha256 = ? AND state IN ('claimed', 'loaded')`, [sha256]))[0];
  }

  filesInState(state: FileState): Promise<FileRow[]> {
    return this.files('state = ?', [state]);
  }

  /** Whether the ledger has ever seen this content, under any name and in any state. */
  knowsContent(sha256: string): Promise<FileRow[]> {
    return this.files('sha256 = ?', [sha256]);
  }

  /** The contents loaded under this name (usually one; more if the partner reused a name). */
  loadedNamed(name: string): Promise<FileRow[]> {
    return this.files(`name = ? AND state = 'loaded'`, [name]);
  }

  /** The conditional create that decides who loads a file. True: this run owns the claim. */
  async claim(req: ClaimRequest): Promise<boolean> {
    const at = now();
    try {
      return await this.tx(async () => {
        const won = await this.db.all(CLAIM_SQL, [
          req.name,
          req.sha256,
          req.runId,
          req.size,
          req.arrival,
          req.owner.host,
          req.owner.pid,
          req.owner.startedAt,
          req.leaseUntil.toISOString(),
          at,
          at,
        ]);
        if (won.length === 0) return false;
        await this.appendEvent(claimedEvent(req));
        return true;
      });
    } catch (err) {
      if (this.db.isUniqueViolation(err)) return false; // a twin under another name is live
      throw err;
    }
  }

  /**
   * Finalizes a claim this run owns: the new state and its event in one transaction.
   * Returns false if the claim is no longer this run's (it was expired by another run).
   */
  finalizeClaim(
    f: { name: string; sha256: string; runId: string },
    to: { state: FinalState; event: EventKind; rows?: number; reason?: string },
    details: Record<string, unknown>,
    extraEvents: EventKind[] = [],
  ): Promise<boolean> {
    return this.tx(async () => {
      const changed = await this.db.run(
        `UPDATE processed_files SET state = ?, row_count = ?, reason = ?, ${END_CLAIM}, updated_at = ?
         WHERE name = ? AND sha256 = ? AND state = 'claimed' AND run_id = ?`,
        [to.state, to.rows ?? null, to.reason ?? null, now(), f.name, f.sha256, f.runId],
      );
      if (changed !== 1) return false;
      for (const event of [to.event, ...extraEvents]) {
        await this.appendEvent({ runId: f.runId, event, name: f.name, sha256: f.sha256, details });
      }
      return true;
    });
  }

  /** The (name, content) row is created or updated as held, unless it is live (another run's). */
  async recordHeld(f: { name: string; sha256: string; size: number; runId: string }, details: Record<string, unknown>): Promise<void> {
    await this.tx(async () => {
      const at = now();
      await this.db.run(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, first_seen_at, updated_at)
         VALUES (?, ?, 'held', ?, ?, ?, ?)
         ON CONFLICT (name, sha256) DO UPDATE SET state = 'held', run_id = excluded.run_id,
           reason = NULL, location = NULL, updated_at = excluded.updated_at
         WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
        [f.name, f.sha256, f.runId, f.size, at, at],
      );
      await this.appendEvent({ runId: f.runId, event: 'held', name: f.name, sha256: f.sha256, details });
    });
  }

  /** The once-only record of a landing: false when another run already recorded this very move. */
  private async insertMove(f: MovedFile, location: string): Promise<boolean> {
    const inserted = await this.db.run(
      'INSERT INTO moves (location, name, sha256, arrival, run_id, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      [location, f.name, f.sha256, f.arrival, f.runId, now()],
    );
    return inserted === 1;
  }

  markMoved(f: MovedFile, location: string): Promise<boolean> {
    return this.tx(async () => {
      if (!(await this.insertMove(f, location))) return false;
      await this.db.run('UPDATE processed_files SET location = ?, updated_at = ? WHERE name = ? AND sha256 = ?', [
        location,
        now(),
        f.name,
        f.sha256,
      ]);
      await this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  recordSkip(f: MovedFile & { size: number }, renamed: boolean, location: string, details: Record<string, unknown>): Promise<boolean> {
    return this.tx(async () => {
      if (!(await this.insertMove(f, location))) return false;
      if (renamed) {
        const at = now();
        await this.db.run(
          `INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at)
           VALUES (?, ?, 'duplicate', ?, ?, ?, ?, ?, ?)
           ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', run_id = excluded.run_id, reason = NULL,
             arrival = excluded.arrival, location = excluded.location, updated_at = excluded.updated_at
           WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
          [f.name, f.sha256, f.runId, f.size, f.arrival, location, at, at],
        );
      }
      await this.appendEvent({ runId: f.runId, event: 'skipped', name: f.name, sha256: f.sha256, details });
      await this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  settleStaleClaim(stale: FileRow, runId: string, to: { state: 'loaded' | 'failed'; rows?: number; reason: string }): Promise<boolean> {
    return this.tx(async () => {
      const changed = await this.db.run(
        `UPDATE processed_files SET state = ?, row_count = ?, reason = ?, ${END_CLAIM}, updated_at = ?
         WHERE id = ? AND state = 'claimed' AND run_id = ? AND updated_at = ?`,
        [to.state, to.rows ?? null, to.state === 'failed' ? to.reason : null, now(), stale.id, stale.runId, stale.updatedAt],
      );
      if (changed !== 1) return false;
      await this.appendEvent(staleClaimEvent(stale, runId, to));
      return true;
    });
  }

  adoptLoaded(f: { name: string; sha256: string; size: number; runId: string }, location: string, rows: number | null): Promise<boolean> {
    return this.tx(async () => {
      const at = now();
      const inserted = await this.db.run(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, row_count, location, first_seen_at, updated_at)
         VALUES (?, ?, 'loaded', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        [f.name, f.sha256, f.runId, f.size, rows, location, at, at],
      );
      if (inserted !== 1) return false;
      const details = { adopted: true, from: location, rows };
      await this.appendEvent({ runId: f.runId, event: 'loaded', name: f.name, sha256: f.sha256, details });
      return true;
    });
  }

  /** A reprocessing replaced this content's rows: the new count and the `reprocessed` event, together. */
  async recordReprocessed(
    f: { name: string; sha256: string; runId: string },
    details: { rows: number } & Record<string, unknown>,
  ): Promise<void> {
    await this.tx(async () => {
      await this.db.run(`UPDATE processed_files SET row_count = ?, updated_at = ? WHERE name = ? AND sha256 = ? AND state = 'loaded'`, [
        details.rows,
        now(),
        f.name,
        f.sha256,
      ]);
      await this.appendEvent({ runId: f.runId, event: 'reprocessed', name: f.name, sha256: f.sha256, details });
    });
  }
}
