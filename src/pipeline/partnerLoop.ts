import { randomBytes } from 'node:crypto';
import type { Logger } from '../logEvents.js';
import { EXIT_PROBLEM, EXIT_USAGE, UsageError, errorMessage, exitStatusOf } from '../errors.js';
import { faultPoint } from '../faults.js';
import { currentOwner } from '../owner.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { Intake } from '../intake/intake.js';
import { intakeFolders } from '../intake/openIntake.js';
import type { Ledger } from '../ledger/ledger.js';
import type { ClockSkew } from '../clock.js';
import { classifyName } from '../intake/classifyName.js';
import { ledgerSkew, skewWarning } from '../ledger/ledgerClock.js';
import { CommandRunIds } from '../ledger/runIds.js';
import type { HeldLease, LeaseHolder, Starvation, WaitingInIntake } from '../ledger/types.js';
import { NO_COUNTS, type PartnerRunMetrics, type RunMode } from '../ledger/types.js';
import type { ServerLogOfIntake } from '../transferLog/openUploads.js';
import type { ChangingFiles } from './completenessGate.js';
import { assertStagingUsable, preparePartners, refusalError, type Prepared, type PreparationSettings } from './runPreparation.js';
import { closeAsDied } from './startOfRun.js';
import { RunEndedError, runIngest, stopWords, type IngestOptions, type IngestResult } from './runIngest.js';

/** What runIngest's options take from the loop, its ports and the partner's preparation, not from the partner's settings as they are. */
type SuppliedByTheLoop =
  | 'runId'
  | 'intake'
  | 'ledger'
  | 'finance'
  | 'pattern'
  | 'ignore'
  | 'serverLog'
  | 'clockSkew'
  | 'mode'
  | 'stagingRoot'
  | 'logger'
  | 'onProgress'
  | 'onWaiting'
  | 'onDownload'
  | 'stop'
  | 'decode'
  | 'exitStatusFor'
  | 'changingFiles';

/**
 * The run's own settings (--stable-for, --max-wait, --claim-lease, --max-waiting-runs,
 * --ready-marker, …): every other option of runIngest, handed over from the partner's settings
 * as they are. A new one is a field of IngestOptions and a row of the option table, nothing here.
 */
export type RunSettings = Omit<IngestOptions, SuppliedByTheLoop>;

/** What the partner loop reads of a partner's settings (config/settings.ts fills it). */
export interface PartnerLoopSettings extends PreparationSettings, RunSettings {
  /** a partner skipped, its lease another's, with no successful run for longer than this is starved (exit 1) */
  maxAgeSeconds: number;
  staging: string;
  logFile: string | undefined;
  metricsFile: string | undefined;
  transferLog: { files: string[]; root: string; timeZone: string | undefined };
}

/** A delivery the partner owes and has not made (report/deliveries.ts judges them): what the loop needs of one. */
export interface LateDelivery {
  level: 'warning' | 'critical';
  message: string;
}

/** One partner's outcome in a run of several. */
export interface PartnerOutcome<Late extends LateDelivery = LateDelivery> {
  partner: string;
  exitStatus: number;
  result?: IngestResult;
  /** the run could not start (its server away, its table without privileges), or was not begun after a stop */
  error?: unknown;
  /** the run recorded for a partner that could not start, once there was a ledger to record it */
  runId?: string;
  /** with `expect`: its deliveries past `warnAfter` */
  overdue?: Late[];
  notBegun?: boolean;
  /** skipped: another run (on this shared ledger, from another host or process) holds the partner's lease */
  leasedBy?: HeldLease;
  /** the run could not start (its database, intake or staging refused): `runId` is the run that records it */
  notStarted?: true;
  /** skipped, and no run has succeeded for longer than --max-age: what it waits with (exit 1) */
  starved?: Starvation;
  /** this host's clock off the shared ledger's past the limit, as found before the partner was skipped (a worked run's is in its result) */
  clockSkew?: ClockSkew;
}

/** What one partner's run opens, each on first call, closed by `withPartner` when the partner's work ends. */
export interface PartnerResources {
  logger(): Logger;
  /** the configured ledger, as this partner's view; `stop` cuts a wait on it short */
  ledger(stop: AbortSignal): Promise<Ledger>;
  /** the finance database bound to the partner's layout, for loading */
  finance(stop: AbortSignal): Promise<FinanceDb>;
  intake(stop: AbortSignal): Promise<Intake>;
  /** the terminal's progress lines, where there is a terminal */
  progress?: Pick<IngestOptions, 'onProgress' | 'onDownload' | 'onWaiting'>;
}

/** What the partner loop needs from outside the pipeline: the command layer wires these. */
export interface PartnerLoopPorts<S extends PartnerLoopSettings, Late extends LateDelivery> {
  /** opens the partner's resources for `work` and closes them after it, even when it throws */
  withPartner<T>(settings: S, work: (resources: PartnerResources) => Promise<T>): Promise<T>;
  /** the deliveries the partner owes past `warnAfter` at `nowMs` (the ledger's clock), after its run's own files; undefined without `expect` */
  overdue(ledger: Ledger, settings: S, nowMs: number): Promise<Late[] | undefined>;
  /** age of the oldest file still in the intake, for the metrics */
  oldestWaiting(intake: Intake): Promise<number | undefined>;
  /** after the last partner: the process's exit status on each run, and the one metrics file */
  afterPartners(ran: PartnerRunMetrics[], processExit: number): Promise<void>;
  /** the real clock (clock.ts) */
  now(): number;
  /** what the ledger records of who ran: this host and process */
  host: string;
  pid: number;
  /** the run's mode for a partner whose settings do not give one */
  mode(settings: S): RunMode;
  /** asks the loop to finish the file in hand and begin no other partner (SIGTERM, SIGINT) */
  stop: AbortSignal;
  /** the command layer's rule from what a run found to the exit status the ledger records */
  exitStatusFor: IngestOptions['exitStatusFor'];
  /**
   * `watch`: the run a failing partner recorded for its outage, on which a try that cannot start
   * again is counted instead of a run of its own (one run for the outage, its tries counted)
   */
  outageRun?(partner: string): string | undefined;
  /** `watch`: what it remembers of the partner's files still being written (see IngestOptions.changingFiles) */
  changingFiles?(partner: string): ChangingFiles;
}

/**
 * What `runPartners` refuses before any partner runs (exit 2), found without running one and
 * without recording anything: `watch` asks it at its start and after its config is reread.
 */
export async function refusePartners(partners: PartnerLoopSettings[]): Promise<void> {
  const { prepared, refused } = await preparePartners(partners);
  if (refused.length > 0) throw refusalError(refused, prepared);
}

/**
 * One lease holder per process: watch's cycles follow one another in it, so a lease that a cycle
 * could not release (the ledger's server gone at that instant) is the next cycle's to take again,
 * not a stranger's to wait out for --claim-lease.
 */
const PROCESS_LEASE_TOKEN = randomBytes(6).toString('hex');

/**
 * Every partner in turn, each with its own intake connection, staging and run in the ledger.
 * Exit 2 means nothing was touched, so every partner's settings and what its intake and staging
 * need are checked before the first runs: a refusal there runs no partner (the refused ones are
 * recorded as not started, with the reason) and is exit 2. After that, one partner's trouble
 * (its server away, a missing privilege on its table) is its outcome and never stops the next;
 * once some partner's run did its work, a refusal found later is exit 1, never 2. A stop asked
 * for (SIGTERM) ends the partner in hand and begins no other. The metrics are written once, for
 * all partners, after the last (`afterPartners`).
 */
export async function runPartners<S extends PartnerLoopSettings, Late extends LateDelivery>(
  ports: PartnerLoopPorts<S, Late>,
  partners: S[],
): Promise<PartnerOutcome<Late>[]> {
  const { prepared, refused } = await preparePartners(partners);
  const outcomes: PartnerOutcome<Late>[] = [];
  const ran: PartnerRunMetrics[] = [];
  const holder: LeaseHolder = {
    holder: `${ports.host}:${ports.pid}:${PROCESS_LEASE_TOKEN}`,
    host: ports.host,
    pid: ports.pid,
    startedAt: currentOwner().startedAt,
  };
  // every partner's run of this command is named by one command id (report run shows them together)
  const runIds = new CommandRunIds();
  for (const preparedPartner of refused.length > 0 ? refused : prepared) {
    if (ports.stop.aborted) {
      const reason = `${stopWords(ports.stop.reason)}: this partner's run was not begun`;
      outcomes.push({ partner: preparedPartner.settings.partner, exitStatus: 1, error: new UsageError(reason), notBegun: true });
      continue;
    }
    const startedAt = ports.now();
    const metrics: PartnerRunMetrics = {
      partner: preparedPartner.settings.partner,
      startedAt,
      endedAt: startedAt,
      exitStatus: 0,
      processExitStatus: 0,
      counts: NO_COUNTS,
    };
    const trace: { notStarted?: boolean } = {};
    try {
      const worked = await workPartner(ports, preparedPartner, metrics, holder, runIds, trace);
      if ('leasedBy' in worked) {
        // another run works the partner: nothing of it is this run's, not even a run row; starved, it is exit 1
        outcomes.push({ partner: preparedPartner.settings.partner, exitStatus: worked.starved ? 1 : 0, ...worked });
        continue;
      }
      const { result, overdue } = worked;
      // a delivery past errorAfter makes the command exit 1; the run itself, as the ledger keeps it, did its work
      const late = overdue?.some((d) => d.level === 'critical') ? 1 : 0;
      outcomes.push({
        partner: preparedPartner.settings.partner,
        exitStatus: Math.max(result.exitStatus, late),
        result,
        ...(overdue ? { overdue } : {}),
      });
      metrics.exitStatus = result.exitStatus;
      metrics.counts = result.counts;
    } catch (err) {
      // a run that ended on an error after it started keeps what it did (its summary, its files)
      const ended = err instanceof RunEndedError ? { result: err.result } : {};
      outcomes.push({
        partner: preparedPartner.settings.partner,
        exitStatus: exitStatusOf(err),
        error: err,
        runId: metrics.runId,
        ...ended,
        ...(trace.notStarted ? { notStarted: true as const } : {}),
      });
      metrics.exitStatus = exitStatusOf(err);
    }
    metrics.endedAt = ports.now();
    ran.push(metrics);
  }
  const refusal = refused.length > 0 ? refusalError(refused, prepared) : undefined;
  if (!refusal && outcomes.some((partnerOutcome) => partnerOutcome.result !== undefined)) {
    // some partner's run did its work: the command touched something, whatever another's refusal says
    for (const partnerOutcome of outcomes) if (partnerOutcome.exitStatus === EXIT_USAGE) partnerOutcome.exitStatus = EXIT_PROBLEM;
  }
  // what the process exits with (the worst partner's, overdue deliveries included): the scheduler's view of every run of it
  const processExit = refusal ? exitStatusOf(refusal) : Math.max(...outcomes.map((o) => o.exitStatus));
  for (const partnerRunMetrics of ran) partnerRunMetrics.processExitStatus = processExit;
  await ports.afterPartners(ran, processExit).catch(() => undefined);
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
  if (refusal) throw refusal;
  return outcomes;
}

/** What one partner's turn came to: its run's result (and overdue deliveries), or skipped, another run holding its lease. */
type PartnerWork<Late extends LateDelivery> =
  { result: IngestResult; overdue?: Late[] } | { leasedBy: HeldLease; starved?: Starvation; clockSkew?: ClockSkew };

/** One partner's turn, as its steps share it. */
interface PartnerTurn<S extends PartnerLoopSettings, Late extends LateDelivery> {
  ports: PartnerLoopPorts<S, Late>;
  prepared: Prepared<S>;
  resources: PartnerResources;
  ledger: Ledger;
  logger: Logger;
  /** the run's mode, asked once */
  mode: RunMode;
  metrics: PartnerRunMetrics;
  /** set when the run could not start */
  trace: { notStarted?: boolean };
  /** the command's run ids, one a partner (ledger/runIds.ts) */
  runIds: CommandRunIds;
}

/**
 * One partner's run: its own ledger view, finance connection, intake, staging and summary. The
 * ledger first (a host off its clock says so), then the partner's lease (held by another run: the
 * partner is skipped), then the run recorded and worked while the lease is renewed, and the lease
 * released after it, whatever happened.
 */
async function workPartner<S extends PartnerLoopSettings, Late extends LateDelivery>(
  ports: PartnerLoopPorts<S, Late>,
  prepared: Prepared<S>,
  metrics: PartnerRunMetrics,
  holder: LeaseHolder,
  runIds: CommandRunIds,
  trace: PartnerTurn<S, Late>['trace'],
): Promise<PartnerWork<Late>> {
  const settings = prepared.settings;
  return ports.withPartner(settings, async (resources) => {
    const logger = resources.logger();
    const mode = ports.mode(settings);
    const ledger = await openPartnerLedger(resources, ports.stop, settings, logger);
    // a shared ledger's clock is its server's: a host off it says so, and takes over no other host's lease or claim
    const skew = await ledgerSkew(ledger);
    const skewed = skew?.skewed === true ? skew : undefined;
    if (skewed) logger.warn({ event: 'clock-skew', seconds: Number(skewed.seconds.toFixed(1)) }, skewWarning(skewed));
    // on a ledger several hosts share, one run at a time works a partner: a held lease skips it at once
    const leaseSeconds = settings.claimLeaseSeconds;
    const lease = await ledger.takePartnerLease(holder, { leaseSeconds, takeRunOut: !skewed });
    const turn: PartnerTurn<S, Late> = { ports, prepared, resources, ledger, logger, mode, metrics, trace, runIds };
    if (!lease.taken) return skipLeased(turn, lease.heldBy, skewed);
    try {
      return await leasedWork(ledger, holder, leaseSeconds, logger, async (named) => {
        const opened = await openForRun(turn, lease.replaced, named);
        return ingestPartner(turn, opened, skew);
      });
    } finally {
      faultPoint('before-lease-release');
      await ledger.releasePartnerLease(holder.holder).catch((err: unknown) => {
        // it expires on its own
        logger.warn({ event: 'partner-lease-not-released', reason: errorMessage(err) }, 'could not release the partner lease');
      });
    }
  });
}

/** The partner's view of the ledger; without one, not even a run records the failure: the log file and the metrics still say so. */
async function openPartnerLedger(
  resources: PartnerResources,
  stop: AbortSignal,
  settings: PartnerLoopSettings,
  logger: Logger,
): Promise<Ledger> {
  try {
    return await resources.ledger(stop);
  } catch (err) {
    if (settings.logFile)
      logger.error({ event: 'run-not-started', reason: errorMessage(err) }, `run could not start: ${errorMessage(err)}`);
    throw err;
  }
}

/** Another run holds the partner's lease: skipped, said, and judged starved when no run has succeeded for longer than --max-age. */
async function skipLeased<S extends PartnerLoopSettings, Late extends LateDelivery>(
  turn: PartnerTurn<S, Late>,
  heldBy: HeldLease,
  skewed: ClockSkew | undefined,
): Promise<PartnerWork<Late>> {
  const { ports, prepared, resources, ledger, logger } = turn;
  const { partner } = prepared.settings;
  const { host, pid, runId: by, leaseUntil, runOut } = heldBy;
  logger.info(
    { event: 'partner-leased', holderHost: host, holderPid: pid, holderRun: by, leaseUntil, ...(runOut ? { runOut } : {}) },
    `partner ${partner} skipped: run ${by ?? '(starting)'} on ${host} (pid ${pid}) holds it until ${leaseUntil}` +
      (runOut ? ` (${runOut}: not taken over, this host's clock is off the ledger's)` : ''),
  );
  const starved = await starvation(ledger, prepared, heldBy, () => resources.intake(ports.stop), ports);
  if (starved) {
    logger.error(
      { event: 'partner-starved', holderHost: host, holderRun: by, seconds: Math.round(starved.seconds), waiting: starved.waiting },
      `partner ${partner} starved: no successful run for longer than --max-age, while run ${by ?? '(starting)'} on ${host} holds its lease`,
    );
  }
  return { leasedBy: heldBy, ...(starved ? { starved } : {}), ...(skewed ? { clockSkew: skewed } : {}) };
}

/** What a partner's run works with, once it is recorded. */
interface OpenedForRun {
  runId: string;
  finance: FinanceDb;
  intake: Intake;
}

/**
 * The run recorded on the partner's lease, with its finance database, intake and staging opened.
 * Cheapest and most likely refusals first: the database being down stops the run before any
 * download. A refusal (also one found before any partner ran, checkAccess) is recorded as a run
 * that could not start, or, for `watch`'s outage already recorded, counted as another try on it.
 */
async function openForRun<S extends PartnerLoopSettings, Late extends LateDelivery>(
  turn: PartnerTurn<S, Late>,
  replaced: (HeldLease & { runId: string }) | undefined,
  named: (runId: string) => Promise<void>,
): Promise<OpenedForRun> {
  const { ports, prepared, resources, ledger, logger, metrics } = turn;
  const { settings } = prepared;
  let finance: FinanceDb;
  let intake: Intake;
  try {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
    if (prepared.refusal !== undefined) throw prepared.refusal;
    finance = await resources.finance(ports.stop);
    intake = await resources.intake(ports.stop);
    await assertStagingUsable(settings.staging);
  } catch (err) {
    const reason = errorMessage(err);
    const status = exitStatusOf(err);
    turn.trace.notStarted = true;
    // an outage's run already recorded (`watch` trying again after a backoff): this try is counted on it
    const outage = ports.outageRun?.(settings.partner);
    if (outage !== undefined && (await ledger.countRunAttempt(outage, status, reason))) {
      metrics.runId = outage;
      if (settings.logFile)
        logger.error({ event: 'run-not-started', run: outage, reason }, `run ${outage} could not start, again: ${reason}`);
      throw err;
    }
    const runId = await startNamedRun(turn, replaced, named);
    // on stderr the one-line error below says it already; a log file must say it too
    if (settings.logFile) logger.error({ event: 'run-not-started', run: runId, reason }, `run ${runId} could not start: ${reason}`);
    await ledger.finishRun(runId, NO_COUNTS, status, { status: 'not_started', reason });
    throw err;
  }
  return { runId: await startNamedRun(turn, replaced, named), finance, intake };
}

/** The run recorded on the lease; the run named on the lease taken over closed as died. */
async function startNamedRun<S extends PartnerLoopSettings, Late extends LateDelivery>(
  turn: PartnerTurn<S, Late>,
  replaced: (HeldLease & { runId: string }) | undefined,
  named: (runId: string) => Promise<void>,
): Promise<string> {
  const { ports, ledger, logger } = turn;
  let tries = 0;
  const partner = turn.prepared.settings.partner;
  const runId = await ledger.startRun({ mode: turn.mode, host: ports.host, pid: ports.pid }, () => turn.runIds.runId(partner, tries++ > 0));
  turn.metrics.runId = runId;
  await named(runId);
  // the run named on the lease taken over stopped renewing it (killed, or its host gone): a
  // run on its own host (closeDeadRuns) may never come, so it is closed here
  if (replaced) {
    const why = `its process (pid ${replaced.pid} on ${replaced.host}) stopped renewing its partner lease (due to run out at ${replaced.leaseUntil}); run ${runId} took the partner over`;
    await closeAsDied(ledger, replaced, runId, why, logger);
  }
  return runId;
}

/** The partner's run itself (runIngest), then what the metrics and its summary need: its oldest waiting file, its overdue deliveries. */
async function ingestPartner<S extends PartnerLoopSettings, Late extends LateDelivery>(
  turn: PartnerTurn<S, Late>,
  { runId, finance, intake }: OpenedForRun,
  skew: ClockSkew | null,
): Promise<{ result: IngestResult; overdue?: Late[] }> {
  const { ports, prepared, resources, ledger, logger } = turn;
  const { settings } = prepared;
  const runSettings: RunSettings = settings;
  const result = await runIngest({
    ...runSettings,
    runId,
    intake,
    ledger,
    finance,
    pattern: prepared.pattern,
    ignore: prepared.ignore,
    serverLog: serverLogOf(settings),
    clockSkew: skew,
    mode: turn.mode,
    stagingRoot: settings.staging,
    logger,
    ...resources.progress,
    stop: ports.stop,
    exitStatusFor: ports.exitStatusFor,
    decode: prepared.decode,
    ...(ports.changingFiles ? { changingFiles: ports.changingFiles(settings.partner) } : {}),
  });
  if (settings.metricsFile) turn.metrics.oldestWaitingSeconds = await ports.oldestWaiting(intake);
  // after the run's own files: the deliveries the partner owes, named on its summary line
  const overdue = await ports.overdue(ledger, settings, await ledger.ledgerNow());
  if (!overdue) return { result };
  for (const late of overdue) {
    const fields = { event: 'delivery-overdue' as const, run: runId, ...late };
    if (late.level === 'critical') logger.error(fields, `overdue: ${late.message}`);
    else logger.warn(fields, `overdue: ${late.message}`);
  }
  return { result, overdue };
}

/**
 * `work` while the partner's lease is renewed to the ledger's now plus its length, every third of
 * it as this process counts time (a run that outlives its lease would let another host in);
 * `named` records the run on the lease.
 */
async function leasedWork<T>(
  ledger: Ledger,
  holder: LeaseHolder,
  leaseSeconds: number,
  logger: Logger,
  work: (named: (runId: string) => Promise<void>) => Promise<T>,
): Promise<T> {
  let runId: string | undefined;
  const renew = () =>
    ledger.renewPartnerLease(holder.holder, leaseSeconds, runId).then(
      (kept) => {
        if (!kept)
          logger.warn({ event: 'partner-lease-lost', run: runId }, `the partner lease of run ${runId ?? ''} expired and was taken`);
      },
      (err: unknown) =>
        logger.warn({ event: 'partner-lease-not-renewed', run: runId, reason: errorMessage(err) }, 'could not renew the partner lease'),
    );
  const timer = setInterval(() => void renew(), Math.max(1000, Math.floor((leaseSeconds * 1000) / 3)));
  timer.unref();
  try {
    return await work(async (id) => {
      runId = id;
      await renew();
    });
  } finally {
    clearInterval(timer);
  }
}

/** Names kept on a starved partner's lease: enough to act on, never a long list in a status line. */
const WAITING_NAMES = 20;

/**
 * A partner skipped for `held`: starved when no run of it has succeeded for longer than
 * --max-age by the ledger's clock (since its last success, else its first run, else since the
 * lease was taken). Then its intake is listed (a healthy skip lists nothing: it is at once), and
 * the files waiting there are noted on the lease, for `status` and the metrics, which read the
 * ledger alone.
 */
async function starvation(
  ledger: Ledger,
  prepared: Prepared<PartnerLoopSettings>,
  held: HeldLease,
  openIntake: () => Promise<Intake>,
  who: { host: string; pid: number },
): Promise<Starvation | undefined> {
  const settings = prepared.settings;
  const nowMs = await ledger.ledgerNow();
  const last = await ledger.latestIngestRun({ successful: true, partner: settings.partner });
  const since = last?.endedAt ?? (await ledger.firstRunAt(settings.partner)) ?? held.takenAt;
  const seconds = Math.max(0, (nowMs - Date.parse(since)) / 1000);
  if (!(seconds > settings.maxAgeSeconds)) return undefined;
  const waiting = await waitingInIntake(prepared, openIntake);
  await ledger.notePartnerSkipped(held.holder, { by: `${who.host} (pid ${who.pid})`, waiting });
  return { seconds, maxAgeSeconds: settings.maxAgeSeconds, lastSuccessRun: last?.runId ?? null, waiting };
}

/** The files of the partner's intake its pattern takes (also those not ready yet), oldest first; or why it could not be listed. */
async function waitingInIntake(prepared: Prepared<PartnerLoopSettings>, openIntake: () => Promise<Intake>): Promise<WaitingInIntake> {
  try {
    const entries = await (await openIntake()).list();
    const present = new Set(entries.map((entry) => entry.name));
    const rules = { pattern: prepared.pattern, ignore: prepared.ignore, readyMarker: prepared.settings.readyMarker };
    const files = entries
      .filter((entry) => !entry.notRegular && ['take', 'not_ready'].includes(classifyName(entry.name, rules, present).kind))
      .sort((a, b) => a.mtimeMs - b.mtimeMs || (a.name < b.name ? -1 : 1));
    return {
      count: files.length,
      names: files.slice(0, WAITING_NAMES).map((entry) => entry.name),
      oldestAt: files.length > 0 ? new Date(files[0]!.mtimeMs).toISOString() : null,
    };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** The partner's transfer log as the run's gate asks it, where one is configured. */
function serverLogOf(s: PartnerLoopSettings): ServerLogOfIntake | undefined {
  if (s.transferLog.files.length === 0) return undefined;
  const { files, timeZone, root } = s.transferLog;
  return { files, timeZone, root, folder: intakeFolders(s).intake };
}
