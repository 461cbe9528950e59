import pg from 'pg';
import { SettleError, TransientError, errorMessage } from '../errors.js';
import { PG_UNIQUE_VIOLATION, pgCode } from '../pgErrors.js';
import { assertPgCurrent, migratePg } from '../pgMigrate.js';
import { connectPostgres } from '../pgConnect.js';
import { redactSecrets } from '../redactSecrets.js';
import { claimedEvent, movedEvent, staleClaimEvent } from './ledgerEvents.js';
import type { ClaimRequest, EventInput, FinalState, Ledger, MovedFile } from './ledger.js';
import type { EventKind, FileRow, FileState, LedgerEvent, RunCounts, RunMode, RunRow } from './types.js';

/** The ledger's tables live in their own schema, in whatever database the URL names. */
export const LEDGER_SCHEMA = 'settle_ledger';

const now = () => new Date().toISOString();
const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? null : String(v));
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

const FILE_COLUMNS = `id, name, sha256, state, run_id, size, row_count, reason, owner_host, owner_pid, owner_started_at,
  lease_until, location, arrival, first_seen_at, updated_at`;

function fileRow(r: Record<string, unknown>): FileRow {
  return {
    id: Number(r.id),
    name: r.name as string,
    sha256: r.sha256 as string,
    state: r.state as FileState,
    runId: r.run_id as string,
    size: Number(r.size),
    rowCount: num(r.row_count),
    reason: (r.reason as string | null) ?? null,
    ownerHost: (r.owner_host as string | null) ?? null,
    ownerPid: num(r.owner_pid),
    ownerStartedAt: (r.owner_started_at as string | null) ?? null,
    leaseUntil: iso(r.lease_until),
    location: (r.location as string | null) ?? null,
    arrival: (r.arrival as string | null) ?? null,
    firstSeenAt: iso(r.first_seen_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

function runRow(r: Record<string, unknown>): RunRow {
  return {
    runId: r.run_id as string,
    mode: r.mode as RunMode,
    host: r.host as string,
    pid: Number(r.pid),
    startedAt: iso(r.started_at)!,
    endedAt: iso(r.ended_at),
    loaded: num(r.loaded),
    skipped: num(r.skipped),
    held: num(r.held),
    rejected: num(r.rejected),
    failed: num(r.failed),
    notReady: num(r.not_ready),
    reprocessed: num(r.reprocessed),
    rowCount: num(r.row_count),
    exitStatus: num(r.exit_status),
  };
}

function eventRow(r: Record<string, unknown>): LedgerEvent {
  return {
    id: Number(r.id),
    runId: (r.run_id as string | null) ?? null,
    at: iso(r.at)!,
    event: r.event as EventKind,
    name: r.name as string,
    sha256: (r.sha256 as string | null) ?? null,
    details: r.details as Record<string, unknown>,
  };
}

const RECLAIMABLE: FileState[] = ['duplicate', 'held', 'rejected', 'failed'];

/**
 * The claim in PostgreSQL: ONE statement. PostgreSQL takes a single conflict target, so
 * the (name, content) row is the target and a live twin under another name makes the
 * partial unique index refuse the statement: both are a lost claim. The NOT EXISTS keeps a
 * re-claim from even trying while a committed twin is live.
 */
const CLAIM_SQL = `
INSERT INTO processed_files (name, sha256, state, run_id, size, owner_host, owner_pid, owner_started_at,
                             lease_until, first_seen_at, updated_at, arrival)
VALUES ($1, $2, 'claimed', $3, $4, $5, $6, $7, $8, $9, $9, $10)
ON CONFLICT (name, sha256) DO UPDATE SET
  state = 'claimed', run_id = excluded.run_id, size = excluded.size, arrival = excluded.arrival, owner_host = excluded.owner_host,
  owner_pid = excluded.owner_pid, owner_started_at = excluded.owner_started_at,
  lease_until = excluded.lease_until, location = NULL, reason = NULL, row_count = NULL,
  updated_at = excluded.updated_at
WHERE processed_files.state IN (${RECLAIMABLE.map((s) => `'${s}'`).join(', ')})
  AND NOT EXISTS (SELECT 1 FROM processed_files live
                  WHERE live.sha256 = excluded.sha256 AND live.state IN ('claimed', 'loaded'))
RETURNING id`;

export class PgLedger implements Ledger {
  private constructor(
    readonly location: string,
    private readonly client: pg.Client,
  ) {}

  /** Connects, and creates or upgrades the schema (`create`) or checks that it is current. */
  static async open(url: string, opts: { create: boolean }): Promise<PgLedger> {
    const location = redactSecrets(url);
    const client = await connectPostgres(url, {
      what: 'ledger',
      applicationName: 'settle-ingest ledger',
      connectTimeoutMs: 15_000,
      onError: () => undefined, // a dropped idle connection surfaces on the next query
    });
    try {
      if (opts.create) await migratePg(client, LEDGER_SCHEMA, 'ledger-pg');
      else await assertPgCurrent(client, LEDGER_SCHEMA, 'ledger-pg', `ledger ${location}: schema`);
      await client.query(`SET search_path TO ${pg.escapeIdentifier(LEDGER_SCHEMA)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return new PgLedger(location, client);
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }

  private async query(sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    try {
      return (await this.client.query(sql, params)).rows as Record<string, unknown>[];
    } catch (err) {
      throw this.translate(err);
    }
  }

  private translate(err: unknown): unknown {
    if (err instanceof SettleError || pgCode(err) === PG_UNIQUE_VIOLATION) return err;
    return new TransientError(`ledger ${this.location}: ${errorMessage(err)}`, { cause: err });
  }

  /** Runs `fn` in one transaction: the state change and its event commit together. */
  private async tx<T>(fn: () => Promise<T>): Promise<T> {
    await this.query('BEGIN');
    try {
      const result = await fn();
      await this.query('COMMIT');
      return result;
    } catch (err) {
      await this.client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  private async appendEvent(e: EventInput): Promise<void> {
    await this.query('INSERT INTO ledger_events (run_id, at, event, name, sha256, details) VALUES ($1, $2, $3, $4, $5, $6)', [
      e.runId,
      now(),
      e.event,
      e.name,
      e.sha256,
      JSON.stringify(e.details ?? {}),
    ]);
  }

  // ---- runs

  async startRun(run: { mode: RunMode; host: string; pid: number }, newId: () => string): Promise<string> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const runId = newId();
      const rows = await this.query(
        `INSERT INTO runs (run_id, mode, host, pid, started_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING run_id`,
        [runId, run.mode, run.host, run.pid, now()],
      );
      if (rows.length === 1) return runId;
    }
    throw new Error('could not find a free run id');
  }

  async finishRun(runId: string, c: RunCounts, exitStatus: number): Promise<void> {
    await this.query(
      `UPDATE runs SET ended_at = $1, loaded = $2, skipped = $3, held = $4, rejected = $5, failed = $6, not_ready = $7,
         reprocessed = $8, row_count = $9, exit_status = $10 WHERE run_id = $11`,
      [now(), c.loaded, c.skipped, c.held, c.rejected, c.failed, c.notReady, c.reprocessed ?? null, c.rows, exitStatus, runId],
    );
  }

  async run(runId: string): Promise<RunRow | undefined> {
    const rows = await this.query('SELECT * FROM runs WHERE run_id = $1', [runId]);
    return rows[0] ? runRow(rows[0]) : undefined;
  }

  async recentRuns(limit: number): Promise<RunRow[]> {
    return (await this.query('SELECT * FROM runs ORDER BY started_at DESC, run_id DESC LIMIT $1', [limit])).map(runRow);
  }

  // ---- events

  async record(e: EventInput): Promise<void> {
    await this.appendEvent(e);
  }

  async eventsOfRun(runId: string): Promise<LedgerEvent[]> {
    return (await this.query('SELECT * FROM ledger_events WHERE run_id = $1 ORDER BY id', [runId])).map(eventRow);
  }

  async eventsFor(nameOrSha: string): Promise<LedgerEvent[]> {
    const rows = await this.query('SELECT * FROM ledger_events WHERE name = $1 OR sha256 = $2 ORDER BY id', [
      nameOrSha,
      nameOrSha.toLowerCase(),
    ]);
    return rows.map(eventRow);
  }

  async eventsSince(kinds: EventKind[], since: string): Promise<LedgerEvent[]> {
    return (await this.query('SELECT * FROM ledger_events WHERE event = ANY($1) AND at >= $2 ORDER BY id', [kinds, since])).map(eventRow);
  }

  async contentsLoadedTwice(): Promise<{ sha256: string; loads: number }[]> {
    const rows = await this.query(
      `SELECT sha256, count(*) AS loads FROM ledger_events WHERE event IN ('loaded', 'recovered') AND sha256 IS NOT NULL
        GROUP BY sha256 HAVING count(*) > 1`,
    );
    return rows.map((r) => ({ sha256: r.sha256 as string, loads: Number(r.loads) }));
  }

  // ---- files

  private async files(where: string, params: unknown[]): Promise<FileRow[]> {
    return (await this.query(`SELECT ${FILE_COLUMNS} FROM processed_files WHERE ${where} ORDER BY id`, params)).map(fileRow);
  }

  async file(name: string, sha256: string): Promise<FileRow | undefined> {
    return (await this.files('name = $1 AND sha256 = $2', [name, sha256]))[0];
  }

  async liveHolder(sha256: string): Promise<FileRow | undefined> {
    return (await this.files(`sha256 = $1 AND state IN ('claimed', 'loaded')`, [sha256]))[0];
  }

  filesInState(state: FileState): Promise<FileRow[]> {
    return this.files('state = $1', [state]);
  }

  knowsContent(sha256: string): Promise<FileRow[]> {
    return this.files('sha256 = $1', [sha256]);
  }

  loadedNamed(name: string): Promise<FileRow[]> {
    return this.files(`name = $1 AND state = 'loaded'`, [name]);
  }

  async claim(req: ClaimRequest): Promise<boolean> {
    try {
      return await this.tx(async () => {
        const won = await this.query(CLAIM_SQL, [
          req.name,
          req.sha256,
          req.runId,
          req.size,
          req.owner.host,
          req.owner.pid,
          req.owner.startedAt,
          req.leaseUntil.toISOString(),
          now(),
          req.arrival,
        ]);
        if (won.length === 0) return false;
        await this.appendEvent(claimedEvent(req));
        return true;
      });
    } catch (err) {
      if (pgCode(err) === PG_UNIQUE_VIOLATION) return false; // a twin under another name is live
      throw err;
    }
  }

  async finalizeClaim(
    f: { name: string; sha256: string; runId: string },
    to: { state: FinalState; event: EventKind; rows?: number; reason?: string },
    details: Record<string, unknown>,
    extraEvents: EventKind[] = [],
  ): Promise<boolean> {
    return this.tx(async () => {
      const done = await this.query(
        `UPDATE processed_files SET state = $1, row_count = $2, reason = $3, owner_host = NULL, owner_pid = NULL,
           owner_started_at = NULL, lease_until = NULL, updated_at = $4
         WHERE name = $5 AND sha256 = $6 AND state = 'claimed' AND run_id = $7 RETURNING id`,
        [to.state, to.rows ?? null, to.reason ?? null, now(), f.name, f.sha256, f.runId],
      );
      if (done.length !== 1) return false;
      for (const event of [to.event, ...extraEvents])
        await this.appendEvent({ runId: f.runId, event, name: f.name, sha256: f.sha256, details });
      return true;
    });
  }

  async recordHeld(f: { name: string; sha256: string; size: number; runId: string }, details: Record<string, unknown>): Promise<void> {
    await this.tx(async () => {
      await this.query(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, first_seen_at, updated_at)
         VALUES ($1, $2, 'held', $3, $4, $5, $5)
         ON CONFLICT (name, sha256) DO UPDATE SET state = 'held', run_id = excluded.run_id,
           reason = NULL, location = NULL, updated_at = excluded.updated_at
         WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
        [f.name, f.sha256, f.runId, f.size, now()],
      );
      await this.appendEvent({ runId: f.runId, event: 'held', name: f.name, sha256: f.sha256, details });
    });
  }

  private async insertMove(f: MovedFile, location: string): Promise<boolean> {
    const rows = await this.query(
      `INSERT INTO moves (location, name, sha256, arrival, run_id, at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING location`,
      [location, f.name, f.sha256, f.arrival, f.runId, now()],
    );
    return rows.length === 1;
  }

  async markMoved(f: MovedFile, location: string): Promise<boolean> {
    return this.tx(async () => {
      if (!(await this.insertMove(f, location))) return false;
      await this.query('UPDATE processed_files SET location = $1, updated_at = $2 WHERE name = $3 AND sha256 = $4', [
        location,
        now(),
        f.name,
        f.sha256,
      ]);
      await this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  async recordSkip(
    f: MovedFile & { size: number },
    renamed: boolean,
    location: string,
    details: Record<string, unknown>,
  ): Promise<boolean> {
    return this.tx(async () => {
      if (!(await this.insertMove(f, location))) return false;
      if (renamed) {
        const at = now();
        await this.query(
          `INSERT INTO processed_files (name, sha256, state, run_id, size, location, first_seen_at, updated_at, arrival)
           VALUES ($1, $2, 'duplicate', $3, $4, $5, $6, $6, $7)
           ON CONFLICT (name, sha256) DO UPDATE SET state = 'duplicate', run_id = excluded.run_id, reason = NULL,
             arrival = excluded.arrival, location = excluded.location, updated_at = excluded.updated_at
           WHERE processed_files.state NOT IN ('claimed', 'loaded')`,
          [f.name, f.sha256, f.runId, f.size, location, at, f.arrival],
        );
      }
      await this.appendEvent({ runId: f.runId, event: 'skipped', name: f.name, sha256: f.sha256, details });
      await this.appendEvent(movedEvent(f, location));
      return true;
    });
  }

  async settleStaleClaim(
    stale: FileRow,
    runId: string,
    to: { state: 'loaded' | 'failed'; rows?: number; reason: string },
  ): Promise<boolean> {
    return this.tx(async () => {
      const done = await this.query(
        `UPDATE processed_files SET state = $1, row_count = $2, reason = $3, owner_host = NULL, owner_pid = NULL,
           owner_started_at = NULL, lease_until = NULL, updated_at = $4
         WHERE id = $5 AND state = 'claimed' AND run_id = $6 AND updated_at = $7 RETURNING id`,
        [to.state, to.rows ?? null, to.state === 'failed' ? to.reason : null, now(), stale.id, stale.runId, stale.updatedAt],
      );
      if (done.length !== 1) return false;
      await this.appendEvent(staleClaimEvent(stale, runId, to));
      return true;
    });
  }

  async adoptLoaded(
    f: { name: string; sha256: string; size: number; runId: string },
    location: string,
    rows: number | null,
  ): Promise<boolean> {
    return this.tx(async () => {
      const at = now();
      const inserted = await this.query(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, row_count, location, first_seen_at, updated_at)
         VALUES ($1, $2, 'loaded', $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING RETURNING id`,
        [f.name, f.sha256, f.runId, f.size, rows, location, at],
      );
      if (inserted.length !== 1) return false;
      await this.appendEvent({
        runId: f.runId,
        event: 'loaded',
        name: f.name,
        sha256: f.sha256,
        details: { adopted: true, from: location, rows },
      });
      return true;
    });
  }

  async recordReprocessed(
    f: { name: string; sha256: string; runId: string },
    details: { rows: number } & Record<string, unknown>,
  ): Promise<void> {
    await this.tx(async () => {
      await this.query(`UPDATE processed_files SET row_count = $1, updated_at = $2 WHERE name = $3 AND sha256 = $4 AND state = 'loaded'`, [
        details.rows,
        now(),
        f.name,
        f.sha256,
      ]);
      await this.appendEvent({ runId: f.runId, event: 'reprocessed', name: f.name, sha256: f.sha256, details });
    });
  }
}
