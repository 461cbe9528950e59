import { watch as watchFolder, type FSWatcher } from 'node:fs';
import type { Command } from 'commander';
import { nowMs } from '../clock.js';
import { UsageError } from '../errors.js';
import { intakeFolders } from '../intake/openIntake.js';
import { resolvePartners, type Settings } from '../config/settings.js';
import { parseDuration } from '../durations.js';
import { refusePartners } from '../pipeline/partnerLoop.js';
import { watchLoop, type WakeReason, type WatchPartnerOutcome, type WatchStats } from '../pipeline/watchLoop.js';
import { runExitStatus } from './exitStatus.js';
import { createLogger, reopenLogFiles } from './logger.js';
import { withSettingOptions } from './options.js';
import { withResources } from './resources.js';
import { afterPartners, ingestPartners, type RunFlags } from './runCommand.js';
import { appendSummary } from './summaryFile.js';
import { partnersText, summaryLine } from './summaryOutput.js';
import { TerminalStatus } from './terminal.js';
import { watchEndpoints } from './watchEndpoints.js';

interface WatchFlags extends RunFlags {
  poll?: string;
  rescan?: string;
  listen?: string;
}

/** After a failed cycle the next comes after 1 s, then 2, 4, … at most 5 min; a good cycle resets it. */
const BACKOFF_MS = 1000;
const BACKOFF_CAP_MS = 300_000;
/** How long the events of a watched folder are gathered into one wake of the loop. */
const EVENT_COALESCE_MS = 250;

export function registerWatch(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('watch'), 'watch')
    .description(
      'a service: the same runs as `run`, each time a file arrives (local intakes watched, SFTP intakes polled); exit 0 on SIGTERM',
    )
    .action(async (flags: WatchFlags) => {
      const pollMs = durationFlag(flags.poll, '--poll', 60) * 1000;
      const rescanMs = durationFlag(flags.rescan, '--rescan', 300) * 1000;
      // a bad config, a refused setting at start: exit 2, as `run` has it, before the loop begins
      let config = await readConfig(flags);
      // /metrics, /healthz, /readyz (--listen): a port that cannot be bound is exit 2 too
      const endpoints = await watchEndpoints(flags.listen, () => config.partners[0]!);
      const signals = serviceSignals();
      const intakes = new IntakeWatchers(signals.wake);
      let latest: WatchStats | undefined;
      const mode = flags.mode ?? 'scheduled';
      try {
        await watchLoop({
          partners: config.partners,
          reload: async () => {
            const next = await readConfig(flags);
            config = next;
            reopenLogFiles();
            return next.partners;
          },
          watchIntakes: (partners) => intakes.watch(partners),
          list: (settings, stop) =>
            withResources(settings, async (resources) => {
              const intake = await resources.intake(stop);
              const entries = await intake.list();
              return { entries, mtimeIsLocalClock: intake.mtimeIsLocalClock, local: intakeFolders(settings).server === null };
            }),
          work: async (partners) => {
            const outcomes = await ingestPartners(partners, { ...flags, mode }, config.all, {
              stop: signals.stop,
              // a stop is how a service ends: the run it cut short has done nothing wrong
              exitStatusFor: (found) => {
                if (!found.stopAsked) return runExitStatus(found);
                const { abortedBy: _stopped, ...rest } = found;
                return runExitStatus(rest);
              },
              ...(latest ? { watch: () => latest! } : {}),
              ...(endpoints.served ? { served: endpoints.served } : {}),
            });
            const worked = outcomes.filter((outcome) => outcome.result !== undefined);
            if (worked.length > 0) {
              const line = config.named ? partnersText(outcomes) : summaryLine(worked[0]!.result!, worked[0]!.overdue);
              process.stdout.write(`${line}\n`);
              appendSummary(config.partners[0]?.summaryFile, line);
            }
            return outcomes.map((outcome): WatchPartnerOutcome => ({
              partner: outcome.partner,
              ok: outcome.result !== undefined || outcome.leasedBy !== undefined || outcome.notBegun === true,
              ...(outcome.error !== undefined ? { error: outcome.error } : {}),
            }));
          },
          metrics: async (stats) => {
            latest = { ...stats };
            await afterPartners(config.partners[0]!, config.all, [], 0, latest, endpoints.served);
          },
          wait: endpoints.waiting(signals.wait),
          now: nowMs,
          get logger() {
            return config.logger;
          },
          stop: signals.stop,
          hangup: signals.hangup,
          pollMs,
          rescanMs,
          backoffMs: BACKOFF_MS,
          backoffCapMs: BACKOFF_CAP_MS,
        });
      } finally {
        intakes.close();
        signals.dispose();
        await endpoints.close();
      }
      setExit(0);
    });
}

/** The config as `run` reads it, every partner's settings checked as `run` checks them before its first partner. */
async function readConfig(flags: WatchFlags) {
  const { partners, all, named } = resolvePartners(flags);
  await refusePartners(partners);
  const shared = partners[0]!;
  const logger = createLogger({ level: shared.logLevel, file: shared.logFile, status: new TerminalStatus(), partner: shared.partner });
  return { partners, all, named, logger };
}

function durationFlag(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const seconds = parseDuration(value);
  if (seconds === null || seconds <= 0) {
    throw new UsageError(`${flag}: expected a duration above zero such as 30s, 5m or 1h, got ${JSON.stringify(value)}`);
  }
  return seconds;
}

/**
 * The service's signals: the first SIGTERM or SIGINT asks the loop to finish the file in hand
 * and end (a second ends the process at once, as for `run`); SIGHUP asks for the config to be
 * reread at the next cycle. Each wakes a loop waiting between cycles.
 */
function serviceSignals() {
  const stop = new AbortController();
  let hungUp = false;
  let pending: WakeReason | undefined;
  let wakeUp: ((reason: WakeReason) => void) | undefined;
  let coalescing: NodeJS.Timeout | undefined;
  const wake = (reason: WakeReason) => {
    if (reason === 'event') {
      // an upload writes many events: they are gathered for a moment into one wake, one listing
      coalescing ??= setTimeout(() => {
        coalescing = undefined;
        wakeNow('event');
      }, EVENT_COALESCE_MS);
      return;
    }
    wakeNow(reason);
  };
  const wakeNow = (reason: WakeReason) => {
    if (wakeUp) wakeUp(reason);
    else if (pending !== 'signal') pending = reason;
  };
  const handlers = (['SIGTERM', 'SIGINT'] as const).map((signal) => {
    const first = () => {
      stop.abort(signal);
      process.once(signal, () => process.kill(process.pid, signal));
      wake('signal');
    };
    process.once(signal, first);
    return () => process.removeListener(signal, first);
  });
  const onHangup = () => {
    hungUp = true;
    wake('signal');
  };
  process.on('SIGHUP', onHangup);
  return {
    stop: stop.signal,
    wake,
    hangup: () => {
      const was = hungUp;
      hungUp = false;
      return was;
    },
    wait: (ms: number) =>
      new Promise<WakeReason>((resolve) => {
        if (pending !== undefined || stop.signal.aborted || hungUp) {
          const reason = pending ?? 'signal';
          pending = undefined;
          resolve(reason);
          return;
        }
        const timer = setTimeout(() => done('timeout'), ms);
        const done = (reason: WakeReason) => {
          clearTimeout(timer);
          wakeUp = undefined;
          resolve(reason);
        };
        wakeUp = done;
      }),
    dispose: () => {
      clearTimeout(coalescing);
      handlers.forEach((off) => off());
      process.removeListener('SIGHUP', onHangup);
    },
  };
}

/** fs.watch on each local intake folder: an event only wakes the loop, whose listing stays the truth. */
class IntakeWatchers {
  private watchers: FSWatcher[] = [];

  constructor(private readonly wake: (reason: WakeReason) => void) {}

  watch(partners: Settings[]): void {
    this.close();
    for (const settings of partners) {
      const folders = intakeFolders(settings);
      if (folders.server !== null) continue;
      try {
        const watcher = watchFolder(folders.intake, { persistent: false }, () => this.wake('event'));
        // a folder removed or unwatchable: the rescan still lists it
        watcher.on('error', () => watcher.close());
        this.watchers.push(watcher);
      } catch {
        // no events (too many watches, a file system without them): the rescan alone finds its files
      }
    }
  }

  close(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
  }
}
