import { hostname } from 'node:os';
import type { Command } from 'commander';
import { nowMs } from '../clock.js';
import { AnsweredError, errorMessage } from '../errors.js';
import type { Ledger } from '../ledger/ledger.js';
import type { PartnerRunMetrics, RunMode } from '../ledger/types.js';
import { oldestWaiting, writeRunMetrics, type DeliveryMetrics, type ServedMetrics, type WatchMetrics } from '../report/metricsFile.js';
import { lastAccountedAt, lastDeliveryAt, overdueDeliveries } from '../report/deliveries.js';
import { resolvePartners, resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import { runPartners, type PartnerResources } from '../pipeline/partnerLoop.js';
import { RunEndedError, type IngestResult } from '../pipeline/runIngest.js';
import type { ChangingFiles } from '../pipeline/completenessGate.js';
import { withSettingOptions } from './options.js';
import { reprocessJson, reprocessLine, reprocessNames, reprocessOnce, type ReprocessFlags } from './reprocessRun.js';
import { runExitStatus } from './exitStatus.js';
import { withResources, type CommandResources } from './resources.js';
import { leasedText, partnersJson, partnersText, runText, summaryJson, type PartnerOutcome } from './summaryOutput.js';
import { appendSummary } from './summaryFile.js';
import { acknowledgeStop, downloadLine, progressLine, waitingLine } from './terminal.js';
import { logFileFailure } from './logger.js';

export interface RunFlags extends RawFlags {
  json?: boolean;
  mode?: RunMode;
}

export function registerRun(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('run'), 'run')
    .description('one ingest run: every ready file in the intake loaded, skipped, held or rejected; each partner in turn')
    .action(async (flags: RunFlags & ReprocessFlags) => {
      const names = reprocessNames(flags);
      if (flags.reprocess) {
        // files are reloaded from one partner's archive, with its layout
        const reprocessResult = await reprocessOnce(resolveSettings(flags), flags, names);
        process.stdout.write(`${flags.json ? reprocessJson(reprocessResult) : reprocessLine(reprocessResult)}\n`);
        setExit(reprocessResult.exitStatus);
        return;
      }
      const { partners, named, all } = resolvePartners(flags);
      const outcomes = await ingestPartners(partners, flags, all);
      if (!named) {
        // one partner, `default`: the run prints what it always printed
        const [one] = outcomes;
        if (one!.leasedBy) {
          // another host's run works the partner (a shared ledger): nothing to do here, and nothing wrong unless it is starved
          const line = leasedText({ ...one!, leasedBy: one!.leasedBy });
          process.stdout.write(`${flags.json ? partnersJson(outcomes) : line}\n`);
          appendSummary(partners[0]!.summaryFile, line);
          setExit(one!.exitStatus);
          return;
        }
        if (one!.error !== undefined) {
          // a run that ended on an error after it started still gives --json its object
          if (flags.json && one!.error instanceof RunEndedError) {
            process.stdout.write(`${summaryJson(one!.error.result, one!.overdue)}\n`);
            throw new AnsweredError(one!.error);
          }
          // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
          throw one!.error;
        }
        process.stdout.write(`${flags.json ? summaryJson(one!.result!, one!.overdue) : runText(one!.result!, one!.overdue)}\n`);
        appendSummary(partners[0]!.summaryFile, runText(one!.result!, one!.overdue));
        setExit(one!.exitStatus);
        return;
      }
      process.stdout.write(`${flags.json ? partnersJson(outcomes) : partnersText(outcomes)}\n`);
      appendSummary(partners[0]?.summaryFile, partnersText(outcomes));
      setExit(Math.max(...outcomes.map((partnerOutcome) => partnerOutcome.exitStatus)));
    });
}

/**
 * The first SIGTERM or SIGINT asks the run to finish the file in hand and stop (exit 1,
 * "stopped"), cancelling its statement if that is stuck waiting on the finance database or a
 * PostgreSQL ledger (statementWatch.ts: within seconds, whatever the timeouts say); a
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

/** What `watch` gives the partner loop of `run` instead of its own: its stop, its exit rule, its counters for the metrics. */
export interface IngestService {
  stop?: AbortSignal;
  exitStatusFor?: typeof runExitStatus;
  watch?: () => WatchMetrics;
  /** the run each failing partner recorded for its outage (see PartnerLoopPorts.outageRun) */
  outageRun?: (partner: string) => string | undefined;
  /** the files watch saw still being written, by partner (see IngestOptions.changingFiles) */
  changingFiles?: (partner: string) => ChangingFiles;
  /** the metrics text `watch --listen` serves, rendered with the metrics file's */
  served?: ServedMetrics;
}

/** The whole `run` command for one partner short of printing: also what `demo` runs. */
export async function ingestOnce(settings: Settings, flags: RunFlags): Promise<IngestResult> {
  const [outcome] = await ingestPartners([settings], flags);
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- re-raises what a partner's run threw, as it was thrown
  if (outcome!.error !== undefined) throw outcome!.error;
  return outcome!.result!;
}

/**
 * The partner loop of pipeline/partnerLoop.ts, wired: each partner's resources, the reports it
 * asks (overdue deliveries, the oldest file waiting), the metrics file after the last partner,
 * and the stop on SIGTERM or SIGINT.
 */
export async function ingestPartners(
  partners: Settings[],
  flags: RunFlags,
  all: Settings[] = partners,
  service: IngestService = {},
): Promise<PartnerOutcome[]> {
  const stopping = service.stop ? { signal: service.stop, dispose: () => undefined } : stopOnSignal();
  try {
    return await runPartners(
      {
        withPartner: (settings, work) => withResources(settings, (commandResources) => work(partnerResources(commandResources, settings))),
        overdue: async (ledger, s, now) =>
          s.expect ? overdueDeliveries(ledger, { partner: s.partner, expect: s.expect, patternText: s.patternText }, now) : undefined,
        oldestWaiting,
        afterPartners: (ran, processExit) =>
          afterPartners(partners[0]!, all, ran, processExit, service.watch?.(), stopping.signal, service.served),
        now: nowMs,
        host: hostname(),
        pid: process.pid,
        mode: (s) => s.mode ?? flags.mode ?? (process.stdin.isTTY ? 'manual' : 'scheduled'),
        // a log file that cannot be written stops the run as a signal does, after the file in hand
        stop: AbortSignal.any([stopping.signal, logFileFailure()]),
        exitStatusFor: service.exitStatusFor ?? runExitStatus,
        ...(service.outageRun ? { outageRun: service.outageRun } : {}),
        ...(service.changingFiles ? { changingFiles: service.changingFiles } : {}),
      },
      partners,
    );
  } finally {
    stopping.dispose();
  }
}

/** A partner's resources as the loop asks them (and `doctor`, going through a run's preparation), with the terminal's progress lines. */
export function partnerResources(commandResources: CommandResources, settings: Settings): PartnerResources {
  let progressOf = '';
  return {
    logger: () => commandResources.logger(),
    ledger: (stop) => commandResources.ledger({ create: false, stop }),
    finance: (stop) => commandResources.finance('load', stop),
    intake: (stop) => commandResources.intake(stop),
    progress: {
      // a file's first figures are drawn at once, however soon after the last line: a short load shows too
      // only for a terminal: formatting the figures costs more than the batch they report (docs/BENCHMARKS.md)
      onProgress: commandResources.status.enabled
        ? (progress) => {
            commandResources.status.show(progressLine(progress), progress.file !== progressOf);
            progressOf = progress.file;
          }
        : undefined,
      onDownload: (file, bytes, size) => commandResources.status.show(downloadLine(file, bytes, size)),
      onWaiting: (waiting) => commandResources.status.show(waitingLine(waiting, settings.stableForSeconds), waiting.first),
    },
  };
}

/**
 * After the last partner: the ledger is opened once more to record on each run of this process
 * the status the process exits with (`report runs` shows it beside the loads' own), and for the
 * one metrics file of all partners, with what the ledger says of each.
 */
export async function afterPartners(
  shared: Settings,
  all: Settings[],
  ran: PartnerRunMetrics[],
  processExit: number,
  watch?: WatchMetrics,
  stop?: AbortSignal,
  served?: ServedMetrics,
): Promise<void> {
  const runIds = ran.flatMap((partnerRunMetrics) => (partnerRunMetrics.runId ? [partnerRunMetrics.runId] : []));
  if (!shared.metricsFile && !served && runIds.length === 0) return;
  const names = all.map((settings) => settings.partner);
  await withResources(shared, async (commandResources) => {
    const logger = commandResources.logger();
    let ledger: Ledger | undefined;
    try {
      // after a stop request (SIGTERM) a ledger that answers nothing is given seconds, not --ledger-timeout
      ledger = await commandResources.ledger({ create: false, stop });
    } catch {
      // not even a ledger: the metrics still say how the run ended, and keep the last success they had
    }
    if (ledger && runIds.length > 0) {
      await ledger.recordProcessExit(runIds, processExit).catch((err: unknown) => {
        logger.error({ event: 'exit-status-not-recorded', runs: runIds, reason: errorMessage(err) }, 'could not record the exit status');
      });
    }
    if (!shared.metricsFile && !served) return;
    const deliveries = async (partner: string): Promise<DeliveryMetrics> => {
      const s = all.find((p) => p.partner === partner);
      const view = ledger!.forPartner(partner);
      // judged by the ledger's clock, as the times it holds were written
      const now = await view.ledgerNow();
      const overdue = s?.expect ? await overdueDeliveries(view, { partner, expect: s.expect, patternText: s.patternText }, now) : [];
      return {
        lastDeliveryAt: await lastDeliveryAt(view, partner),
        lastAccountedAt: await lastAccountedAt(view, { partner, expect: s?.expect }, now),
        overdue: {
          warning: overdue.filter((overdueDelivery) => overdueDelivery.level === 'warning').length,
          critical: overdue.filter((d) => d.level === 'critical').length,
        },
      };
    };
    await writeRunMetrics(
      { file: shared.metricsFile, served },
      {
        partners: names,
        ran,
        claimLeaseSeconds: shared.claimLeaseSeconds,
        ...(ledger ? { ledger, deliveries } : {}),
        ...(watch ? { watch } : {}),
      },
      logger,
    );
  }).catch(() => undefined);
}
