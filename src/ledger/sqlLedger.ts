import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import { CLOCK_SKEW_LIMIT_SECONDS } from '../clock.js';
import { redactSecrets, redactValues } from '../redactSecrets.js';
import { claimedEvent, movedEvent, moveFailedEvent, outcomeEvent, staleClaimEvent } from './ledgerEvents.js';
import { IGNORED_SEEN_BY_SQL, IGNORED_SINCE_SQL, IGNORED_STREAK_SQL, markIgnored, PREVIOUS_RUN_SQL } from './ignoredNames.js';
import type { Destination } from '../destination.js';
import type {
  ClaimRequest,
  EventInContext,
  EventInput,
  FinalState,
  IgnoredEntry,
  LandedMove,
  Ledger,
  MoveIntent,
  MovedFile,
} from './ledger.js';
import {
  ADOPT_SQL,
  CLAIM_SQL,
  DUPLICATE_SQL,
  END_CLAIM,
  HELD_SQL,
  HOLDS_LIVE_CONTENT,
  LIVE,
  UNMOVED_DUPLICATE_SQL,
} from './processedFilesSql.js';
import { dropIntent, insertIntent, insertMove, MOVE_INTENTS_SQL, MOVE_OF_ARRIVAL_SQL } from './sqlMoves.js';
import { PartnerLeases } from './partnerLeases.js';
import type { Durability, SqlPort, SqlRow } from './sqlPort.js';
import {
  eventColumns,
  EVENT_RUN_ID,
  eventInContextOfArray,
  eventRow,
  fileRow,
  intentRow,
  iso,
  landedRow,
  marks,
  RUN_COUNT_COLUMNS,
  runCountValues,
  runRow,
} from './sqlRows.js';

import {
  DEFAULT_PARTNER,
  type EventKind,
  type FileRow,
  type FileState,
  type LeaseAnswer,
  type LeaseHolder,
  type LeaseTerms,
  type LedgerEvent,
  type MoveFailure,
  type PartnerLease,
  type SkipNote,
  type RunCounts,
  type RunMode,
  type RunRow,
} from './types.js';

/** `partner IN (?, …)`, or nothing when every partner is asked for. */
function partnerFilter(partners: string[] | undefined, column = 'partner'): { sql: string; params: string[] } {
  if (partners === undefined) return { sql: '', params: [] };
  if (partners.length === 0) return { sql: ' AND 1 = 0', params: [] };
  return { sql: ` AND ${column} IN (${marks(partners.length)})`, params: partners };
}

/**
 * The runs without an end, which every partner's run looks at first (startOfRun.ts): by the
 * partial index of them (`runs_open`, ledger schema 21), never over every run ever recorded.
 */
export const OPEN_RUNS_SQL = 'SELECT * FROM runs WHERE ended_at IS NULL ORDER BY started_at';

/**
 * The ledger's rules, written once for every store. Each public method is one step of the
 * ledger, run one at a time per process: a transaction is never interleaved with another
 * method's statements on the same connection.
 */
export class SqlLedger implements Ledger {
  /**
   * `partner`: the partner this view writes for (its runs, files, events and moves) and whose
   * unfinished moves it finishes; every view of one store shares its connection and its queue.
   */
  constructor(
    private readonly db: SqlPort,
    readonly partner: string = DEFAULT_PARTNER,
    private readonly line: { tail: Promise<unknown> } = { tail: Promise.resolve() },
  ) {}

  get location(): string {
    return this.db.location;
  }

  get sharedAcrossHosts(): boolean {
    return this.db.sharedAcrossHosts;
  }

  /** The ledger's clock (sqlPort.ts): its server's now on PostgreSQL, this host's for a SQLite file. */
  async ledgerNow(): Promise<number> {
    const [row] = await this.read('SELECT ledger_now() AS now');
    const now = row!.now;
    return now instanceof Date ? now.getTime() : Date.parse(String(now));
  }

  forPartner(partner: string): SqlLedger {
    return partner === this.partner ? this : new SqlLedger(this.db, partner, this.line);
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const result = this.line.tail.then(task, task);
    this.line.tail = result.catch(() => undefined);
    return result;
  }

  private tx<T>(task: () => Promise<T>, durability: Durability = 'synced'): Promise<T> {
    return this.serial(() => this.db.transaction(task, durability));
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
          `INSERT INTO runs (run_id, mode, host, pid, started_at, status, partner) VALUES (?, ?, ?, ?, ledger_now(), 'running', ?) ON CONFLICT DO NOTHING`,
          [runId, run.mode, run.host, run.pid, this.partner],
        ),
      );
      if (inserted === 1) return runId;
    }
    throw new Error('could not find a free run id');
  }

  /** Closes a run with its counts and exit status; `not_started` with the reason it could not work. */
  async finishRun(
    runId: string,
    runCounts: RunCounts,
    exitStatus: number,
    end: { status: 'finished' | 'not_started'; reason?: string } = { status: 'finished' },
  ): Promise<void> {
    await this.tx(() =>
      this.db.run(
        `UPDATE runs SET ended_at = ledger_now(), status = ?, reason = ?, ${RUN_COUNT_COLUMNS.map((col) => `${col} = ?`).join(', ')},
           exit_status = ? WHERE run_id = ?`,
        [end.status, end.reason === undefined ? null : redactSecrets(end.reason), ...runCountValues(runCounts), exitStatus, runId],
      ),
    );
  }

  async countRunAttempt(runId: string, exitStatus: number, reason: string): Promise<boolean> {
    const changed = await this.tx(() =>
      this.db.run(
        `UPDATE runs SET attempts = COALESCE(attempts, 1) + 1, ended_at = ledger_now(), reason = ?, exit_status = ?
           WHERE run_id = ? AND status = 'not_started'`,
        [redactSecrets(reason), exitStatus, runId],
      ),
    );
    return changed === 1;
  }

  async recordProcessExit(runIds: string[], exitStatus: number): Promise<void> {
    if (runIds.length === 0) return;
    await this.tx(() =>
      this.db.run(`UPDATE runs SET process_exit_status = ? WHERE run_id IN (${marks(runIds.length)})`, [exitStatus, ...runIds]),
    );
  }

  /** Runs without an end, oldest first: running now, or dead and not yet closed. */
  async openRuns(): Promise<RunRow[]> {
    return (await this.read(OPEN_RUNS_SQL)).map(runRow);
  }

  /** A run whose process is gone without an end is closed as `died` by the run that found it; false if already closed. */
  async closeDeadRun(runId: string, foundBy: string, reason: string): Promise<boolean> {
    const changed = await this.tx(() =>
      this.db.run(`UPDATE runs SET ended_at = ledger_now(), status = 'died', reason = ? WHERE run_id = ? AND ended_at IS NULL`, [
        redactSecrets(`${reason}; closed by run ${foundBy}`),
        runId,
      ]),
    );
    return changed === 1;
  }

  async run(runId: string): Promise<RunRow | undefined> {
    const rows = await this.read('SELECT * FROM runs WHERE run_id = ?', [runId]);
    return rows[0] ? runRow(rows[0]) : undefined;
  }

  async recentRuns(limit: number, partners?: string[]): Promise<RunRow[]> {
    const only = partnerFilter(partners);
    const rows = await this.read(`SELECT * FROM runs WHERE 1 = 1${only.sql} ORDER BY started_at DESC, run_id DESC LIMIT ?`, [
      ...only.params,
      limit,
    ]);
    return rows.map(runRow);
  }

  async runsOfCommand(commandId: string, partners?: string[]): Promise<RunRow[]> {
    const only = partnerFilter(partners);
    // the command's own id (its `default` partner's run) or a partner's (`ID-adyen`): no id has `_` or `%` for LIKE to read
    const rows = await this.read(`SELECT * FROM runs WHERE (run_id = ? OR run_id LIKE ?)${only.sql} ORDER BY started_at, run_id`, [
      commandId,
      `${commandId}-%`,
      ...only.params,
    ]);
    return rows.map(runRow);
  }

  /**
   * Runs from before statuses were kept (status NULL) count as finished once they have an end. A
   * run that ended ahead of the ledger's clock (past the skew allowed) was recorded by a host
   * whose clock ran ahead, before every time was the ledger's: it vouches for nothing, and never
   * hides the runs after it.
   */
  async latestIngestRun(opts: { successful: boolean; partner?: string }): Promise<RunRow | undefined> {
    const only = partnerFilter(opts.partner === undefined ? undefined : [opts.partner]);
    const rows = await this.read(
      `SELECT * FROM runs WHERE mode <> 'reprocess' AND ended_at IS NOT NULL AND (status = 'finished' OR status IS NULL)
         AND ended_at <= ledger_after(?)
         ${opts.successful ? 'AND exit_status = 0' : ''}${only.sql} ORDER BY ended_at DESC, run_id DESC LIMIT 1`,
      [CLOCK_SKEW_LIMIT_SECONDS, ...only.params],
    );
    return rows[0] ? runRow(rows[0]) : undefined;
  }

  /** When the partner's first run started: what it owes is judged from then on. */
  async firstRunAt(partner: string): Promise<string | undefined> {
    const rows = await this.read('SELECT min(started_at) AS at FROM runs WHERE partner = ?', [partner]);
    return iso(rows[0]?.at) ?? undefined;
  }

  /** The partners the ledger has runs of. */
  async partnersSeen(): Promise<string[]> {
    return (await this.read('SELECT DISTINCT partner FROM runs ORDER BY partner')).map((r) => String(r.partner));
  }

  // ---- events

  private appendEvent(event: EventInput): Promise<number> {
    return this.db.run(
      'INSERT INTO ledger_events (run_id, at, event, name, sha256, details, partner) VALUES (?, ledger_now(), ?, ?, ?, ?, ?)',
      [
        event.runId,
        event.event,
        event.name,
        event.sha256,
        // a reason may quote an error that quotes a URL: nothing the ledger keeps carries a password
        JSON.stringify(redactValues(event.details ?? {})),
        event.partner ?? this.partner,
      ],
    );
  }

  private async events(where: string, params: unknown[]): Promise<LedgerEvent[]> {
    return (await this.read(`SELECT * FROM ledger_events WHERE ${where} ORDER BY id`, params)).map(eventRow);
  }

  async record(eventInput: EventInput): Promise<void> {
    await this.tx(() => this.appendEvent(eventInput));
  }

  recordIgnored(runId: string, entries: IgnoredEntry[]): Promise<IgnoredEntry[]> {
    if (entries.length === 0) return Promise.resolve([]);
    return this.tx(async () => {
      const [previous] = await this.db.all(PREVIOUS_RUN_SQL, [this.partner, runId, runId]);
      const changed = await markIgnored(this.db, this.partner, runId, previous ? String(previous.run_id) : null, entries);
      for (const e of changed) {
        await this.appendEvent({ runId, event: 'ignored', name: e.name, sha256: null, details: { reason: e.reason, size: e.size } });
      }
      return changed;
    });
  }

  async ignoredStreak(name: string): Promise<{ runs: number; since: string } | undefined> {
    const [row] = await this.read(IGNORED_STREAK_SQL, [this.partner, name]);
    return row ? { runs: Number(row.runs_in_a_row), since: iso(row.streak_since)! } : undefined;
  }

  async ignoredSeenBy(runId: string): Promise<{ name: string; reason: string; at: string }[]> {
    return (await this.read(IGNORED_SEEN_BY_SQL, [runId])).map((r) => ({
      name: String(r.name),
      reason: String(r.reason),
      at: iso(r.last_at)!,
    }));
  }

  async ignoredSince(
    since: string,
    partners?: string[],
  ): Promise<{ partner: string; name: string; reason: string; lastAt: string; lastRun: string }[]> {
    const only = partnerFilter(partners);
    return (await this.read(`${IGNORED_SINCE_SQL}${only.sql} ORDER BY name`, [since, ...only.params])).map((r) => ({
      name: String(r.name),
      reason: String(r.reason),
      lastAt: iso(r.last_at)!,
      lastRun: String(r.last_run),
      partner: String(r.partner),
    }));
  }

  eventsOfRun(runId: string): Promise<LedgerEvent[]> {
    return this.events('run_id = ?', [runId]);
  }

  /** Every event for a file name or a hash: of the delivered bytes, or of the content inside them. */
  eventsFor(nameOrSha: string): Promise<LedgerEvent[]> {
    const sha = nameOrSha.toLowerCase();
    return this.events('name = ? OR sha256 = ? OR sha256 IN (SELECT sha256 FROM processed_files WHERE content_sha256 = ?)', [
      nameOrSha,
      sha,
      sha,
    ]);
  }

  /** Events of the given kinds at or after `since` (ISO time), oldest first. */
  eventsSince(kinds: EventKind[], since: string, partners?: string[]): Promise<LedgerEvent[]> {
    const only = partnerFilter(partners);
    return this.events(`event IN (${marks(kinds.length)}) AND at >= ?${only.sql}`, [...kinds, since, ...only.params]);
  }

  eventsBetween(since: string, until: string | null, partners?: string[]): Promise<LedgerEvent[]> {
    const only = partnerFilter(partners);
    const end = until === null ? { sql: '', params: [] } : { sql: ' AND at < ?', params: [until] };
    return this.events(`at >= ?${end.sql}${only.sql}`, [since, ...end.params, ...only.params]);
  }

  /**
   * The transfer log's read of the ledger, where a query per name made the audit grow with the
   * square of the uploads: each event's row (name, bytes) joined to it for its size, a page at a time in the
   * order of the events' ids. The kind and partner are compared as expressions so that no store
   * takes their index and sorts every remaining event for each page: the id's order is the scan's.
   * The start of each run the page names is read once for the page (a page of one night's events
   * names a few runs): joined to every event it was a string per event, a sixth of the read.
   */
  async eventsInContextSince(
    kinds: EventKind[],
    since: string,
    partners: string[] | undefined,
    page: { afterId: number; limit: number },
    names?: readonly string[],
  ): Promise<EventInContext[]> {
    const only = partnerFilter(partners, "(e.partner || '')");
    // by name: the index of names; else a walk by id (the kind and partner kept out of any index's way)
    const which = names
      ? { sql: `e.name IN (${marks(names.length)}) AND e.event IN (${marks(kinds.length)})`, params: [...names, ...kinds] }
      : { sql: `(e.event || '') IN (${marks(kinds.length)})`, params: kinds };
    // one partner's events (an audit of one partner, the usual): its name is known, not read for each
    const onePartner = partners?.length === 1 ? partners[0] : undefined;
    // as arrays: the driver's object per row was two thirds of the read's CPU at a year's two million events
    const rows = await this.serial(() =>
      this.db.arrays(
        `SELECT ${eventColumns(onePartner !== undefined)}, f.size
           FROM ledger_events e
           LEFT JOIN processed_files f ON f.name = e.name AND f.sha256 = e.sha256
          WHERE e.id > ? AND ${which.sql} AND e.at >= ?${only.sql} ORDER BY e.id LIMIT ?`,
        [page.afterId, ...which.params, since, ...only.params, page.limit],
      ),
    );
    const runIds = [...new Set(rows.map((row) => row[EVENT_RUN_ID]).filter((runId): runId is string => typeof runId === 'string'))];
    const runStarts = new Map<string, string | null>();
    for (let at = 0; at < runIds.length; at += 500) {
      const some = runIds.slice(at, at + 500);
      for (const run of await this.read(`SELECT run_id, started_at FROM runs WHERE run_id IN (${marks(some.length)})`, some)) {
        runStarts.set(String(run.run_id), iso(run.started_at));
      }
    }
    const startOf = (runId: string) => runStarts.get(runId) ?? null;
    return rows.map((row) => eventInContextOfArray(row, startOf, onePartner));
  }

  async fileArrivals(files: { name: string; sha256: string }[]): Promise<{ name: string; sha256: string; arrival: string }[]> {
    const found: { name: string; sha256: string; arrival: string }[] = [];
    // each pair by the (name, sha256) unique index; 400 pairs (800 parameters) a statement
    for (let at = 0; at < files.length; at += 400) {
      const some = files.slice(at, at + 400);
      const rows = await this.read(
        `SELECT name, sha256, arrival FROM processed_files
          WHERE arrival IS NOT NULL AND (${some.map(() => '(name = ? AND sha256 = ?)').join(' OR ')})`,
        some.flatMap((file) => [file.name, file.sha256]),
      );
      for (const row of rows) found.push({ name: String(row.name), sha256: String(row.sha256), arrival: String(row.arrival) });
    }
    return found;
  }

  async latestEvent(kinds: EventKind[], partner: string): Promise<LedgerEvent | undefined> {
    const rows = await this.read(
      `SELECT * FROM ledger_events WHERE event IN (${marks(kinds.length)}) AND partner = ? ORDER BY id DESC LIMIT 1`,
      [...kinds, partner],
    );
    return rows[0] ? eventRow(rows[0]) : undefined;
  }

  async contentsWithPrefix(prefix: string, limit: number): Promise<string[]> {
    const rows = await this.read(
      `SELECT sha256 FROM ledger_events WHERE sha256 LIKE ?
       UNION SELECT content_sha256 FROM processed_files WHERE content_sha256 LIKE ? ORDER BY 1 LIMIT ?`,
      [`${prefix}%`, `${prefix}%`, limit],
    );
    return rows.map((r) => String(r.sha256));
  }

  /** Contents recorded as loaded (or recovered as loaded) by more than one event: must never happen. */
  async contentsLoadedTwice(): Promise<{ sha256: string; loads: number }[]> {
    const rows = await this.read(
      // empty files (0 rows) of the same bytes are each loaded: they are never resends
      `SELECT sha256, count(*) AS loads FROM ledger_events WHERE event IN ('loaded', 'recovered') AND sha256 IS NOT NULL
          AND sha256 NOT IN (SELECT sha256 FROM processed_files WHERE state = 'loaded' AND row_count = 0 AND COALESCE(seen_before, 0) = 0)
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

  /** The row that currently owns this content (claimed, or loaded with rows), if any. */
  async liveHolder(sha256: string): Promise<FileRow | undefined> {
    return (await this.files(`sha256 = ? AND ${LIVE('processed_files')}`, [sha256]))[0];
  }

  async liveContentHolder(contentSha256: string): Promise<FileRow | undefined> {
    return (await this.files(HOLDS_LIVE_CONTENT('processed_files'), [contentSha256, contentSha256]))[0];
  }

  filesInState(state: FileState, partners?: string[]): Promise<FileRow[]> {
    const only = partnerFilter(partners);
    return this.files(`state = ?${only.sql}`, [state, ...only.params]);
  }

  /** Whether the ledger has ever seen this content, under any name and in any state. */
  knowsContent(sha256: string): Promise<FileRow[]> {
    return this.files('sha256 = ?', [sha256]);
  }

  /** The loaded rows of these contents (delivered or decoded), read a few hundred hashes a statement. */
  async loadedContents(sha256s: string[]): Promise<FileRow[]> {
    const rows: FileRow[] = [];
    for (let i = 0; i < sha256s.length; i += 500) {
      const some = sha256s.slice(i, i + 500);
      const list = marks(some.length);
      for (const row of await this.files(`state = 'loaded' AND (sha256 IN (${list}) OR content_sha256 IN (${list}))`, [...some, ...some])) {
        rows.push(row);
      }
    }
    return rows;
  }

  /** The contents loaded under this name (usually one; more if the partner reused a name). */
  loadedNamed(name: string): Promise<FileRow[]> {
    return this.files(`name = ? AND state = 'loaded'`, [name]);
  }

  /** The conditional create that decides who loads a file. True: this run owns the claim. */
  async claim(req: ClaimRequest): Promise<boolean> {
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
          req.leaseSeconds,
          req.contentSha256 ?? null,
          this.partner,
        ]);
        if (won.length === 0) return false;
        await this.appendEvent(claimedEvent(req, iso(won[0]!.lease_until)));
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
    file: { name: string; sha256: string; runId: string; arrival?: string },
    to: { state: FinalState; event: EventKind; rows?: number; seenBefore?: number; reason?: string; totals?: CheckedTotal[] },
    details: Record<string, unknown>,
    opts: { extraEvents?: EventKind[]; moveTo?: Destination } = {},
  ): Promise<boolean> {
    const extraEvents = opts.extraEvents ?? [];
    if (opts.moveTo !== undefined && file.arrival === undefined) throw new Error("a move intent needs the file's arrival");
    return this.tx(async () => {
      const changed = await this.db.run(
        `UPDATE processed_files SET state = ?, row_count = ?, seen_before = ?, reason = ?, totals = ?, ${END_CLAIM}, updated_at = ledger_now()
         WHERE name = ? AND sha256 = ? AND state = 'claimed' AND run_id = ?`,
        [
          to.state,
          to.rows ?? null,
          to.seenBefore || null,
          to.reason === undefined ? null : redactSecrets(to.reason),
          to.totals === undefined ? null : JSON.stringify(to.totals),
          file.name,
          file.sha256,
          file.runId,
        ],
      );
      if (changed !== 1) return false;
      for (const event of [to.event, ...extraEvents]) {
        await this.appendEvent({ runId: file.runId, event, name: file.name, sha256: file.sha256, details });
      }
      // the outcome and the move it asks for in one commit: a crash after it finishes the move, never decides again
      if (opts.moveTo !== undefined) await insertIntent(this.db, { ...file, arrival: file.arrival! }, opts.moveTo, this.partner);
      return true;
    });
  }

  async finalizeCommittedLoad(
    file: { name: string; sha256: string; runId: string; arrival: string },
    to: { rows: number; seenBefore?: number; totals?: CheckedTotal[] },
    details: Record<string, unknown>,
  ): Promise<boolean> {
    try {
      return await this.tx(async () => {
        const changed = await this.db.run(
          `UPDATE processed_files SET state = 'loaded', run_id = ?, row_count = ?, seen_before = ?, reason = NULL, totals = ?, ${END_CLAIM}, updated_at = ledger_now()
           WHERE name = ? AND sha256 = ? AND state IN ('claimed', 'failed', 'held')`,
          [file.runId, to.rows, to.seenBefore || null, to.totals === undefined ? null : JSON.stringify(to.totals), file.name, file.sha256],
        );
        if (changed !== 1) return false;
        await this.appendEvent({ runId: file.runId, event: 'loaded', name: file.name, sha256: file.sha256, details });
        await insertIntent(this.db, file, 'archive', this.partner);
        return true;
      });
    } catch (err) {
      // another name's row of the same content is live (claimed meanwhile): its run meets this load's marker
      if (this.db.isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** The (name, content) row is created or updated as held, unless it is live (another run's). */
  async recordHeld(
    file: { name: string; sha256: string; contentSha256?: string | null; size: number; runId: string },
    details: Record<string, unknown>,
  ): Promise<void> {
    await this.tx(async () => {
      await this.db.run(HELD_SQL, [file.name, file.sha256, file.runId, file.size, file.contentSha256 ?? null, this.partner]);
      await this.appendEvent(outcomeEvent('held', file, details));
    });
  }

  /** Recorded before a decided file leaves the intake; the record of its landing removes it. */
  async intendMove(movedFile: MovedFile, destination: Destination): Promise<void> {
    await this.tx(() => insertIntent(this.db, movedFile, destination, this.partner));
  }

  /** This partner's moves begun and not recorded, with the run that began each: a crash between a move and its record. */
  async moveIntents(): Promise<MoveIntent[]> {
    return (await this.read(MOVE_INTENTS_SQL, [this.partner])).map(intentRow);
  }

  /**
   * A move of this very upload (name and size:mtime) by a run of this partner other than
   * `otherThan`: begun, or recorded. The asking run's own intent must not hide another run's move.
   */
  async moveOfArrival(name: string, arrival: string, otherThan = ''): Promise<{ runId: string; location: string | null } | undefined> {
    const [row] = await this.read(MOVE_OF_ARRIVAL_SQL, [name, arrival, this.partner, otherThan, name, arrival, this.partner, otherThan]);
    return row ? { runId: String(row.run_id), location: row.location === null ? null : String(row.location) } : undefined;
  }

  /** This partner's moves recorded in the last `hours` by the ledger's clock, with the shape their file landed in. */
  async movesSince(hours: number): Promise<LandedMove[]> {
    const rows = await this.read(
      'SELECT location, name, sha256, run_id, at, landed FROM moves WHERE at >= ledger_after(?) AND landed IS NOT NULL AND partner = ?',
      [-hours * 3600, this.partner],
    );
    return rows.map(landedRow);
  }

  /** The landed file was found changed and reported: its new shape is the one to compare with from now on. */
  async updateLanded(location: string, sha256: string, landed: string): Promise<void> {
    await this.tx(() => this.db.run('UPDATE moves SET landed = ? WHERE location = ? AND sha256 = ?', [landed, location, sha256]));
  }

  /** An intent whose file is nowhere to be found: reported by the run, and not looked for again. */
  async abandonMoveIntent(file: MovedFile): Promise<void> {
    await this.tx(() => dropIntent(this.db, file));
  }

  /**
   * The record of a landing commits unsynced: nothing outside the ledger waits on it, and when a
   * power loss drops it the ledger is as a crash after the move leaves it (the outcome, the
   * intent, the file where it was going), which the next run finishes (finishUnfinishedMoves).
   * The next synced commit (the next file's claim, the run's end) carries it to the disk.
   */
  markMoved(
    file: MovedFile,
    location: string,
    moveDetails: Record<string, unknown> = {},
    opts: { keepRow?: boolean } = {},
  ): Promise<boolean> {
    return this.tx(async () => {
      await dropIntent(this.db, file);
      if (!(await insertMove(this.db, file, location, this.partner))) return false;
      if (!opts.keepRow)
        await this.db.run('UPDATE processed_files SET location = ?, updated_at = ledger_now() WHERE name = ? AND sha256 = ?', [
          location,
          file.name,
          file.sha256,
        ]);
      await this.appendEvent(movedEvent(file, location, moveDetails));
      return true;
    }, 'unsynced');
  }

  async recordMoveFailed(file: MovedFile, failure: MoveFailure): Promise<void> {
    await this.tx(() => this.appendEvent(moveFailedEvent(file, failure)));
  }

  /** Inside a transaction: the run that counted this upload's skip and could not move it (its `move_failed` events say which upload). */
  private async unmovedSkipOf(file: MovedFile): Promise<string | undefined> {
    const rows = await this.db.all(
      `SELECT run_id, details FROM ledger_events WHERE event = 'move_failed' AND name = ? AND sha256 = ? ORDER BY id`,
      [file.name, file.sha256],
    );
    for (const failed of rows.map(eventRow)) {
      const d = failed.details as { outcome?: unknown; arrival?: unknown; decidedBy?: unknown };
      if (d.outcome === 'skipped' && d.arrival === file.arrival) return typeof d.decidedBy === 'string' ? d.decidedBy : failed.runId!;
    }
    return undefined;
  }

  unmovedSkip(file: MovedFile): Promise<string | undefined> {
    return this.serial(() => this.unmovedSkipOf(file));
  }

  recordUnmovedSkip(
    file: MovedFile & { size: number; contentSha256?: string | null },
    ownRow: boolean,
    details: Record<string, unknown>,
    failure: { reason: string },
  ): Promise<string> {
    return this.tx(async () => {
      let decidedBy: string | undefined;
      if (ownRow) {
        const counted = await this.db.run(UNMOVED_DUPLICATE_SQL, [
          file.name,
          file.sha256,
          file.runId,
          file.size,
          file.arrival,
          file.contentSha256 ?? null,
          this.partner,
        ]);
        if (counted !== 1)
          decidedBy = (await this.db.all('SELECT run_id FROM processed_files WHERE name = ? AND sha256 = ?', [file.name, file.sha256])).map(
            (r) => String(r.run_id),
          )[0];
      } else {
        decidedBy = await this.unmovedSkipOf(file);
      }
      if (decidedBy === undefined) {
        decidedBy = file.runId;
        await this.appendEvent(outcomeEvent('skipped', file, details));
      }
      await this.appendEvent(moveFailedEvent(file, { to: 'duplicates', reason: failure.reason, decidedBy, outcome: 'skipped' }));
      return decidedBy;
    });
  }

  recordSkip(
    file: MovedFile & { size: number; contentSha256?: string | null },
    ownRow: boolean,
    location: string,
    details: Record<string, unknown>,
    moveDetails: Record<string, unknown> = {},
  ): Promise<boolean> {
    return this.tx(async () => {
      await dropIntent(this.db, file);
      if (!(await insertMove(this.db, file, location, this.partner))) return false;
      if (ownRow) {
        await this.db.run(DUPLICATE_SQL, [
          file.name,
          file.sha256,
          file.runId,
          file.size,
          file.arrival,
          location,
          file.contentSha256 ?? null,
          this.partner,
        ]);
      }
      await this.appendEvent(outcomeEvent('skipped', file, details));
      await this.appendEvent(movedEvent(file, location, moveDetails));
      return true;
    });
  }

  settleStaleClaim(stale: FileRow, runId: string, to: { state: 'loaded' | 'failed'; rows?: number; reason: string }): Promise<boolean> {
    return this.tx(async () => {
      const changed = await this.db.run(
        `UPDATE processed_files SET state = ?, row_count = ?, reason = ?, ${END_CLAIM}, updated_at = ledger_now()
         WHERE id = ? AND state = 'claimed' AND run_id = ? AND updated_at = ?`,
        [to.state, to.rows ?? null, to.state === 'failed' ? redactSecrets(to.reason) : null, stale.id, stale.runId, stale.updatedAt],
      );
      if (changed !== 1) return false;
      await this.appendEvent(staleClaimEvent(stale, runId, to));
      return true;
    });
  }

  adoptLoaded(
    file: { name: string; sha256: string; contentSha256: string; size: number; runId: string },
    location: string,
    rows: number | null,
    evidence: Record<string, unknown> = {},
  ): Promise<boolean> {
    return this.tx(async () => {
      const row = [file.name, file.sha256, file.contentSha256, file.runId, file.size, rows, location, this.partner];
      const inserted = await this.db.run(ADOPT_SQL, [...row, file.contentSha256, file.contentSha256]);
      if (inserted !== 1) return false;
      const details = { adopted: true, from: location, rows, ...evidence };
      await this.appendEvent({ runId: file.runId, event: 'loaded', name: file.name, sha256: file.sha256, details });
      return true;
    });
  }

  /** A reprocessing replaced this content's rows: the new count and the `reprocessed` event, together. */
  async recordReprocessed(
    file: { name: string; sha256: string; runId: string },
    details: { rows: number; seenBefore?: number; totals?: CheckedTotal[] } & Record<string, unknown>,
  ): Promise<void> {
    await this.tx(async () => {
      await this.db.run(
        `UPDATE processed_files SET row_count = ?, seen_before = ?, totals = ?, updated_at = ledger_now() WHERE name = ? AND sha256 = ? AND state = 'loaded'`,
        [details.rows, details.seenBefore || null, details.totals?.length ? JSON.stringify(details.totals) : null, file.name, file.sha256],
      );
      await this.appendEvent({ runId: file.runId, event: 'reprocessed', name: file.name, sha256: file.sha256, details });
    });
  }

  // Partner leases: their rules live in partnerLeases.ts; here they take their turn on the connection.
  takePartnerLease(who: LeaseHolder, terms: LeaseTerms): Promise<LeaseAnswer> {
    return this.serial(() => new PartnerLeases(this.db).take(this.partner, who, terms));
  }

  renewPartnerLease(holder: string, leaseSeconds: number, runId?: string): Promise<boolean> {
    return this.serial(() => new PartnerLeases(this.db).renew(this.partner, holder, leaseSeconds, runId));
  }

  releasePartnerLease(holder: string): Promise<void> {
    return this.serial(() => new PartnerLeases(this.db).release(this.partner, holder));
  }

  notePartnerSkipped(holder: string, note: SkipNote): Promise<void> {
    return this.serial(() => new PartnerLeases(this.db).noteSkipped(this.partner, holder, note));
  }

  partnerLease(): Promise<PartnerLease | undefined> {
    return this.serial(() => new PartnerLeases(this.db).read(this.partner));
  }
}
