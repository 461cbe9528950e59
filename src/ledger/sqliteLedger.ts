import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { SettleError, TransientError, UsageError } from '../errors.js';
import { assertLedgerCurrent, migrateLedger } from './migrateLedger.js';
import { claimedEvent, movedEvent, staleClaimEvent } from './ledgerEvents.js';
import type { ClaimRequest, EventInput, Ledger, MovedFile } from './ledger.js';
import type { EventKind, FileRow, FileState, LedgerEvent, RunCounts, RunMode, RunRow } from './types.js';

/** How long a write waits for another process's write before giving up. */
export const DEFAULT_BUSY_TIMEOUT_MS = 15_000;

const now = () => new Date().toISOString();

const FILE_COLUMNS = `id, name, sha256, state, run_id AS runId, size, row_count AS rowCount, reason,
  owner_host AS ownerHost, owner_pid AS ownerPid, owner_started_at AS ownerStartedAt,
  lease_until AS leaseUntil, location, arrival, first_seen_at AS firstSeenAt, updated_at AS updatedAt`;

const RUN_COLUMNS = `run_id AS runId, mode, host, pid, started_at AS startedAt, ended_at AS endedAt,
  loaded, skipped, held, rejected, failed, not_ready AS notReady, reprocessed, row_count AS rowCount, exit_status AS exitStatus`;

/** States a new claim may take over: the earlier decision about this (name, content) was not final for the content. */
const RECLAIMABLE: FileState[] = ['duplicate', 'held', 'rejected', 'failed'];

/**
 * The claim: ONE statement. It inserts the (name, content) as claimed, or takes over a
 * non-live row of the same (name, content); it does nothing when the content is live
 * (claimed or loaded) under any name. The first conflict target repeats the partial index.
 */
const CLAIM_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, owner_host, owner_pid, owner_started_at,
                             lease_until, first_seen_at, updated_at)
VALUES (@name, @sha256, 'claimed', @runId, @size, @arrival, @host, @pid, @startedAt, @leaseUntil, @now, @now)
ON CONFLICT (sha256) WHERE state IN ('claimed', 'loaded') DO NOTHING
ON CONFLICT (name, sha256) DO UPDATE SET
  state = 'claimed', run_id = excluded.run_id, size = excluded.size, arrival = excluded.arrival, owner_host = excluded.owner_host,
  owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  lease_until = excluded.lease_until, location = NULL, reason = NULL, row_count = NULL,
  updated_at = excluded.updated_at
WHERE processed_files.state IN (${RECLAIMABLE.map((s) => `'${s}'`).join(', ')})
  AND NOT EXISTS (SELECT 1 FROM processed_files live
                  WHERE live.sha256 = excluded.sha256 AND live.state IN ('claimed', 'loaded'))
RETURNING id`;

function translateOpenError(err: unknown, path: string, busyTimeoutMs: number): SettleError {
  const code = (err as { code?: string }).code ?? '';
  const msg = (err as Error).message;
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED') {
    return new TransientError(`ledger ${path} is locked by another process (waited ${busyTimeoutMs / 1000}s)`, { cause: err });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new UsageError(`ledger ${path} is not a SQLite ledger (${msg})`, { cause: err });
  }
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR')) {
    return new UsageError(`ledger ${path} cannot be opened for writing (${msg})`, { cause: err });
  }
  return new UsageError(`ledger ${path}: ${msg}`, { cause: err });
}

export class SqliteLedger implements Ledger {
  readonly path: string;
  readonly location: string;
  private readonly db: Database.Database;

  private constructor(
    path: string,
    db: Database.Database,
    private readonly busyTimeoutMs: number,
  ) {
    this.path = path;
    this.location = path;
    this.db = db;
  }

  /** Opens the ledger. `run` and the reports need it to exist and be current; `migrate` creates it. */
  static open(path: string, opts: { create: boolean; busyTimeoutMs?: number }): SqliteLedger {
    const busyTimeoutMs = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!opts.create && !existsSync(path)) {
      throw new UsageError(`ledger ${path} does not exist: run \`settle-ingest migrate\` first`);
    }
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { fileMustExist: !opts.create, timeout: busyTimeoutMs });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      const ledger = new SqliteLedger(path, db, busyTimeoutMs);
      if (opts.create) migrateLedger(db);
      else assertLedgerCurrent(db, path);
      return ledger;
    } catch (err) {
      db?.close();
      if (err instanceof SettleError) throw err;
      throw translateOpenError(err, path, busyTimeoutMs);
    }
  }

  /**
   * Wraps every write so a locked or failing ledger surfaces as one clear error. Once a run is
   * under way a failed write (disk full, I/O error) is exit 1, not a configuration problem.
   */
  private write<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      if (err instanceof SettleError) throw err;
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED') throw translateOpenError(err, this.path, this.busyTimeoutMs);
      if (code.startsWith('SQLITE_')) {
        throw new TransientError(`ledger ${this.path}: a write failed (${(err as Error).message})`, { cause: err });
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }

  // ---- runs

  /**
   * Records a new run under the first id from `newId` that is not taken yet (two runs may
   * start in the same minute with the same short random tag) and returns that id.
   */
  async startRun(run: { mode: RunMode; host: string; pid: number }, newId: () => string): Promise<string> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const runId = newId();
      const inserted = this.write(
        () =>
          this.db
            .prepare('INSERT INTO runs (run_id, mode, host, pid, started_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
            .run(runId, run.mode, run.host, run.pid, now()).changes,
      );
      if (inserted === 1) return runId;
    }
    throw new Error('could not find a free run id');
  }

  async finishRun(runId: string, counts: RunCounts, exitStatus: number): Promise<void> {
    this.write(() =>
      this.db
        .prepare(
          `UPDATE runs SET ended_at = ?, loaded = ?, skipped = ?, held = ?, rejected = ?, failed = ?,
             not_ready = ?, reprocessed = ?, row_count = ?, exit_status = ? WHERE run_id = ?`,
        )
        .run(
          now(),
          counts.loaded,
          counts.skipped,
          counts.held,
          counts.rejected,
          counts.failed,
          counts.notReady,
          counts.reprocessed ?? null,
          counts.rows,
          exitStatus,
          runId,
        ),
    );
  }

  async run(runId: string): Promise<RunRow | undefined> {
    return this.db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`).get(runId) as RunRow | undefined;
  }

  async recentRuns(limit: number): Promise<RunRow[]> {
    return this.db.prepare(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(limit) as RunRow[];
  }

  // ---- events

  private appendEvent(e: EventInput): void {
    this.db
      .prepare('INSERT INTO ledger_events (run_id, at, event, name, sha256, details) VALUES (?, ?, ?, ?, ?, ?)')
      .run(e.runId, now(), e.event, e.name, e.sha256, JSON.stringify(e.details ?? {}));
  }

  async record(e: EventInput): Promise<void> {
    this.write(() => this.appendEvent(e));
  }

  async eventsOfRun(runId: string): Promise<LedgerEvent[]> {
    return this.parseEvents(this.db.prepare('SELECT * FROM ledger_events WHERE run_id = ? ORDER BY id').all(runId));
  }

  /** Every event for a file name or a content hash, oldest first. */
  async eventsFor(nameOrSha: string): Promise<LedgerEvent[]> {
    return this.parseEvents(
      this.db.prepare('SELECT * FROM ledger_events WHERE name = ? OR sha256 = ? ORDER BY id').all(nameOrSha, nameOrSha.toLowerCase()),
    );
  }

  private parseEvents(rows: unknown[]): LedgerEvent[] {
    return (
      rows as { id: number; run_id: string | null; at: string; event: EventKind; name: string; sha256: string | null; details: string }[]
    ).map((r) => ({ id: r.id, runId: r.run_id, at: r.at, event: r.event, name: r.name, sha256: r.sha256, details: JSON.parse(r.details) }));
  }

  // ---- files

  async file(name: string, sha256: string): Promise<FileRow | undefined> {
    return this.db.prepare(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE name = ? AND sha256 = ?`).get(name, sha256) as
      FileRow | undefined;
  }

  /** The row that currently owns this content (claimed or loaded), if any. */
  async liveHolder(sha256: string): Promise<FileRow | undefined> {
    return this.db
      .prepare(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE sha256 = ? AND state IN ('claimed', 'loaded')`)
      .get(sha256) as FileRow | undefined;
  }

  /** The conditional create that decides who loads a file. True: this run owns the claim. */
  async claim(req: ClaimRequest): Promise<boolean> {
    return this.write(() => {
      let won: boolean;
      try {
        won =
          this.db.prepare(CLAIM_SQL).get({
            name: req.name,
            sha256: req.sha256,
            runId: req.runId,
            size: req.size,
            arrival: req.arrival,
            host: req.owner.host,
            pid: req.owner.pid,
            startedAt: req.owner.startedAt,
            leaseUntil: req.leaseUntil.toISOString(),
            now: now(),
          }) !== undefined;
      } catch (err) {
        // A uniqueness failure here means another claimant won at the same instant.
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') won = false;
        else throw err;
      }
      if (won) {
        this.appendEvent(claimedEvent(req));
      }
      return won;
    });
  }

  /**
   * Finalizes a claim this run owns: the new state and its event in one transaction.
   * Returns false if the claim is no longer this run's (it was expired by another run).
   */
  async finalizeClaim(
    f: { name: string; sha256: string; runId: string },
    to: { state: 'loaded' | 'rejected' | 'failed' | 'duplicate'; event: EventKind; rows?: number; reason?: string },
    details: Record<string, unknown>,
    extraEvents: EventKind[] = [],
  ): Promise<boolean> {
    return this.write(() => {
      const r = this.db
        .prepare(
          `UPDATE processed_files SET state = ?, row_count = ?, reason = ?, owner_host = NULL, owner_pid = NULL,
             owner_started_at = NULL, lease_until = NULL, updated_at = ?
           WHERE name = ? AND sha256 = ? AND state = 'claimed' AND run_id = ?`,
        )
        .run(to.state, to.rows ?? null, to.reason ?? null, now(), f.name, f.sha256, f.runId);
      if (r.changes !== 1) return false;
      this.appendEvent({ runId: f.runId, event: to.event, name: f.name, sha256: f.sha256, details });
      for (const e of extraEvents) this.appendEvent({ runId: f.runId, event: e, name: f.name, sha256: f.sha256, details });
      return true;
    });
  }

  /** The (name, content) row is created or updated as held, unless it is live (another run's). */
  async recordHeld(f: { name: string; sha256: string; size: number; runId: string }, details: Record<string, unknown>): Promise<void> {
    this.write(() => {
      this.db
        .prepare(
          `INSERT INTO processed_files (name, sha256, state, run_id, size, first_seen_at, updated_at)
           VALUES (@name, @sha256, 'held', @runId, @size, @now, @now)
           ON CONFLICT (name, sha256) DO UPDATE SET state = 'held', run_id = excluded.run_id,
             reason = NULL, location = NULL, updated_at = excluded.updated_at
           WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
        )
        .run({ name: f.name, sha256: f.sha256, runId: f.runId, size: f.size, now: now() });
      this.appendEvent({ runId: f.runId, event: 'held', name: f.name, sha256: f.sha256, details });
    });
  }

  private insertMove(f: MovedFile, location: string): boolean {
    return (
      this.db
        .prepare('INSERT INTO moves (location, name, sha256, arrival, run_id, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
        .run(location, f.name, f.sha256, f.arrival, f.runId, now()).changes === 1
    );
  }

  async markMoved(f: MovedFile, location: string): Promise<boolean> {
    return this.write(() => {
      if (!this.insertMove(f, location)) return false;
      this.db
        .prepare('UPDATE processed_files SET location = ?, updated_at = ? WHERE name = ? AND sha256 = ?')
        .run(location, now(), f.name, f.sha256);
      this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  async recordSkip(
    f: MovedFile & { size: number },
    renamed: boolean,
    location: string,
    details: Record<string, unknown>,
  ): Promise<boolean> {
    return this.write(() => {
      if (!this.insertMove(f, location)) return false;
      if (renamed) {
        this.db
          .prepare(
            `INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at)
             VALUES (@name, @sha256, 'duplicate', @runId, @size, @arrival, @location, @now, @now)
             ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', run_id = excluded.run_id, reason = NULL,
               arrival = excluded.arrival, location = excluded.location, updated_at = excluded.updated_at
             WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
          )
          .run({ name: f.name, sha256: f.sha256, runId: f.runId, size: f.size, arrival: f.arrival, location, now: now() });
      }
      this.appendEvent({ runId: f.runId, event: 'skipped', name: f.name, sha256: f.sha256, details });
      this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  async settleStaleClaim(
    stale: FileRow,
    runId: string,
    to: { state: 'loaded' | 'failed'; rows?: number; reason: string },
  ): Promise<boolean> {
    return this.write(() => {
      const r = this.db
        .prepare(
          `UPDATE processed_files SET state = ?, row_count = ?, reason = ?, owner_host = NULL, owner_pid = NULL,
             owner_started_at = NULL, lease_until = NULL, updated_at = ?
           WHERE id = ? AND state = 'claimed' AND run_id = ? AND updated_at = ?`,
        )
        .run(to.state, to.rows ?? null, to.state === 'failed' ? to.reason : null, now(), stale.id, stale.runId, stale.updatedAt);
      if (r.changes !== 1) return false;
      this.appendEvent(staleClaimEvent(stale, runId, to));
      return true;
    });
  }

  /** Events of the given kinds at or after `since` (ISO time), oldest first. */
  async eventsSince(kinds: EventKind[], since: string): Promise<LedgerEvent[]> {
    const marks = kinds.map(() => '?').join(', ');
    return this.parseEvents(
      this.db.prepare(`SELECT * FROM ledger_events WHERE event IN (${marks}) AND at >= ? ORDER BY id`).all(...kinds, since),
    );
  }

  async filesInState(state: FileState): Promise<FileRow[]> {
    return this.db.prepare(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE state = ? ORDER BY id`).all(state) as FileRow[];
  }

  /** Whether the ledger has ever seen this content, under any name and in any state. */
  async knowsContent(sha256: string): Promise<FileRow[]> {
    return this.db.prepare(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE sha256 = ? ORDER BY id`).all(sha256) as FileRow[];
  }

  /** Contents recorded as loaded (or recovered as loaded) by more than one event: must never happen. */
  async contentsLoadedTwice(): Promise<{ sha256: string; loads: number }[]> {
    return this.db
      .prepare(
        `SELECT sha256, count(*) AS loads FROM ledger_events WHERE event IN ('loaded', 'recovered') AND sha256 IS NOT NULL
          GROUP BY sha256 HAVING count(*) > 1`,
      )
      .all() as { sha256: string; loads: number }[];
  }

  async adoptLoaded(
    f: { name: string; sha256: string; size: number; runId: string },
    location: string,
    rows: number | null,
  ): Promise<boolean> {
    return this.write(() => {
      const at = now();
      const inserted = this.db
        .prepare(
          `INSERT INTO processed_files (name, sha256, state, run_id, size, row_count, location, first_seen_at, updated_at)
           VALUES (?, ?, 'loaded', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        )
        .run(f.name, f.sha256, f.runId, f.size, rows, location, at, at).changes;
      if (inserted !== 1) return false;
      this.appendEvent({
        runId: f.runId,
        event: 'loaded',
        name: f.name,
        sha256: f.sha256,
        details: { adopted: true, from: location, rows },
      });
      return true;
    });
  }

  /** The contents loaded under this name (usually one; more if the partner reused a name). */
  async loadedNamed(name: string): Promise<FileRow[]> {
    return this.db
      .prepare(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE name = ? AND state = 'loaded' ORDER BY id`)
      .all(name) as FileRow[];
  }

  /** A reprocessing replaced this content's rows: the new count and the `reprocessed` event, together. */
  async recordReprocessed(
    f: { name: string; sha256: string; runId: string },
    details: { rows: number } & Record<string, unknown>,
  ): Promise<void> {
    this.write(() => {
      this.db
        .prepare(`UPDATE processed_files SET row_count = ?, updated_at = ? WHERE name = ? AND sha256 = ? AND state = 'loaded'`)
        .run(details.rows, now(), f.name, f.sha256);
      this.appendEvent({ runId: f.runId, event: 'reprocessed', name: f.name, sha256: f.sha256, details });
    });
  }
}
