import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { UsageError, errorMessage, exitStatusOf } from '../errors.js';
import type { Ledger } from '../ledger/ledger.js';
import { NO_COUNTS } from '../ledger/types.js';
import { newRunId } from '../pipeline/runId.js';
import { writeRunMetrics, type RunMetricsInput } from '../report/metricsFile.js';
import { resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { Intake } from '../intake/intake.js';
import { checkIntakeSetting } from '../intake/openIntake.js';
import { globToRegExp } from '../intake/names.js';
import type { RunMode } from '../ledger/types.js';
import { runIngest, type IngestResult } from '../pipeline/runIngest.js';
import { withSettingOptions } from './options.js';
import { loadDecodeOptions } from '../delivery/decodeSettings.js';
import { reprocessJson, reprocessLine, reprocessNames, reprocessOnce, type ReprocessFlags } from './reprocessRun.js';
import { runExitStatus } from './exitStatus.js';
import { withResources } from './resources.js';
import { summaryJson, summaryLine } from './summaryOutput.js';

export interface RunFlags extends RawFlags {
  json?: boolean;
  mode?: RunMode;
}

export function registerRun(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('run'), 'run')
    .description('one ingest run: every ready file in the intake loaded, skipped, held or rejected')
    .option('--json', 'print the summary as one JSON object with one entry per file')
    .option('--reprocess', 'reload already-loaded files from the archive with this release, replacing their rows')
    .option('--reason <text>', 'with --reprocess: why (kept in the ledger with the operator)')
    .option('--files <names...>', 'with --reprocess: the file names to reload')
    .option('--file-list <path>', 'with --reprocess: a file with one name per line')
    .option('--dry-run', 'with --reprocess: check and count, commit nothing')
    .action(async (flags: RunFlags & ReprocessFlags) => {
      const names = reprocessNames(flags);
      const settings = resolveSettings(flags);
      if (flags.reprocess) {
        const r = await reprocessOnce(settings, flags, names);
        process.stdout.write(`${flags.json ? reprocessJson(r) : reprocessLine(r)}\n`);
        setExit(r.exitStatus);
        return;
      }
      const result = await ingestOnce(settings, flags);
      process.stdout.write(`${flags.json ? summaryJson(result) : summaryLine(result)}\n`);
      setExit(result.exitStatus);
    });
}

/**
 * The first SIGTERM or SIGINT asks the run to finish the file in hand and stop (exit 1,
 * "stopped"), cancelling its statement if that is stuck waiting on the finance database; a
 * second one ends the process at once, which recovery also covers.
 */
function stopOnSignal(): { signal: AbortSignal; dispose: () => void } {
  const stop = new AbortController();
  const handlers = (['SIGTERM', 'SIGINT'] as const).map((signal) => {
    const first = () => {
      stop.abort(signal);
      process.once(signal, () => process.kill(process.pid, signal));
    };
    process.once(signal, first);
    return () => process.removeListener(signal, first);
  });
  return { signal: stop.signal, dispose: () => handlers.forEach((off) => off()) };
}

/** The whole `run` command short of printing: also what `demo` runs. */
export async function ingestOnce(s: Settings, flags: RunFlags): Promise<IngestResult> {
  checkIntakeSetting(s);
  // a pattern that cannot compile is refused before a run is recorded
  const pattern = globToRegExp(s.pattern);
  const ignore = s.ignore.map(globToRegExp);
  // keys are read and unlocked before a run is recorded: a wrong passphrase touches nothing (exit 2)
  const decode = await loadDecodeOptions(s.decode, pattern);
  return withResources(s, async (r) => {
    const logger = r.logger();
    const mode = s.mode ?? (process.stdin.isTTY ? 'manual' : 'scheduled');
    const startedAt = Date.now();
    const metrics = (m: RunMetricsInput) => (s.metricsFile ? writeRunMetrics(s.metricsFile, m, logger) : Promise.resolve());
    let ledger: Ledger;
    try {
      ledger = await r.ledger();
    } catch (err) {
      // not even a ledger to record the run in: the log file and the metrics still say so
      if (s.logFile) logger.error({ event: 'run-not-started', reason: errorMessage(err) }, `run could not start: ${errorMessage(err)}`);
      await metrics({ startedAt, exitStatus: exitStatusOf(err), counts: NO_COUNTS });
      throw err;
    }
    const stopping = stopOnSignal();
    let metricsWritten = false;
    try {
      const runId = await ledger.startRun({ mode, host: hostname(), pid: process.pid }, () => newRunId());
      let finance: FinanceDb;
      let intake: Intake;
      try {
        // cheapest and most likely refusals first: the database being down stops the run before any download
        finance = await r.finance('load', stopping.signal);
        intake = await r.intake();
        await assertStagingUsable(s.staging);
      } catch (err) {
        const reason = errorMessage(err);
        // on stderr the one-line error below says it already; a log file must say it too
        if (s.logFile) logger.error({ event: 'run-not-started', run: runId, reason }, `run ${runId} could not start: ${reason}`);
        await ledger.finishRun(runId, NO_COUNTS, exitStatusOf(err), { status: 'not_started', reason });
        metricsWritten = true;
        await metrics({ startedAt, exitStatus: exitStatusOf(err), counts: NO_COUNTS, ledger });
        throw err;
      }
      const result = await runIngest({
        runId,
        intake,
        ledger,
        finance,
        pattern,
        ignore,
        readyMarker: s.readyMarker,
        maxWaitingRuns: s.maxWaitingRuns,
        stableForSeconds: s.stableForSeconds,
        maxWaitSeconds: s.maxWaitSeconds,
        claimLeaseSeconds: s.claimLeaseSeconds,
        mode,
        stagingRoot: s.staging,
        logger,
        // only for a terminal: formatting the count costs more than the batch it reports (docs/BENCHMARKS.md)
        onProgress: r.status.enabled ? (file, rows) => r.status.show(`${file}: ${rows.toLocaleString('en-US')} rows`) : undefined,
        stop: stopping.signal,
        exitStatusFor: runExitStatus,
        decode,
      });
      metricsWritten = true;
      await metrics({ startedAt, exitStatus: result.exitStatus, counts: result.counts, ledger, intake });
      return result;
    } catch (err) {
      if (!metricsWritten) await metrics({ startedAt, exitStatus: exitStatusOf(err), counts: NO_COUNTS, ledger }).catch(() => undefined);
      throw err;
    } finally {
      stopping.dispose();
    }
  });
}

/** A staging folder that is missing or not a folder is configuration (exit 2), said before any run work. */
async function assertStagingUsable(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new UsageError(`staging folder ${dir} does not exist or is not a folder (--staging, SETTLE_STAGING)`);
}
