import type { Bindings, Logger as PinoLogger } from 'pino';

/**
 * Every event a log line may carry, in one table: its name (the line's `event`), the level it is
 * logged at, the fields it carries besides the ones every line has, and what it means to an
 * operator. The code logs through `Logger` below, which takes only these names, each at its
 * level; docs/MONITORING.md's "Log events" section is generated from here
 * (`node scripts/docs-monitoring.mjs` after a build) and test/unit/monitoringDocs.test.ts holds it.
 *
 * Every line has `level`, `time`, `pid`, `hostname`, `msg` (the words), and the bindings of its
 * logger: `partner`, and within a run `run` and `file` (the file in hand). Field names are camelCase
 * in the code and snake_case in the file (cli/logger.ts, as `--json` writes them).
 */
export const LOG_EVENTS = {
  // a run, start to end
  'run-started': { level: 'info', fields: ['mode', 'intake'], meaning: "a partner's run began: its mode and the intake it lists" },
  'run-finished': {
    level: 'info',
    fields: ['loaded', 'skipped', 'held', 'rejected', 'failed', 'notReady', 'ignored', 'stale', 'moveFailed', 'rows', 'exitStatus'],
    meaning: "a partner's run ended: its counts, from the ledger, and the exit status it recorded",
  },
  'run-not-started': {
    level: 'error',
    fields: ['run', 'reason'],
    meaning:
      "a partner's run could not start (its finance database, intake, staging folder or privileges refused): recorded as not started, the partner tried again next run",
  },
  'run-died': {
    level: 'warn',
    fields: ['deadRun', 'started'],
    meaning: 'a run found with no end and its owner gone, closed as `died`; its claims are settled by the stale-claim rules',
  },
  stopping: {
    level: 'warn',
    fields: [],
    meaning: 'a stop was asked (SIGTERM, SIGINT, a log file that refused a line): the run ends after the file in hand (exit 1, "stopped")',
  },
  'db-lost': {
    level: 'error',
    fields: ['reason'],
    meaning: 'the finance database went away during the run: the file in hand failed (claim released, left in the intake), the run stops',
  },
  'staging-removed': {
    level: 'info',
    fields: ['dir'],
    meaning: 'the staging folder of a run that is gone was removed at the start of a run',
  },
  'staging-not-removed': {
    level: 'warn',
    fields: ['dir', 'reason'],
    meaning: "a dead run's staging folder could not be removed: disk space is not given back until it is",
  },
  // one file's way through the run
  'waiting-stable': {
    level: 'info',
    fields: ['files', 'stableFor'],
    meaning: 'the completeness gate waits for files to stay unchanged for --stable-for before they are taken',
  },
  'still-changing': {
    level: 'info',
    fields: ['file', 'size'],
    meaning: '`watch`: a file still being written is left for a later cycle, recorded not ready only after --max-wait',
  },
  'not-ready': {
    level: 'warn',
    fields: ['file', 'size', 'reason'],
    meaning:
      'a file not complete yet (still changing after --max-wait, no ready marker, an open upload in the transfer log): left in the intake for the next run',
  },
  failed: {
    level: 'error',
    fields: ['file', 'size', 'reason'],
    meaning:
      'a file could not be staged or loaded for a passing reason (a connection lost, a timeout): claim released, left in the intake, tried next run (exit 1)',
  },
  gone: {
    level: 'info',
    fields: ['file', 'movedBy', 'to'],
    meaning: 'a file left the intake before this run could read or move it: another run has it and counts it',
  },
  ignored: {
    level: ['warn', 'info'],
    fields: ['file', 'size', 'reason', 'known'],
    meaning:
      'a name in the intake that is not taken (the pattern, not a regular file, not UTF-8): warn when new, info (`known`) when the ledger already recorded it so',
  },
  'known-neighbour': { level: 'debug', fields: ['file'], meaning: 'a name --ignore names (a README): neither taken nor counted' },
  claimed: {
    level: 'info',
    fields: ['leaseSeconds'],
    meaning: "the run won the claim on the file (the ledger's conditional create) and loads it",
  },
  held: {
    level: 'warn',
    fields: ['twin', 'twinRun', 'reason'],
    meaning: 'the same content is being loaded by another run: the file stays in the intake and is looked at again next run',
  },
  loaded: {
    level: 'info',
    fields: ['rows', 'skippedRows', 'copyFormat', 'totals'],
    meaning: "the file's rows and its file marker committed in one transaction",
  },
  skipped: {
    level: 'warn',
    fields: ['duplicateOf', 'to', 'moveFailed', 'decidedBy', 'recovered', 'movingRun'],
    meaning: 'a duplicate of content already loaded (a resend, maybe renamed): not loaded again, moved to duplicates/',
  },
  rejected: {
    level: 'error',
    fields: ['reason', 'line', 'field', 'contentSha256', 'layers'],
    meaning: 'bad content (a row, a total, a key loaded before): nothing loaded, moved to rejected/ (exit 1); the fields name where',
  },
  recovered: {
    level: 'warn',
    fields: ['claimRun', 'staleFile', 'rows'],
    meaning: 'a stale claim whose load the finance database shows committed: finalized as loaded, never loaded twice',
  },
  expired: {
    level: 'warn',
    fields: ['claimRun', 'staleFile'],
    meaning: 'a stale claim with nothing loaded: released, the file may be claimed again',
  },
  'stale-claim-left': {
    level: 'warn',
    fields: ['claimRun', 'staleFile', 'reason'],
    meaning: "another host's claim left alone: this host's clock is off the shared ledger's, so no lease is judged from here",
  },
  'claim-lost': {
    level: 'warn',
    fields: ['claimTakenBy', 'by', 'committedRows'],
    meaning: "the file's claim passed its lease and another run took it over: this run's outcome is recorded as that run settled it",
  },
  'resume-move': {
    level: 'warn',
    fields: ['state', 'decidedBy'],
    meaning: 'a file decided by an earlier run (loaded, skipped, rejected) is still in the intake: this run finishes its move',
  },
  'clock-skew': {
    level: 'warn',
    fields: ['seconds'],
    meaning: "this host's clock is off the shared ledger's past the limit: the run takes over no other host's claim",
  },
  'transfer-log-unread': {
    level: 'error',
    fields: ['reason'],
    meaning: 'the transfer log (--transfer-log) cannot be read: files were judged without it, an upload still open is not told (exit 1)',
  },
  'waiting-too-long': {
    level: 'error',
    fields: ['file', 'runs', 'since'],
    meaning: 'a file has waited in the intake (held, not ready, failed, ignored) more runs than --max-waiting-runs (exit 1)',
  },
  'db-connection-error': {
    level: 'error',
    fields: ['reason'],
    meaning: 'the connection to the finance database failed while idle (a restart, a network cut)',
  },
  // moving out of the intake
  moved: {
    level: ['info', 'warn'],
    fields: ['to', 'decidedBy', 'recovered', 'movingRun'],
    meaning: 'the decided file left the intake for its folder; warn when this run records a move an earlier, killed run made',
  },
  'move-failed': {
    level: 'error',
    fields: ['to', 'reason'],
    meaning:
      'the move out of the intake failed (permissions, a missing folder): recorded, tried again next run (exit 1); `status` names it',
  },
  'move-replaced': {
    level: 'error',
    fields: ['to', 'location'],
    meaning:
      'the name held other bytes by the move (a re-upload): the staged copy landed instead, the new upload stays for the next run (exit 1)',
  },
  'move-vanished': {
    level: 'error',
    fields: ['reason'],
    meaning: 'the file left the intake between its decision and its move, and no run moved it: the staged copy is kept',
  },
  'move-lost': {
    level: 'error',
    fields: ['to', 'movingRun'],
    meaning: 'a run died moving this file and it is neither in the intake nor where the move was going: look for it by the run named',
  },
  'move-interrupted': {
    level: 'warn',
    fields: ['file'],
    meaning: 'a local move killed midway was undone: the file is back in the intake for this run',
  },
  'marker-moved': { level: 'info', fields: ['to'], meaning: "the file's ready marker (--ready-marker) moved with it" },
  'marker-not-moved': { level: 'warn', fields: ['reason'], meaning: "the file's ready marker stays in the intake: it could not be moved" },
  'changed-after-move': {
    level: 'error',
    fields: ['file', 'location', 'movedBy', 'landed', 'now'],
    meaning: 'a file changed where it landed after a run moved it (an upload that stalled and resumed): look at it (exit 1)',
  },
  // on an SFTP server
  'sftp-retry': {
    level: 'warn',
    fields: ['attempt', 'waitMs', 'reason'],
    meaning: 'the SFTP server did not answer the connection: tried again after a wait',
  },
  'sftp-reconnect': { level: 'warn', fields: ['reason'], meaning: 'the SFTP connection was lost mid-run: connecting again' },
  'sftp-rename': {
    level: ['info', 'warn'],
    fields: ['replaces', 'answersWithoutDoing'],
    meaning:
      "what the server's RENAME does, learnt in a folder of the run's own; warn when it answers done without doing it (each move is then checked from both ends)",
  },
  'intake-name-again': {
    level: 'warn',
    fields: ['at'],
    meaning: 'right after a move the intake name holds a file again: a new upload, or a server that copies instead of renaming',
  },
  'moved-through-link': {
    level: 'error',
    fields: ['target'],
    meaning: "the intake name became a link and the server's RENAME moved what it points to: put back, the file left for a person",
  },
  'put-back': { level: 'warn', fields: ['what'], meaning: 'what a rename moved was not the decided file: put back in the intake' },
  'temporary-removed': { level: 'info', fields: ['path'], meaning: "a dead run's temporary copy on the server was removed" },
  'temporary-not-removed': {
    level: 'warn',
    fields: ['reason'],
    meaning: "a dead run's temporary copy on the server could not be removed",
  },
  // partners and leases
  'partner-leased': {
    level: 'info',
    fields: ['holderHost', 'holderPid', 'holderRun', 'leaseUntil', 'runOut'],
    meaning: 'the partner was skipped: another run (a shared ledger) holds its lease',
  },
  'partner-starved': {
    level: 'error',
    fields: ['holderHost', 'holderRun', 'seconds', 'waiting'],
    meaning: 'a skipped partner has had no successful run for longer than --max-age while another run holds its lease (exit 1)',
  },
  'partner-lease-lost': {
    level: 'warn',
    fields: ['run'],
    meaning: "the partner's lease expired during the run and another run took it",
  },
  'partner-lease-not-renewed': {
    level: 'warn',
    fields: ['run', 'reason'],
    meaning: "the partner's lease could not be renewed (the ledger away): tried again at the next third of the lease",
  },
  'partner-lease-not-released': {
    level: 'warn',
    fields: ['reason'],
    meaning: "the partner's lease could not be released at the run's end: it runs out by itself",
  },
  'delivery-overdue': {
    level: ['warn', 'error'],
    fields: ['run', 'level', 'message'],
    meaning: 'a due day of the partner (`expect`) has no delivery: warn past `warnAfter`, error past `errorAfter`',
  },
  // after the runs
  'exit-status-not-recorded': {
    level: 'error',
    fields: ['runs', 'reason'],
    meaning: "the process's exit status could not be recorded on its runs (the ledger away): `report runs` lacks it",
  },
  'metrics-not-written': {
    level: 'error',
    fields: ['path', 'reason'],
    meaning: 'the metrics file (--metrics-file) could not be rendered or written: the previous one stays',
  },
  // reprocessing
  'reprocess-started': {
    level: 'info',
    fields: ['reason', 'operator', 'dryRun', 'files'],
    meaning: '`run --reprocess` began: who, why, which files',
  },
  reprocessed: {
    level: 'info',
    fields: ['file', 'rows', 'previousRows', 'totals'],
    meaning: "a file's rows were replaced by its reload from the archive in one transaction",
  },
  'would-reprocess': {
    level: 'info',
    fields: ['file', 'rows', 'previousRows', 'totals'],
    meaning: '`--dry-run`: what the reload would replace; nothing committed',
  },
  'reprocess-rejected': {
    level: 'error',
    fields: ['file', 'reason'],
    meaning: "the archived file's content is refused today: its rows are unchanged",
  },
  'reprocess-failed': {
    level: 'error',
    fields: ['file', 'reason'],
    meaning: 'the file could not be reprocessed (never loaded, unreadable, a database error): its rows are unchanged',
  },
  // adopt
  'adopt-adopted': {
    level: 'info',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'an archived file recorded as loaded',
  },
  'adopt-would-adopt': {
    level: 'info',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: '`--dry-run`: the file would be adopted',
  },
  'adopt-known': {
    level: 'info',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'the ledger knows the file already: nothing to do',
  },
  'adopt-not-loaded': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: "the finance database does not show the file's rows: not adopted (--assume-loaded with a reason, on your word)",
  },
  'adopt-partly-loaded': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: "only some of the file's rows are in the finance database: not adopted",
  },
  'adopt-unreadable': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'the archived file cannot be read by its layout: not adopted',
  },
  'adopt-undecodable': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'the archived delivery cannot be unwrapped (gzip, zip, OpenPGP): not adopted',
  },
  'adopt-content-duplicate': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'the same content is in the ledger under another name: not adopted',
  },
  'adopt-ledger-conflict': {
    level: 'error',
    fields: ['file', 'sha256', 'contentSha256', 'evidence', 'rows'],
    meaning: 'the ledger has this name and content in another state: not adopted',
  },
  // watch, the service
  'watch-started': { level: 'info', fields: ['partners'], meaning: '`watch` began with these partners' },
  'watch-stopped': {
    level: 'info',
    fields: ['idleCycles', 'workedCycles', 'failedCycles'],
    meaning: '`watch` ended (SIGTERM): its cycles, by kind',
  },
  'watch-partner-failed': {
    level: 'error',
    fields: ['partner', 'failures', 'retryInMs', 'reason'],
    meaning: "a partner's try failed (its server, database or ledger away): backed off, tried again; the other partners go on",
  },
  'watch-partner-resumed': { level: 'info', fields: ['partner', 'failures'], meaning: 'a partner that failed works again' },
  'config-reloaded': { level: 'info', fields: ['partners'], meaning: '`watch` reread its config (SIGHUP)' },
  'config-not-reloaded': {
    level: 'error',
    fields: ['reason'],
    meaning: 'the config reread on SIGHUP is refused: `watch` goes on with the one it had',
  },
  'log-files-reopened': { level: 'info', fields: [], meaning: 'every log file opened again (SIGHUP, after logrotate)' },
  'log-file-not-reopened': {
    level: 'error',
    fields: ['path', 'reason'],
    meaning: 'a log file could not be opened again: the one open before is still written',
  },
  'intake-watched': {
    level: 'info',
    fields: ['partner', 'path'],
    meaning: "a partner's local intake wakes `watch` by the kernel's events",
  },
  'intake-not-watched': {
    level: 'warn',
    fields: ['partner', 'path', 'reason'],
    meaning: "the kernel would not watch a partner's local intake (inotify spent): it is polled at --stable-for pace",
  },
  'intake-folder-replaced': {
    level: 'info',
    fields: ['partner', 'path'],
    meaning: "a partner's intake folder was replaced (renamed, made again): watched anew",
  },
} as const satisfies Record<string, LogEventSpec>;

/** The levels a line is logged at, as pino names them. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

export interface LogEventSpec {
  /** the level it is logged at; two where the same event is more or less grave (a new or a known ignored name) */
  level: LogLevel | readonly LogLevel[];
  /** the fields it carries besides every line's */
  fields: readonly string[];
  /** what it means to an operator, and what happens next */
  meaning: string;
}

/** A log event's name: the only values a line's `event` may take. */
export type LogEvent = keyof typeof LOG_EVENTS;

type LevelsOf<E extends LogEvent> = (typeof LOG_EVENTS)[E]['level'] extends readonly (infer Level)[]
  ? Level
  : (typeof LOG_EVENTS)[E]['level'];

/** The events the table logs at a level. */
export type EventAt<L extends LogLevel> = { [E in LogEvent]: L extends LevelsOf<E> ? E : never }[LogEvent];

/** A line's fields: its event, one of the table's, and what that event carries. */
export type LogFields<E extends LogEvent = LogEvent> = { event: E } & Record<string, unknown>;

/** Logs one line at level L: an event the table gives that level, with its fields, and the words. */
export type LogAt<L extends LogLevel> = <Fields extends { event: EventAt<L> }>(fields: Fields, message: string) => void;

/**
 * The logger every room logs through: pino's, whose level methods take only an event of the
 * table at its level (a name of no row, or at another level, does not compile), and whose
 * children are the same. Logging a bare message, or a string as the event, does not compile either.
 */
export type Logger = Omit<PinoLogger, LogLevel | 'child'> & { [L in LogLevel]: LogAt<L> } & { child(bindings: Bindings): Logger };
