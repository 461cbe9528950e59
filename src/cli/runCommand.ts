import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { nowMs } from '../clock.js';
import { AnsweredError, EXIT_PROBLEM, EXIT_USAGE, UsageError, errorMessage, exitStatusOf } from '../errors.js';
import type { Ledger } from '../ledger/ledger.js';
import { NO_COUNTS } from '../ledger/types.js';
import { newRunId } from '../pipeline/runId.js';
import { oldestWaiting, writeRunMetrics, type DeliveryMetrics, type PartnerRunMetrics } from '../report/metricsFile.js';
import { lastAccountedAt, lastDeliveryAt, overdueDeliveries, type OverdueDelivery } from '../report/deliveries.js';
import { resolvePartners, resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { Intake } from '../intake/intake.js';
import { checkIntakeAccess, checkIntakeSetting, intakeFolders } from '../intake/openIntake.js';
import type { ServerLogOfIntake } from '../transferLog/openUploads.js';
import { globToRegExp } from '../intake/names.js';
import type { RunMode } from '../ledger/types.js';
import { RunEndedError, runIngest, type IngestResult } from '../pipeline/runIngest.js';
import { withSettingOptions } from './options.js';
import { loadDecodeOptions, type DecodeOptions } from '../delivery/decodeSettings.js';
import { reprocessJson, reprocessLine, reprocessNames, reprocessOnce, type ReprocessFlags } from './reprocessRun.js';
import { runExitStatus } from './exitStatus.js';
import { withResources } from './resources.js';
import { partnersJson, partnersText, summaryJson, summaryLine, type PartnerOutcome } from './summaryOutput.js';
import { appendSummary } from './summaryFile.js';
import { acknowledgeStop, downloadLine, progressLine, waitingLine } from './terminal.js';

export interface RunFlags extends RawFlags {
  json?: boolean;
  mode?: RunMode;
}

export function registerRun(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('run'), 'run')
    .description('one ingest run: every ready file in the intake loaded, skipped, held or rejected; each partner in turn')
    .option('--json', 'print the summary as one JSON object with one entry per file (and per partner)')
    .option('--reprocess', 'reload already-loaded files from the archive with this release, replacing their rows')
    .option('--reason <text>', 'with --reprocess: why (kept in the ledger with the operator)')
    .option('--files <names...>', 'with --reprocess: the file names to reload')
    .option('--file-list <path>', 'with --reprocess: a file with one name per line')
    .option('--dry-run', 'with --reprocess: check and count, commit nothing')
    .action(async (flags: RunFlags & ReprocessFlags) => {
      const names = reprocessNames(flags);
      if (flags.reprocess) {
        // files are reloaded from one partner's archive, with its layout
        const r = await reprocessOnce(resolveSettings(flags), flags, names);
        process.stdout.write(`${flags.json ? reprocessJson(r) : reprocessLine(r)}\n`);
        setExit(r.exitStatus);
        return;
      }
      const { partners, named, all } = resolvePartners(flags);
      const outcomes = await ingestPartners(partners, flags, all);
      if (!named) {
        // one partner, `default`: the run prints what it always printed
        const [one] = outcomes;
        if (one!.error !== undefined) {
          // a run that ended on an error after it started still gives --json its object
          if (flags.json && one!.error instanceof RunEndedError) {
            process.stdout.write(`${summaryJson(one!.error.result, one!.overdue)}\n`);
            throw new AnsweredError(one!.error);
          }
          // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
          throw one!.error;
        }
        process.stdout.write(`${flags.json ? summaryJson(one!.result!, one!.overdue) : summaryLine(one!.result!, one!.overdue)}\n`);
        appendSummary(partners[0]!.summaryFile, summaryLine(one!.result!, one!.overdue));
        setExit(one!.exitStatus);
        return;
      }
      process.stdout.write(`${flags.json ? partnersJson(outcomes) : partnersText(outcomes)}\n`);
      appendSummary(partners[0]?.summaryFile, partnersText(outcomes));
      setExit(Math.max(...outcomes.map((o) => o.exitStatus)));
    });
}

/**
 * The first SIGTERM or SIGINT asks the run to finish the file in hand and stop (exit 1,
 * "stopped"), cancelling its statement if that is stuck waiting on the finance database; a
 * second one ends the process at once, which recovery also covers. The partners not yet
 * begun are not begun. A Ctrl-C on a terminal is acknowledged on the spot (acknowledgeStop).
 */
function stopOnSignal(): { signal: AbortSignal; dispose: () => void } {
  const stop = new AbortController();
  const handlers = (['SIGTERM', 'SIGINT'] as const).map((signal) => {
    const first = () => {
      if (signal === 'SIGINT') acknowledgeStop();
      stop.abort(signal);
      process.once(signal, () => process.kill(process.pid, signal));
    };
    process.once(signal, first);
    return () => process.removeListener(signal, first);
  });
  return { signal: stop.signal, dispose: () => handlers.forEach((off) => off()) };
}

/** What a partner's run needs that is read from its settings alone: refused (exit 2) before any partner's run is recorded. */
interface Prepared {
  settings: Settings;
  pattern: RegExp;
  ignore: RegExp[];
  decode: DecodeOptions;
  /** why the partner cannot run, found before any partner ran (checkAccess): its run is recorded as not started */
  refusal?: unknown;
}

async function prepare(s: Settings): Promise<Prepared> {
  checkIntakeSetting(s);
  // a pattern that cannot compile is refused before a run is recorded
  const pattern = globToRegExp(s.pattern);
  const ignore = s.ignore.map(globToRegExp);
  // keys are read and unlocked before a run is recorded: a wrong passphrase touches nothing (exit 2)
  const decode = await loadDecodeOptions(s.decode, pattern);
  return { settings: s, pattern, ignore, decode };
}

/**
 * What opening the partner's intake and staging needs that is known without a connection (its
 * folders, SFTP credentials and host key settings, the staging folder): the refusal, or
 * undefined when all hold.
 */
async function checkAccess(p: Prepared): Promise<unknown> {
  try {
    await checkIntakeAccess(p.settings);
    await assertStagingUsable(p.settings.staging);
    return undefined;
  } catch (err) {
    if (exitStatusOf(err) !== EXIT_USAGE) throw err;
    return err;
  }
}

/** One line for the refusals found before any partner ran: the only one's own message, or each partner's named. */
function refusalError(refused: Prepared[], all: Prepared[]): unknown {
  if (all.length === 1) return refused[0]!.refusal;
  const each = refused.map((p) => `partner "${p.settings.partner}": ${errorMessage(p.refusal)}`).join('; ');
  return new UsageError(`${each} (no partner was run: every partner's settings are checked before the first runs)`, {
    cause: refused[0]!.refusal,
  });
}

/** The whole `run` command for one partner short of printing: also what `demo` runs. */
export async function ingestOnce(s: Settings, flags: RunFlags): Promise<IngestResult> {
  const [outcome] = await ingestPartners([s], flags);
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
  if (outcome!.error !== undefined) throw outcome!.error;
  return outcome!.result!;
}

/**
 * Every partner in turn, each with its own intake connection, staging and run in the ledger.
 * Exit 2 means nothing was touched, so every partner's settings and what its intake and staging
 * need are checked before the first runs: a refusal there runs no partner (the refused ones are
 * recorded as not started, with the reason) and is exit 2. After that, one partner's trouble
 * (its server away, a missing privilege on its table) is its outcome and never stops the next;
 * once some partner's run did its work, a refusal found later is exit 1, never 2. A stop asked
 * for (SIGTERM) ends the partner in hand and begins no other. The metrics file is written once,
 * for all partners, after the last.
 */
export async function ingestPartners(partners: Settings[], flags: RunFlags, all: Settings[] = partners): Promise<PartnerOutcome[]> {
  const prepared: Prepared[] = [];
  for (const p of partners) prepared.push(await prepare(p));
  for (const p of prepared) p.refusal = await checkAccess(p);
  const refused = prepared.filter((p) => p.refusal !== undefined);
  const stopping = stopOnSignal();
  const outcomes: PartnerOutcome[] = [];
  const ran: PartnerRunMetrics[] = [];
  try {
    for (const p of refused.length > 0 ? refused : prepared) {
      if (stopping.signal.aborted) {
        const reason = `asked to stop (${String(stopping.signal.reason ?? 'signal')}) before this partner's run began`;
        outcomes.push({ partner: p.settings.partner, exitStatus: 1, error: new UsageError(reason), notBegun: true });
        continue;
      }
      const startedAt = nowMs();
      const metrics: PartnerRunMetrics = {
        partner: p.settings.partner,
        startedAt,
        endedAt: startedAt,
        exitStatus: 0,
        processExitStatus: 0,
        counts: NO_COUNTS,
      };
      try {
        const { result, overdue } = await ingestPartner(p, flags, stopping.signal, metrics);
        // a delivery past errorAfter makes the command exit 1; the run itself, as the ledger keeps it, did its work
        const late = overdue?.some((d) => d.level === 'critical') ? 1 : 0;
        outcomes.push({
          partner: p.settings.partner,
          exitStatus: Math.max(result.exitStatus, late),
          result,
          ...(overdue ? { overdue } : {}),
        });
        metrics.exitStatus = result.exitStatus;
        metrics.counts = result.counts;
      } catch (err) {
        // a run that ended on an error after it started keeps what it did (its summary, its files)
        const ended = err instanceof RunEndedError ? { result: err.result } : {};
        outcomes.push({ partner: p.settings.partner, exitStatus: exitStatusOf(err), error: err, runId: metrics.runId, ...ended });
        metrics.exitStatus = exitStatusOf(err);
      }
      metrics.endedAt = nowMs();
      ran.push(metrics);
    }
  } finally {
    stopping.dispose();
  }
  const refusal = refused.length > 0 ? refusalError(refused, prepared) : undefined;
  if (!refusal && outcomes.some((o) => o.result !== undefined)) {
    // some partner's run did its work: the command touched something, whatever another's refusal says
    for (const o of outcomes) if (o.exitStatus === EXIT_USAGE) o.exitStatus = EXIT_PROBLEM;
  }
  // what the process exits with (the worst partner's, overdue deliveries included): the scheduler's view of every run of it
  const processExit = refusal ? exitStatusOf(refusal) : Math.max(...outcomes.map((o) => o.exitStatus));
  await afterPartners(partners[0]!, all, ran, processExit);
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
  if (refusal) throw refusal;
  return outcomes;
}

/**
 * After the last partner: the ledger is opened once more to record on each run of this process
 * the status the process exits with (`report runs` shows it beside the loads' own), and for the
 * one metrics file of all partners, with what the ledger says of each.
 */
async function afterPartners(shared: Settings, all: Settings[], ran: PartnerRunMetrics[], processExit: number): Promise<void> {
  for (const m of ran) m.processExitStatus = processExit;
  const runIds = ran.flatMap((m) => (m.runId ? [m.runId] : []));
  if (!shared.metricsFile && runIds.length === 0) return;
  const names = all.map((p) => p.partner);
  await withResources(shared, async (r) => {
    const logger = r.logger();
    let ledger: Ledger | undefined;
    try {
      ledger = await r.ledger();
    } catch {
      // not even a ledger: the metrics still say how the run ended, and keep the last success they had
    }
    if (ledger) {
      await ledger.recordProcessExit(runIds, processExit).catch((err: unknown) => {
        logger.error({ event: 'exit-status-not-recorded', runs: runIds, reason: errorMessage(err) }, 'could not record the exit status');
      });
    }
    if (!shared.metricsFile) return;
    const path = shared.metricsFile;
    const deliveries = async (partner: string): Promise<DeliveryMetrics> => {
      const s = all.find((p) => p.partner === partner);
      const view = ledger!.forPartner(partner);
      const overdue = s?.expect ? await overdueDeliveries(view, { partner, expect: s.expect, patternText: s.patternText }, nowMs()) : [];
      return {
        lastDeliveryAt: await lastDeliveryAt(view, partner),
        lastAccountedAt: await lastAccountedAt(view, { partner, expect: s?.expect }, nowMs()),
        overdue: {
          warning: overdue.filter((d) => d.level === 'warning').length,
          critical: overdue.filter((d) => d.level === 'critical').length,
        },
      };
    };
    await writeRunMetrics(path, { partners: names, ran, ...(ledger ? { ledger, deliveries } : {}) }, logger);
  }).catch(() => undefined);
}

/** One partner's run: its own ledger view, finance connection, intake, staging and summary. */
async function ingestPartner(
  p: Prepared,
  flags: RunFlags,
  stop: AbortSignal,
  metrics: PartnerRunMetrics,
): Promise<{ result: IngestResult; overdue?: OverdueDelivery[] }> {
  const s = p.settings;
  return withResources(s, async (r) => {
    const logger = r.logger();
    const mode = s.mode ?? flags.mode ?? (process.stdin.isTTY ? 'manual' : 'scheduled');
    let ledger: Ledger;
    try {
      ledger = await r.ledger();
    } catch (err) {
      // not even a ledger to record the run in: the log file and the metrics still say so
      if (s.logFile) logger.error({ event: 'run-not-started', reason: errorMessage(err) }, `run could not start: ${errorMessage(err)}`);
      throw err;
    }
    const runId = await ledger.startRun({ mode, host: hostname(), pid: process.pid }, () => newRunId());
    metrics.runId = runId;
    let finance: FinanceDb;
    let intake: Intake;
    try {
      // found before any partner ran (checkAccess): recorded as a run that could not start, like the refusals below
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
      if (p.refusal !== undefined) throw p.refusal;
      // cheapest and most likely refusals first: the database being down stops the run before any download
      finance = await r.finance('load', stop);
      intake = await r.intake(stop);
      await assertStagingUsable(s.staging);
    } catch (err) {
      const reason = errorMessage(err);
      // on stderr the one-line error below says it already; a log file must say it too
      if (s.logFile) logger.error({ event: 'run-not-started', run: runId, reason }, `run ${runId} could not start: ${reason}`);
      await ledger.finishRun(runId, NO_COUNTS, exitStatusOf(err), { status: 'not_started', reason });
      throw err;
    }
    let progressOf = '';
    const result = await runIngest({
      runId,
      intake,
      ledger,
      finance,
      pattern: p.pattern,
      ignore: p.ignore,
      readyMarker: s.readyMarker,
      maxWaitingRuns: s.maxWaitingRuns,
      serverLog: serverLogOf(s),
      stableForSeconds: s.stableForSeconds,
      maxWaitSeconds: s.maxWaitSeconds,
      claimLeaseSeconds: s.claimLeaseSeconds,
      mode,
      stagingRoot: s.staging,
      logger,
      // a file's first figures are drawn at once, however soon after the last line: a short load shows too
      // only for a terminal: formatting the figures costs more than the batch they report (docs/BENCHMARKS.md)
      onProgress: r.status.enabled
        ? (progress) => {
            r.status.show(progressLine(progress), progress.file !== progressOf);
            progressOf = progress.file;
          }
        : undefined,
      onDownload: (file, bytes, size) => r.status.show(downloadLine(file, bytes, size)),
      onWaiting: (waiting) => r.status.show(waitingLine(waiting, s.stableForSeconds), waiting.first),
      stop,
      exitStatusFor: runExitStatus,
      decode: p.decode,
    });
    if (s.metricsFile) metrics.oldestWaitingSeconds = await oldestWaiting(intake);
    if (!s.expect) return { result };
    // after the run's own files: the deliveries the partner owes, named on its summary line
    const overdue = await overdueDeliveries(ledger, { partner: s.partner, expect: s.expect, patternText: s.patternText }, nowMs());
    for (const d of overdue) {
      logger[d.level === 'critical' ? 'error' : 'warn']({ event: 'delivery-overdue', run: runId, ...d }, `overdue: ${d.message}`);
    }
    return { result, overdue };
  });
}

/** The partner's transfer log as the run's gate asks it, where one is configured. */
function serverLogOf(s: Settings): ServerLogOfIntake | undefined {
  if (s.transferLog.files.length === 0) return undefined;
  const { files, timeZone, root } = s.transferLog;
  return { files, timeZone, root, folder: intakeFolders(s).intake };
}

/** A staging folder that is missing or not a folder is configuration (exit 2), said before any run work. */
async function assertStagingUsable(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new UsageError(`staging folder ${dir} does not exist or is not a folder (--staging, SETTLE_STAGING)`);
}
