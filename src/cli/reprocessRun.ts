import { readFileSync } from 'node:fs';
import type { Settings } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { globToRegExp, isUnsafeName } from '../intake/names.js';
import { loadDecodeOptions } from '../delivery/decodeSettings.js';
import { runReprocess, type ReprocessResult } from '../pipeline/reprocess.js';
import { operatorName } from './operator.js';
import { reprocessExitStatus } from './exitStatus.js';
import { withResources } from './resources.js';
import { jsonDocument } from './jsonOutput.js';

export interface ReprocessFlags {
  reprocess?: boolean;
  reason?: string;
  files?: string[];
  fileList?: string;
  dryRun?: boolean;
}

/** The names to reprocess, from --files or --file-list (one per line, # comments); refused before anything runs. */
export function reprocessNames(flags: ReprocessFlags): string[] {
  const given = [flags.reason, flags.files, flags.fileList, flags.dryRun].some((x) => x !== undefined);
  if (!flags.reprocess) {
    if (flags.dryRun) {
      throw new UsageError(
        '--dry-run goes with --reprocess (a reload checked and counted, nothing committed); a run has no dry run: to check files without loading them, use `settle-ingest check FILE…`',
      );
    }
    if (given) throw new UsageError('--reason, --files and --file-list go with --reprocess');
    return [];
  }
  if (!flags.reason?.trim()) throw new UsageError('--reprocess needs --reason TEXT: the ledger keeps why rows were replaced');
  if ((flags.files === undefined) === (flags.fileList === undefined)) {
    throw new UsageError('--reprocess needs exactly one of --files NAME... or --file-list PATH');
  }
  let names = flags.files ?? [];
  if (flags.fileList !== undefined) {
    let text: string;
    try {
      text = readFileSync(flags.fileList, 'utf8');
    } catch (err) {
      throw new UsageError(`file list ${flags.fileList} cannot be read: ${(err as Error).message}`, { cause: err });
    }
    names = text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
  }
  if (names.length === 0) throw new UsageError('--reprocess was given no file names');
  const bad = names.find((n) => isUnsafeName(n));
  if (bad !== undefined) throw new UsageError(`${JSON.stringify(bad)} is not a file name (no folders: the files are found in the archive)`);
  return [...new Set(names)];
}

export async function reprocessOnce(settings: Settings, flags: ReprocessFlags, names: string[]): Promise<ReprocessResult> {
  const decode = await loadDecodeOptions(settings.decode, globToRegExp(settings.pattern));
  return withResources(settings, async (commandResources) => {
    const logger = commandResources.logger();
    const ledger = await commandResources.ledger();
    const finance = await commandResources.finance('reprocess');
    const archive = await commandResources.archive();
    if (!archive) throw new UsageError('there is no archive folder yet: nothing was ever loaded to reprocess');
    return runReprocess({
      ledger,
      finance,
      archive,
      names,
      reason: flags.reason!.trim(),
      operator: operatorName(),
      dryRun: flags.dryRun === true,
      stagingRoot: settings.staging,
      logger,
      exitStatusFor: reprocessExitStatus,
      decode,
    });
  });
}

export function reprocessLine(reprocessResult: ReprocessResult): string {
  const c = reprocessResult.counts;
  const what = reprocessResult.dryRun ? 'reprocess dry run (nothing committed)' : 'reprocess done';
  return `run ${reprocessResult.runId} ${what}: reprocessed=${c.reprocessed} rejected=${c.rejected} failed=${c.failed} rows=${c.rows}`;
}

export function reprocessJson(reprocessResult: ReprocessResult): string {
  return jsonDocument({
    run: reprocessResult.runId,
    mode: 'reprocess',
    dry_run: reprocessResult.dryRun,
    ...reprocessResult.counts,
    exit_status: reprocessResult.exitStatus,
    files: reprocessResult.files.map((f) => ({
      name: f.name,
      sha256: f.sha256,
      outcome: f.outcome,
      rows: f.rows,
      ...(f.previousRows !== undefined ? { previous_rows: f.previousRows } : {}),
      ...(f.totals ? { totals: f.totals } : {}),
      ...(f.error ? { error: f.error } : {}),
    })),
  });
}
