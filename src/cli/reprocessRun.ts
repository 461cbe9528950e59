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

export async function reprocessOnce(s: Settings, flags: ReprocessFlags, names: string[]): Promise<ReprocessResult> {
  const decode = await loadDecodeOptions(s.decode, globToRegExp(s.pattern));
  return withResources(s, async (r) => {
    const logger = r.logger();
    const ledger = await r.ledger();
    const finance = await r.finance('reprocess');
    const archive = await r.archive();
    if (!archive) throw new UsageError('there is no archive folder yet: nothing was ever loaded to reprocess');
    return runReprocess({
      ledger,
      finance,
      archive,
      names,
      reason: flags.reason!.trim(),
      operator: operatorName(),
      dryRun: flags.dryRun === true,
      stagingRoot: s.staging,
      logger,
      exitStatusFor: reprocessExitStatus,
      decode,
    });
  });
}

export function reprocessLine(r: ReprocessResult): string {
  const c = r.counts;
  const what = r.dryRun ? 'reprocess dry run (nothing committed)' : 'reprocess done';
  return `run ${r.runId} ${what}: reprocessed=${c.reprocessed} rejected=${c.rejected} failed=${c.failed} rows=${c.rows}`;
}

export function reprocessJson(r: ReprocessResult): string {
  return jsonDocument({
    run: r.runId,
    mode: 'reprocess',
    dry_run: r.dryRun,
    ...r.counts,
    exit_status: r.exitStatus,
    files: r.files.map((f) => ({
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
