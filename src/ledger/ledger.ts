import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type { Destination } from '../destination.js';
import type { ClaimOwner } from '../owner.js';
import type {
  EventKind,
  FileRow,
  FileState,
  LeaseAnswer,
  LeaseHolder,
  LeaseTerms,
  LedgerEvent,
  MoveFailure,
  PartnerLease,
  RunCounts,
  RunMode,
  RunRow,
  SkipNote,
} from './types.js';

/** An entry a run leaves alone, as it was listed. */
export interface IgnoredEntry {
  name: string;
  /** size:mtime as listed */
  arrival: string;
  size: number;
  reason: string;
}

export interface ClaimRequest {
  name: string;
  sha256: string;
  size: number;
  runId: string;
  /** size:mtime of the upload being claimed */
  arrival: string;
  /** the content inside the delivered bytes (gzip, zip, OpenPGP); null when it could not be decoded */
  contentSha256?: string | null;
  owner: ClaimOwner;
  /** how long the claim holds, from the ledger's clock (--claim-lease) */
  leaseSeconds: number;
}

export interface EventInput {
  /** unset: the partner of the ledger view that records it */
  partner?: string;
  runId: string | null;
  event: EventKind;
  name: string;
  sha256: string | null;
  details?: Record<string, unknown>;
}

export type FinalState = 'loaded' | 'rejected' | 'failed' | 'duplicate';

/** A file being moved out of the intake; `arrival` (size:mtime) tells one upload from a later one. */
export interface MovedFile {
  name: string;
  sha256: string;
  runId: string;
  arrival: string;
  /** size:mtime of the file where it landed, as the move left it */
  landed?: string;
}

/**
 * An event with what the transfer log audit asks of it, read in one query for every name: the
 * size of its (name, bytes) row, and when its run started. The row's arrival (size:mtime) is not
 * read with it: the audit asks it only of the few uploads left waiting (`fileArrivals`), and a
 * year's two million events each carried it as a string.
 */
export interface EventInContext extends LedgerEvent {
  fileSize: number | null;
  runStartedAt: string | null;
}

/** A recorded landing, to find a file changed after its move. */
export interface LandedMove {
  location: string;
  name: string;
  sha256: string;
  runId: string;
  landed: string;
}

/** A move begun (recorded before the file left the intake) whose landing was never recorded. */
export interface MoveIntent extends MovedFile {
  destination: Destination;
  at: string;
  /** the run that began it: whether it ended, and where it ran */
  run: { ended: boolean; host: string; pid: number };
}

/**
 * What every view of a ledger store has: where it lives, the partner it is a view for, and the
 * close. The ledger keeps what was seen, who claimed it, how it ended; two stores keep it with the
 * same semantics, a SQLite file (one host) and PostgreSQL (several hosts sharing it), both
 * `SqlLedger` over a `SqlPort` (sqlLedger.ts), each implementing every interface below.
 */
export interface LedgerStore {
  /** where it lives, for messages (a path, or a URL without its password) */
  readonly location: string;
  /** several hosts share it (PostgreSQL): its clock is its server's, and a partner is leased to one run at a time */
  readonly sharedAcrossHosts: boolean;
  /**
   * The partner this view records runs, files, events and moves for, and whose unfinished and
   * landed moves it looks at; content identity (claims, holders, hashes) is the ledger's, not a
   * partner's. `default` for a config without "partners".
   */
  readonly partner: string;
  close(): Promise<void>;
}

/** The reads both a run and the reports make: a run, its events, a file's row, an ignored name's streak. */
export interface LedgerReads extends LedgerStore {
  /** The ledger's clock, now (ms since the epoch): its server's on PostgreSQL, this host's for a SQLite file. */
  ledgerNow(): Promise<number>;
  /** An ignored name's streak: this partner's runs in a row that saw it in the intake, and since when. */
  ignoredStreak(name: string): Promise<{ runs: number; since: string } | undefined>;
  run(runId: string): Promise<RunRow | undefined>;
  eventsOfRun(runId: string): Promise<LedgerEvent[]>;
  /** every event for a file name, a delivered bytes' hash or a content hash, oldest first */
  eventsFor(nameOrSha: string): Promise<LedgerEvent[]>;
  /** the ignored names this run was the last to see, with why and when: its count and list of them */
  ignoredSeenBy(runId: string): Promise<{ name: string; reason: string; at: string }[]>;
  file(name: string, sha256: string): Promise<FileRow | undefined>;
  filesInState(state: FileState, partners?: string[]): Promise<FileRow[]>;
}

/**
 * The run's side of the ledger: what src/pipeline and the run command write (runs, claims,
 * outcomes, moves, ignored names) and the reads they decide by.
 */
export interface RunLedger extends LedgerReads {
  /** the same store, writing for another partner (closing any view closes the store) */
  forPartner(partner: string): RunLedger;
  /** records a new run under the first free id from `newId` and returns it */
  startRun(run: { mode: RunMode; host: string; pid: number }, newId: () => string): Promise<string>;
  finishRun(
    runId: string,
    counts: RunCounts,
    exitStatus: number,
    end?: { status: 'finished' | 'not_started'; reason?: string },
  ): Promise<void>;
  /**
   * One more try of a run that could not start (`watch` retrying after a backoff): counted on that
   * run, with the try's reason, exit status and end, instead of a run of its own. False when the
   * run is not a `not_started` one (closed otherwise since): the caller records a new run.
   */
  countRunAttempt(runId: string, exitStatus: number, reason: string): Promise<boolean>;
  /** the exit status the command's process exits with, on each of its runs (the same for all): what the scheduler saw */
  recordProcessExit(runIds: string[], exitStatus: number): Promise<void>;
  openRuns(): Promise<RunRow[]>;
  closeDeadRun(runId: string, foundBy: string, reason: string): Promise<boolean>;
  record(event: EventInput): Promise<void>;
  /**
   * The entries this run leaves alone, recorded once per name rather than once per run: an
   * `ignored` event only for a name new to the ledger or changed since (its size:mtime or the
   * reason); each is marked as seen by this run all the same. Returns those that got an event.
   */
  recordIgnored(runId: string, entries: IgnoredEntry[]): Promise<IgnoredEntry[]>;
  /** the row that currently owns this content (claimed or loaded), if any */
  liveHolder(sha256: string): Promise<FileRow | undefined>;
  /** the row that currently owns this decoded content under any delivered bytes (plain, gzipped, encrypted), if any */
  liveContentHolder(contentSha256: string): Promise<FileRow | undefined>;
  loadedNamed(name: string): Promise<FileRow[]>;
  /** the conditional create that decides who loads a file: true when this run owns the claim */
  claim(request: ClaimRequest): Promise<boolean>;
  /**
   * Finalizes a claim this run owns; false when it is no longer this run's. `moveTo`: the move
   * the outcome asks for is intended in the same commit (`claimed.arrival` then names the upload).
   */
  finalizeClaim(
    claimed: { name: string; sha256: string; runId: string; arrival?: string },
    /** `totals`: the control totals a loaded file proved (layout/reader/totalsCheck.ts), kept with the load */
    /** `seenBefore`: a loaded file's rows identical to rows another file loaded, not loaded again */
    outcome: { state: FinalState; event: EventKind; rows?: number; seenBefore?: number; reason?: string; totals?: CheckedTotal[] },
    details: Record<string, unknown>,
    options?: { extraEvents?: EventKind[]; moveTo?: Destination },
  ): Promise<boolean>;
  /**
   * This run's COMMIT landed (the finance database's file marker names it), but its claim was no
   * longer its own: the run was paused past its lease, and another run expired the claim, holds
   * the file, or claimed it again (that run meets this load's marker and loads nothing). The row
   * becomes loaded by this run, with its `loaded` event and the move to the archive intended, as
   * finalizeClaim would have made it. False when another run recorded the load first (it settled
   * the claim against the marker: `recovered`), or a twin of the content is live.
   */
  finalizeCommittedLoad(
    committed: { name: string; sha256: string; runId: string; arrival: string },
    outcome: { rows: number; seenBefore?: number; totals?: CheckedTotal[] },
    details: Record<string, unknown>,
  ): Promise<boolean>;
  /** a hold: the content's twin is claimed by another live run; this file stays in the intake */
  recordHeld(
    held: { name: string; sha256: string; contentSha256?: string | null; size: number; runId: string },
    details: Record<string, unknown>,
  ): Promise<void>;
  /**
   * The file of a decided outcome now sits at `location`. Recorded once per arrival and
   * landing place: false when another run already recorded this very move.
   */
  markMoved(
    moved: MovedFile,
    location: string,
    moveDetails?: Record<string, unknown>,
    /** `keepRow`: the (name, bytes) row is another upload's (a same-name resend of loaded bytes): only the move is recorded */
    opts?: { keepRow?: boolean },
  ): Promise<boolean>;
  /** a decided file's move failed: the `move_failed` event, with where it was going, why, and who decided the outcome */
  recordMoveFailed(moved: MovedFile, failure: MoveFailure): Promise<void>;
  /**
   * A skip whose move to duplicates/ failed, recorded with the failure: counted once per upload
   * (an own row without a location, or for a same-name resend its events), so the next run only
   * finishes its move. Returns the run that counted the skip: this one, or one that did first.
   */
  recordUnmovedSkip(
    skipped: MovedFile & { size: number; contentSha256?: string | null },
    ownRow: boolean,
    details: Record<string, unknown>,
    failure: { reason: string },
  ): Promise<string>;
  /** the run that counted a skip of this very upload (name, bytes, size:mtime) and could not move it, if one did */
  unmovedSkip(moved: MovedFile): Promise<string | undefined>;
  /** recorded before a decided file leaves the intake (or with its outcome: finalizeClaim); markMoved or recordSkip removes it */
  intendMove(moved: MovedFile, destination: Destination): Promise<void>;
  moveIntents(): Promise<MoveIntent[]>;
  /**
   * A run (other than `otherThan`) that began or recorded moving this very upload (name and
   * size:mtime as listed): whether a name that vanished from the intake was taken by a run, or by nobody.
   */
  moveOfArrival(name: string, arrival: string, otherThan?: string): Promise<{ runId: string; location: string | null } | undefined>;
  abandonMoveIntent(moved: MovedFile): Promise<void>;
  /** this partner's moves recorded in the last `hours`, by the ledger's clock */
  movesSince(hours: number): Promise<LandedMove[]>;
  updateLanded(location: string, sha256: string, landed: string): Promise<void>;
  /**
   * A skip, recorded only with the move that made it final, and only once: false when
   * another run already recorded this very move (then it is that run's skip, not this one's).
   * `ownRow`: another name or other bytes than the original's, so this (name, bytes) gets its own row.
   */
  recordSkip(
    skipped: MovedFile & { size: number; contentSha256?: string | null },
    ownRow: boolean,
    location: string,
    details: Record<string, unknown>,
    moveDetails?: Record<string, unknown>,
  ): Promise<boolean>;
  settleStaleClaim(stale: FileRow, runId: string, outcome: { state: 'loaded' | 'failed'; rows?: number; reason: string }): Promise<boolean>;
  /**
   * `run --reprocess`: a loaded file's rows were replaced. Its row count and the control totals
   * the fresh load proved (`totals`, none when its layout now states none) replace the old.
   */
  recordReprocessed(
    reprocessed: { name: string; sha256: string; runId: string },
    details: { rows: number; seenBefore?: number; totals?: CheckedTotal[] } & Record<string, unknown>,
  ): Promise<void>;
  /**
   * `adopt`: records an archived file as loaded before this ledger existed (event `loaded`,
   * marked adopted). False when its delivered bytes or its decoded content are already
   * claimed or loaded under any name.
   */
  adoptLoaded(
    adopted: { name: string; sha256: string; contentSha256: string; size: number; runId: string },
    location: string,
    rows: number | null,
    /** why it counts as loaded: evidence (file-marker, natural-keys, operator), and the operator's reason */
    evidence?: Record<string, unknown>,
  ): Promise<boolean>;

  // Partner leases (partnerLeases.ts): a partner worked by one run at a time on a ledger several
  // hosts share; on a local ledger every lease is granted without a write.
  /** takes this view's partner's lease until the ledger's now plus `terms.leaseSeconds`, or says who holds it */
  takePartnerLease(who: LeaseHolder, terms: LeaseTerms): Promise<LeaseAnswer>;
  /** extends the lease to the ledger's now plus `leaseSeconds` (naming the run that works the partner): false when it was lost */
  renewPartnerLease(holder: string, leaseSeconds: number, runId?: string): Promise<boolean>;
  releasePartnerLease(holder: string): Promise<void>;
  /** a run skipped the partner, starved, while `holder` held its lease: what it saw there, for `status` */
  notePartnerSkipped(holder: string, note: SkipNote): Promise<void>;
}

/**
 * The reports' side of the ledger: the queries of report, status, audit and evidence over runs,
 * events, ignored names and contents. Nothing here writes.
 */
export interface LedgerQueries extends LedgerReads {
  /** the same store, reading for another partner */
  forPartner(partner: string): LedgerQueries;
  /** newest first; `partners`: only theirs */
  recentRuns(limit: number, partners?: string[]): Promise<RunRow[]>;
  /**
   * The runs named by one command's id (a `run`, or a cycle of `watch`: its partners' runs,
   * ledger/runIds.ts), in the order they started; `partners`: only theirs. Two processes may
   * have drawn one id (report/runReport.ts keeps the host and process of the run it starts from).
   */
  runsOfCommand(commandId: string, partners?: string[]): Promise<RunRow[]>;
  /** the partner's lease as it stands (another run works it), with the ledger's now; undefined when free or on a local ledger */
  partnerLease(): Promise<PartnerLease | undefined>;
  /** the latest scheduled or manual run that finished its work (`successful`: and exited 0), of one partner or of any; never one that ended ahead of the ledger's clock */
  latestIngestRun(which: { successful: boolean; partner?: string }): Promise<RunRow | undefined>;
  /** when the partner's first run started, if it ever ran */
  firstRunAt(partner: string): Promise<string | undefined>;
  /** the partners the ledger has runs of */
  partnersSeen(): Promise<string[]>;
  /** the ignored names a run saw at or after `since` (ISO time), with the last run that did */
  ignoredSince(
    since: string,
    partners?: string[],
  ): Promise<{ partner: string; name: string; reason: string; lastAt: string; lastRun: string }[]>;
  eventsSince(kinds: EventKind[], since: string, partners?: string[]): Promise<LedgerEvent[]>;
  /** every event at or after `since` and before `until` (ISO times; null: no end), oldest first */
  eventsBetween(since: string, until: string | null, partners?: string[]): Promise<LedgerEvent[]>;
  /**
   * The same events, each with its (name, bytes) row's size and arrival and its run's start, oldest
   * first, a page at a time: at most `page.limit` of them after the event `page.afterId` (0 first).
   * `names`: only the events of these names, found by the index of names (a few hundred at a
   * time), not by a walk over every event.
   */
  eventsInContextSince(
    kinds: EventKind[],
    since: string,
    partners: string[] | undefined,
    page: { afterId: number; limit: number },
    names?: readonly string[],
  ): Promise<EventInContext[]>;
  /** the arrival (size:mtime) of each of these (name, bytes) rows that has one; a row not in the ledger is left out */
  fileArrivals(files: { name: string; sha256: string }[]): Promise<{ name: string; sha256: string; arrival: string }[]>;
  /** the partner's latest event of these kinds */
  latestEvent(kinds: EventKind[], partner: string): Promise<LedgerEvent | undefined>;
  /** the contents (SHA-256) whose hash starts with `prefix` (lower-case hex), at most `limit` */
  contentsWithPrefix(prefix: string, limit: number): Promise<string[]>;
  contentsLoadedTwice(): Promise<{ sha256: string; loads: number }[]>;
  knowsContent(sha256: string): Promise<FileRow[]>;
  /** the loaded rows whose delivered bytes or decoded content is one of these hashes */
  loadedContents(sha256s: string[]): Promise<FileRow[]>;
}

/** The whole ledger, both sides: what the stores implement and the CLI opens. */
export interface Ledger extends RunLedger, LedgerQueries {
  /** the same store, writing for another partner (closing any view closes the store) */
  forPartner(partner: string): Ledger;
}
