import { statSync, watch as watchFolder, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { nowMs } from '../clock.js';
import { UsageError } from '../errors.js';
import { intakeFolders } from '../intake/openIntake.js';
import { resolvePartners, type Settings } from '../config/settings.js';
import { commandFlagDefault } from '../config/optionTable.js';
import { parseDuration } from '../durations.js';
import { ChangingFiles } from '../pipeline/completenessGate.js';
import { refusePartners } from '../pipeline/partnerLoop.js';
import {
  watchLoop,
  type FolderWatch,
  type Notice,
  type WakeReason,
  type WatchPartnerOutcome,
  type WatchStats,
} from '../pipeline/watchLoop.js';
import { errorMessage } from '../errors.js';
import { runExitStatus } from './exitStatus.js';
import { createLogger, reopenLogFiles, retireLogFilesBut } from './logger.js';
import { withSettingOptions } from './options.js';
import { withResources } from './resources.js';
import { afterPartners, ingestPartners, type RunFlags } from './runCommand.js';
import { appendSummary } from './summaryFile.js';
import { leasedText, partnersText, runText } from './summaryOutput.js';
import { TerminalStatus } from './terminal.js';
import { watchEndpoints } from './watchEndpoints.js';
import type { LogAt } from '../logEvents.js';

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
      const pollMs = durationFlag(flags.poll ?? commandFlagDefault('poll', 'watch'), '--poll') * 1000;
      const rescanMs = durationFlag(flags.rescan ?? commandFlagDefault('rescan', 'watch'), '--rescan') * 1000;
      // a bad config, a refused setting at start: exit 2, as `run` has it, before the loop begins
      let config = await readConfig(flags);
      // /metrics, /healthz, /readyz (--listen): a port that cannot be bound is exit 2 too
      const endpoints = await watchEndpoints(flags.listen, () => config.partners[0]!);
      /** what watch decides about itself: the log, and a line on stdout for the journal */
      const notice: Notice = (level, fields, message) => {
        (config.logger[level] as LogAt<typeof level>)(fields, message);
        process.stdout.write(`watch: ${message}\n`);
      };
      const signals = serviceSignals(() => {
        // logrotate's postrotate (systemctl reload): every log file opened again at once, the new before the old is closed
        const failures = reopenLogFiles();
        if (failures.length === 0) notice('info', { event: 'log-files-reopened' }, 'log files reopened (SIGHUP)');
        for (const failure of failures) {
          notice(
            'error',
            { event: 'log-file-not-reopened', path: failure.path, reason: failure.reason },
            `log file ${failure.path} not reopened, still writing the one open before: ${failure.reason}`,
          );
        }
      });
      const intakes = new IntakeWatchers(signals.wake, notice);
      let latest: WatchStats | undefined;
      const changing = new Map<string, ChangingFiles>();
      const changingFiles = (partner: string) => {
        let files = changing.get(partner);
        if (!files) changing.set(partner, (files = new ChangingFiles()));
        return files;
      };
      const mode = flags.mode ?? 'scheduled';
      try {
        await watchLoop({
          partners: config.partners,
          reload: async () => {
            config = await readConfig(flags);
            // a log file the new config no longer names is closed; the ones it names are open already
            retireLogFilesBut(new Set(config.partners.flatMap((settings) => (settings.logFile ? [settings.logFile] : []))));
            return config.partners;
          },
          folders: intakes,
          list: (settings, stop) =>
            withResources(settings, async (resources) => {
              const intake = await resources.intake(stop);
              const entries = await intake.list();
              return { entries, mtimeIsLocalClock: intake.mtimeIsLocalClock, local: intakeFolders(settings).server === null };
            }),
          work: async (partners, outageRuns) => {
            const outcomes = await ingestPartners(partners, { ...flags, mode }, config.all, {
              stop: signals.stop,
              // a stop is how a service ends: the run it cut short has done nothing wrong
              exitStatusFor: (found) => {
                if (!found.stopAsked) return runExitStatus(found);
                const { abortedBy: _stopped, ...rest } = found;
                return runExitStatus(rest);
              },
              outageRun: (partner) => outageRuns.get(partner),
              changingFiles,
              ...(latest ? { watch: () => latest! } : {}),
              ...(endpoints.served ? { served: endpoints.served } : {}),
            });
            const worked = outcomes.filter((outcome) => outcome.result !== undefined);
            // a partner skipped for another's lease is said only when it is starved (no success within --max-age)
            const starved = outcomes.find((outcome) => outcome.starved !== undefined && outcome.leasedBy !== undefined);
            if (worked.length > 0 || starved) {
              const line = config.named
                ? partnersText(outcomes)
                : worked[0]
                  ? runText(worked[0].result!, worked[0].overdue)
                  : leasedText({ ...starved!, leasedBy: starved!.leasedBy! });
              process.stdout.write(`${line}\n`);
              appendSummary(config.partners[0]?.summaryFile, line);
            }
            return outcomes.map((outcome): WatchPartnerOutcome => {
              const leasedUntil = outcome.leasedBy ? Date.parse(outcome.leasedBy.leaseUntil) : Number.NaN;
              return {
                partner: outcome.partner,
                ok: outcome.result !== undefined || outcome.leasedBy !== undefined || outcome.notBegun === true,
                ...(outcome.error !== undefined ? { error: outcome.error } : {}),
                ...(outcome.leasedBy ? { leasedUntil: Number.isNaN(leasedUntil) ? nowMs() : leasedUntil } : {}),
                ...(outcome.notStarted && outcome.runId ? { outageRun: outcome.runId } : {}),
              };
            });
          },
          metrics: async (stats) => {
            latest = { ...stats };
            await afterPartners(config.partners[0]!, config.all, [], 0, latest, undefined, endpoints.served);
          },
          wait: endpoints.waiting(signals.wait),
          now: nowMs,
          notice,
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

function durationFlag(value: string | undefined, flag: string): number {
  const seconds = parseDuration(value);
  if (seconds === null || seconds <= 0) {
    throw new UsageError(`${flag}: expected a duration above zero such as 30s, 5m or 1h, got ${JSON.stringify(value)}`);
  }
  return seconds;
}

/**
 * The service's signals: the first SIGTERM or SIGINT asks the loop to finish the file in hand
 * and end (a second ends the process at once, as for `run`); SIGHUP reopens the log files at
 * once (every write is synchronous, so none is in flight) and asks for the config to be reread
 * at the next cycle. Each wakes a loop waiting between cycles.
 */
function serviceSignals(reopenLogs: () => void) {
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
    reopenLogs();
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

/** A local intake folder as watched: what it was when armed, and whether the kernel watches it. */
interface WatchedFolder {
  partner: string;
  path: string;
  /** device:inode of the folder the path named when armed (through links); null: it was not there */
  identity: string | null;
  watchers: FSWatcher[];
  /** why the kernel would not watch it (inotify instances or watches spent): the loop polls it */
  refused: string | undefined;
  /** a watcher reported an error: armed again at the next cycle */
  broken: boolean;
  /** the loop's pace while the folder is polled */
  stableForSeconds: number;
}

const identityOf = (path: string): string | null => {
  try {
    const folder = statSync(path);
    return `${folder.dev}:${folder.ino}`;
  } catch {
    return null;
  }
};

/** Why fs.watch failed, where it is the kernel refusing (not a folder that is missing). */
function kernelRefusal(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
  if (code === 'EMFILE') return 'EMFILE: the inotify instances of this user are spent (fs.inotify.max_user_instances)';
  if (code === 'ENOSPC') return 'ENOSPC: the inotify watches of this user are spent (fs.inotify.max_user_watches)';
  return errorMessage(err);
}

/**
 * fs.watch on each local intake folder and on the folder above it: an event only wakes the loop,
 * whose listing stays the truth. The watch on the folder above hears the intake renamed away,
 * removed, made again or its link swapped; at each cycle (`rearm`) a folder whose identity
 * changed (device and inode, through links) is watched anew and listed at once. A folder the
 * kernel will not watch (inotify spent) is said once, polled by the loop at `--stable-for` pace
 * meanwhile (and shown by the metric settle_ingest_watch_folder_polled), and tried again each cycle.
 */
class IntakeWatchers implements FolderWatch<Settings> {
  private folders = new Map<string, WatchedFolder>();

  constructor(
    private readonly wake: (reason: WakeReason) => void,
    private readonly notice: Notice,
  ) {}

  watch(partners: Settings[]): void {
    this.close();
    for (const settings of partners) {
      const folders = intakeFolders(settings);
      if (folders.server !== null) continue;
      const folder: WatchedFolder = {
        partner: settings.partner,
        path: resolve(folders.intake),
        identity: null,
        watchers: [],
        refused: undefined,
        broken: false,
        stableForSeconds: settings.stableForSeconds,
      };
      this.folders.set(settings.partner, folder);
      this.arm(folder);
    }
  }

  rearm(): string[] {
    const replaced: string[] = [];
    for (const folder of this.folders.values()) {
      const identity = identityOf(folder.path);
      if (identity === folder.identity && !folder.broken && folder.refused === undefined) continue;
      const was = folder.identity;
      this.arm(folder);
      if (identity !== was && identity !== null) {
        replaced.push(folder.partner);
        this.notice(
          'info',
          { event: 'intake-folder-replaced', partner: folder.partner, path: folder.path },
          `${folder.partner}: the intake folder ${folder.path} is ${was === null ? 'there again' : 'a new folder'}: watching it, listing it now`,
        );
      }
    }
    return replaced;
  }

  hears(partner: string): boolean {
    return this.folders.get(partner)?.refused === undefined;
  }

  /** Watches the folder and the one above it; says when the kernel starts or stops refusing. */
  private arm(folder: WatchedFolder): void {
    for (const watcher of folder.watchers) watcher.close();
    folder.watchers = [];
    folder.broken = false;
    folder.identity = identityOf(folder.path);
    const before = folder.refused;
    folder.refused = undefined;
    const name = basename(folder.path);
    const onError = (watcher: FSWatcher) => () => {
      // the folder removed, or the watch lost: armed again at the next cycle, which this wake brings
      watcher.close();
      folder.broken = true;
      this.wake('event');
    };
    const targets: { path: string; wakesOn: (file: string | null) => boolean }[] = [
      { path: dirname(folder.path), wakesOn: (file) => file === null || file === name },
      { path: folder.path, wakesOn: () => true },
    ];
    for (const target of targets) {
      try {
        const watcher = watchFolder(target.path, { persistent: false }, (_type, file) => {
          if (target.wakesOn(file)) this.wake('event');
        });
        watcher.on('error', onError(watcher));
        folder.watchers.push(watcher);
      } catch (err) {
        // a folder not there (yet) is heard from the one above it when it comes
        folder.refused ??= kernelRefusal(err);
      }
    }
    if (folder.refused !== undefined && before === undefined) {
      this.notice(
        'warn',
        { event: 'intake-not-watched', partner: folder.partner, path: folder.path, reason: folder.refused },
        `${folder.partner}: the kernel will not watch ${folder.path} (${folder.refused}): polling it instead, every ${Math.max(1, folder.stableForSeconds)}s (--stable-for)`,
      );
    } else if (folder.refused === undefined && before !== undefined) {
      this.notice(
        'info',
        { event: 'intake-watched', partner: folder.partner, path: folder.path },
        `${folder.partner}: ${folder.path} is watched again: its changes wake watch`,
      );
    }
  }

  close(): void {
    for (const folder of this.folders.values()) for (const watcher of folder.watchers) watcher.close();
    this.folders.clear();
  }
}
