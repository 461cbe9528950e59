import type { Command } from 'commander';
import { resolveSettings, type RawFlags, type Settings } from '../config/settings.js';
import { UsageError } from '../errors.js';
import type { Ledger } from '../ledger/ledger.js';
import { ledgerFromSettings } from './ledgerFromSettings.js';
import { fileHistory, formatHistory } from '../report/history.js';
import { formatRuns } from '../report/runsReport.js';
import { printableJson } from '../report/printable.js';
import { formatSkips, skipsByWeek } from '../report/skipsReport.js';
import { withConfigOptions } from './options.js';

interface ReportFlags extends RawFlags {
  json?: boolean;
  last?: string;
  weeks?: string;
}

function count(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${flag} must be a whole number of at least 1, got ${value}`);
  return Number(value);
}

async function withLedger<T>(s: Settings, fn: (ledger: Ledger) => Promise<T>): Promise<T> {
  const ledger = await ledgerFromSettings(s);
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

const print = (text: string) => process.stdout.write(`${text}\n`);

export function registerReports(program: Command): void {
  const report = program.command('report').description('what the ledger says: recent runs, weekly skips');

  withConfigOptions(report.command('runs'))
    .description('the recent runs and their counts, newest first')
    .option('--last <n>', 'how many runs (default 20)')
    .option('--json', 'one JSON array')
    .action(async (flags: ReportFlags) => {
      const runs = await withLedger(resolveSettings(flags), (l) => l.recentRuns(count(flags.last, 20, '--last')));
      print(flags.json ? printableJson(runs) : formatRuns(runs));
    });

  withConfigOptions(report.command('skips'))
    .description('skips (duplicates) and holds per ISO week: the weekly review')
    .option('--weeks <n>', 'how many weeks back (default 8)')
    .option('--json', 'one JSON array')
    .action(async (flags: ReportFlags) => {
      const weeks = count(flags.weeks, 8, '--weeks');
      const result = await withLedger(resolveSettings(flags), (l) => skipsByWeek(l, weeks));
      print(flags.json ? printableJson(result) : formatSkips(result, weeks));
    });

  withConfigOptions(program.command('history'))
    .argument('<file-or-sha256>', 'a file name (or path) or a content SHA-256')
    .description('every ledger event for one file or content, oldest first')
    .option('--json', 'one JSON array')
    .action(async (fileOrSha: string, flags: ReportFlags) => {
      const events = await withLedger(resolveSettings(flags), (l) => fileHistory(l, fileOrSha));
      print(flags.json ? printableJson(events) : formatHistory(events, fileOrSha));
    });
}
