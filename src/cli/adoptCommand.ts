import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { globToRegExp } from '../intake/names.js';
import { loadDecodeOptions } from '../delivery/decodeSettings.js';
import { ADOPT_OUTCOMES, runAdopt, type AdoptOutcome, type AdoptResult } from '../pipeline/adopt.js';
import { printable } from '../report/printable.js';
import { adoptExitStatus } from './exitStatus.js';
import { withResources } from './resources.js';
import { operatorName } from './operator.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

interface AdoptFlags extends RawFlags {
  json?: boolean;
  dryRun?: boolean;
  assumeLoaded?: boolean;
  reason?: string;
}

/** `--assume-loaded --reason`: refused before anything is opened when one comes without the other. */
function operatorsWord(flags: AdoptFlags): { reason: string; operator: string } | undefined {
  if (!flags.assumeLoaded) {
    if (flags.reason !== undefined) throw new UsageError('--reason goes with --assume-loaded');
    return undefined;
  }
  const reason = flags.reason?.trim();
  if (!reason) throw new UsageError('--assume-loaded needs --reason TEXT: the ledger keeps why files were recorded without evidence');
  return { reason, operator: operatorName() };
}

const snake = (outcome: AdoptOutcome) => outcome.replaceAll('-', '_');

function counts(r: AdoptResult): Record<string, number> {
  return Object.fromEntries(ADOPT_OUTCOMES.map((k) => [snake(k), r.files.filter((f) => f.outcome === k).length]));
}

/** One line per file that was not already known, then the counts, always the same fields. */
export function adoptText(adoptResult: AdoptResult): string {
  const lines = adoptResult.files
    .filter((f) => f.outcome !== 'known')
    .map((f) => {
      const what = f.outcome === 'adopted' ? 'adopted ' : f.outcome === 'would-adopt' ? 'would adopt ' : '';
      return `  ${printable(`${what}${f.name}: ${f.message}`)}`;
    });
  const c = Object.entries(counts(adoptResult))
    .map(([k, n]) => `${k}=${n}`)
    .join(' ');
  lines.push(`adopt ${adoptResult.runId} ${adoptResult.dryRun ? 'dry run (nothing recorded)' : 'done'}: ${c}`);
  return lines.join('\n');
}

export function adoptJson(adoptResult: AdoptResult): string {
  return jsonDocument({
    run: adoptResult.runId,
    dry_run: adoptResult.dryRun,
    ...counts(adoptResult),
    exit_status: adoptResult.exitStatus,
    files: adoptResult.files.map((f) => ({
      name: f.name,
      sha256: f.sha256,
      content_sha256: f.contentSha256,
      outcome: f.outcome,
      ...(f.evidence ? { evidence: f.evidence } : {}),
      rows: f.rows,
      ...(f.presentRows !== undefined ? { present_rows: f.presentRows } : {}),
      ...(f.sameAs !== undefined ? { same_as: f.sameAs } : {}),
      message: f.message,
    })),
  });
}

export function registerAdopt(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('adopt'), 'adopt')
    .description(
      'record an existing archive in the ledger where the finance database shows its content loaded; report the rest and files with the same content (exit 1)',
    )
    .action(async (flags: AdoptFlags) => {
      const assumeLoaded = operatorsWord(flags);
      const settings = resolveSettings(flags);
      // the keys are read and unlocked before the ledger is touched: a bad key is configuration (exit 2)
      const decode = await loadDecodeOptions(settings.decode, globToRegExp(settings.pattern));
      const adoptResult = await withResources(settings, async (res) => {
        const logger = res.logger();
        const ledger = await res.ledger();
        const finance = await res.finance('read');
        const archive = await res.archive();
        if (!archive) throw new UsageError(`archive ${settings.archive} does not exist`);
        return runAdopt({
          ledger,
          finance,
          archive,
          pattern: globToRegExp(settings.pattern),
          dryRun: flags.dryRun === true,
          ...(assumeLoaded ? { assumeLoaded } : {}),
          stagingRoot: settings.staging,
          decode,
          logger,
          exitStatusFor: adoptExitStatus,
        });
      });
      process.stdout.write(`${flags.json ? adoptJson(adoptResult) : adoptText(adoptResult)}\n`);
      setExit(adoptResult.exitStatus);
    });
}
