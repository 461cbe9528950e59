import type { Command } from 'commander';
import { DRY_RUN_PREFIX } from '../ledger/runIds.js';
import { resolvePartners, type RawFlags, type Settings } from '../config/settings.js';
import { commandFlagDefault } from '../config/optionTable.js';
import { resolve } from 'node:path';
import { writeFileAtomically } from '../atomicFile.js';
import { EXIT_PROBLEM, UsageError, errorMessage } from '../errors.js';
import { deliveriesHtml } from '../report/deliveriesHtml.js';
import { deliveriesReport, formatDeliveries } from '../report/deliveriesReport.js';
import type { Ledger } from '../ledger/ledger.js';
import { withResources } from './resources.js';
import { eventJson, fileHistory, formatHistory } from '../report/history.js';
import { decisionJson, formatRunReports, runReports, type RunReport } from '../report/runReport.js';
import { formatRuns, runJson } from '../report/runsReport.js';
import { formatSkips, skipsByWeek } from '../report/skipsReport.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
import { registerEvidence } from './evidenceCommand.js';

interface ReportFlags extends RawFlags {
  json?: boolean;
  last?: string;
  weeks?: string;
  html?: string;
}

/** Bounded so that a typo of many digits is a usage error, not a date out of range deep in a query. */
function count(value: string | undefined, flag: string, max: number): number {
  if (value === undefined || !/^\d{1,9}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new UsageError(`${flag} must be a whole number from 1 to ${max}, got ${value}`);
  }
  return Number(value);
}

/**
 * What a report reads: the ledger of the shared settings, opened to read only, and the partners
 * it is about (undefined: all, as the ledger has them). A name --partner gives need not be in
 * the config: a ledger keeps the runs of partners since removed from it.
 */
function withLedger<T>(
  flags: RawFlags,
  fn: (ledger: Ledger, partners: string[] | undefined, settings: Settings[]) => Promise<T>,
): Promise<T> {
  const { partners, asked } = resolvePartners(flags, process.env, { unconfigured: 'allow' });
  const s: Settings = partners[0]!;
  return withResources(s, async (r) => fn(await r.ledger({ create: false, readOnly: true }), asked, partners));
}

/** Whole or not at all: a browser or a mailer never reads half a page (nor one written through a link). */
async function writeWhole(path: string, text: string): Promise<void> {
  try {
    await writeFileAtomically(path, text, { mode: 0o644, what: '--html' });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--html ${path} cannot be written: ${errorMessage(err)}`, { cause: err });
  }
}

const print = (text: string) => process.stdout.write(`${text}\n`);

export function registerReports(program: Command, setExit: (status: number) => void): void {
  const report = program
    .command('report')
    .description('what the ledger says: recent runs, one run file by file, weekly skips, the deliveries partners owe, an evidence pack');

  withSettingOptions(report.command('runs'), 'report')
    .description('the recent runs, newest first: how each ended and why, host, duration, counts, exit status')
    .action(async (flags: ReportFlags) => {
      const last = count(flags.last ?? commandFlagDefault('last', 'report runs'), '--last', 100_000);
      const runs = await withLedger(flags, (l, partners) => l.recentRuns(last, partners));
      print(flags.json ? jsonDocument({ runs: runs.map(runJson) }) : formatRuns(runs));
    });

  withSettingOptions(report.command('run'), 'report')
    .argument('[run-id]', "a run, or a command's id: each partner's run of it (default: the latest command)")
    .description(
      "every file decision of one run (of a run of several partners, each partner's), with its outcome, rows and reason or the original it duplicated",
    )
    .action(async (runId: string | undefined, flags: ReportFlags) => {
      const reports = await withLedger(flags, (l, partners) => runReports(l, runId, partners));
      // an unknown run id is "nothing matches" (exit 1); an empty ledger has simply no runs yet
      if (reports.length === 0 && runId !== undefined) setExit(EXIT_PROBLEM);
      if (flags.json) {
        // `run` and `decisions`: the latest run asked for, as ever; `runs`: every run of the command, each with its decisions
        const last = reports.at(-1);
        const each = (r: RunReport) => ({ run: runJson(r.run), decisions: r.decisions.map(decisionJson) });
        print(jsonDocument({ ...(last ? each(last) : { run: null, decisions: [] }), runs: reports.map(each) }));
      } else print(reports.length > 0 ? formatRunReports(reports) : runId === undefined ? 'no runs recorded yet' : noSuchRun(runId));
    });

  withSettingOptions(report.command('skips'), 'report')
    .description('the weekly review: skips and holds per ISO week; rejected, failed, not-ready and ignored files')
    .action(async (flags: ReportFlags) => {
      const weeks = count(flags.weeks ?? commandFlagDefault('weeks', 'report skips'), '--weeks', 1000);
      const result = await withLedger(flags, async (l, partners) => skipsByWeek(l, weeks, partners, new Date(await l.ledgerNow())));
      print(flags.json ? jsonDocument({ ...result }) : formatSkips(result));
    });

  withSettingOptions(report.command('deliveries'), 'report')
    .description("per partner and due day: on time, late (by how much), missing, rejected, with each day's skips and holds")
    .action(async (flags: ReportFlags) => {
      const weeks = count(flags.weeks ?? commandFlagDefault('weeks', 'report deliveries'), '--weeks', 520);
      // the ledger's clock: its times (a shared ledger's server's) are judged by the clock that wrote them;
      // the page goes to people (an auditor, a partner manager) who need not learn where the ledger is
      const result = await withLedger(flags, async (l, _asked, partners) => deliveriesReport(l, partners, weeks, await l.ledgerNow()));
      if (flags.html) await writeWhole(flags.html, deliveriesHtml(result));
      if (flags.json) print(jsonDocument({ ...result, ...(flags.html ? { html: resolve(flags.html) } : {}) }));
      else print(`${formatDeliveries(result)}${flags.html ? `\n\nwritten as a page to ${resolve(flags.html)}` : ''}`);
    });

  registerEvidence(report, setExit);

  withSettingOptions(program.command('history'), 'history')
    .argument('<file-or-sha256>', 'a file name (or path), a content SHA-256, or its first 8 or more hex digits')
    .description('every ledger event for one file or content, oldest first; exit 1 when nothing matches')
    .action(async (asked: string, flags: ReportFlags) => {
      const { events, askedIsRun } = await withLedger(flags, async (l, partners) => {
        const found = (await fileHistory(l, asked)).filter((ledgerEvent) => !partners || partners.includes(ledgerEvent.partner));
        return { events: found, askedIsRun: found.length === 0 && (await l.run(asked)) !== undefined };
      });
      if (events.length === 0) setExit(EXIT_PROBLEM);
      print(flags.json ? jsonDocument({ query: asked, events: events.map(eventJson) }) : formatHistory(events, asked, askedIsRun));
    });
}

/** Why `report run ID` finds nothing: a dry run's id is never recorded; any other is unknown to this ledger. */
function noSuchRun(runId: string): string {
  if (runId.startsWith(DRY_RUN_PREFIX)) {
    return `${runId} is a dry run's id: a dry run (--dry-run) records nothing in the ledger; what it found was in its own output`;
  }
  return `no run ${runId} in the ledger`;
}
