import { mkdtemp, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { EXIT_OK, EXIT_PROBLEM, UsageError } from '../errors.js';
import { findBadRows } from '../layout/readSettlement.js';
import { totalsText, type CheckedTotal } from '../layout/totals.js';
import { printable } from '../report/printable.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
import { loadDecodeOptions } from '../delivery/decodeSettings.js';
import { globToRegExp } from '../intake/names.js';
import { removeContent, stagedContent } from '../delivery/stagedContent.js';

interface CheckFlags extends RawFlags {
  json?: boolean;
}

interface Checked {
  file: string;
  outcome: 'ok' | 'rejected';
  /** rows that would load (a good file) */
  rows: number | null;
  /** rows the layout's skipRows leaves out (a good file) */
  skipped_rows: number | null;
  /** the layout's control totals the file proved (a good file with totals) */
  totals?: CheckedTotal[];
  error: string | null;
}

/**
 * `check FILE…`: the layout's checks, the same a run makes before loading, without a database
 * or a ledger: every bad row of each file named with its line and field. Exit 1 if any is bad.
 */
export function registerCheck(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('check'), 'check')
    .argument('<files...>', 'settlement files to check')
    .description('checks files against the layout without loading them: every bad line and field; exit 1 if any file is bad')
    .option('--json', 'one JSON object')
    .action(async (files: string[], flags: CheckFlags) => {
      const s = resolveSettings(flags);
      for (const file of files) {
        const st = await stat(file).catch(() => null);
        if (!st?.isFile()) throw new UsageError(`${file} is not a file that can be read`);
      }
      const decode = await loadDecodeOptions(s.decode, globToRegExp(s.pattern));
      const checked: Checked[] = [];
      // a gzipped, zipped or encrypted file is decoded into a private folder first, as a run does
      const staging = await mkdtemp(join(s.staging, 'settle-check-'));
      try {
        for (const [i, file] of files.entries()) {
          // no hash: check decides nothing by identity
          const delivered = { path: file, sha256: '', size: (await stat(file)).size };
          const content = await stagedContent(delivered, decode, join(staging, String(i)));
          try {
            if (content.kind === 'failed') throw new UsageError(`${file}: ${content.reason}`);
            const { rows, skippedRows, totals, error } =
              content.kind === 'refused'
                ? { rows: 0, skippedRows: 0, error: content.error }
                : await findBadRows(content.path, s.layout, { fileName: basename(file) });
            checked.push({
              file,
              outcome: error ? 'rejected' : 'ok',
              rows: error ? null : rows,
              skipped_rows: error ? null : skippedRows,
              ...(totals ? { totals } : {}),
              error: error?.message ?? null,
            });
          } finally {
            await removeContent(content, file);
          }
        }
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
      const exitStatus = checked.some((c) => c.outcome === 'rejected') ? EXIT_PROBLEM : EXIT_OK;
      if (flags.json) {
        process.stdout.write(`${jsonDocument({ files: checked, exit_status: exitStatus })}\n`);
      } else {
        for (const c of checked) {
          const left = c.skipped_rows ? ` (and ${c.skipped_rows} left out by the layout's skipRows)` : '';
          const proved = c.totals?.length ? `; ${totalsText(c.totals)}` : '';
          const what = c.outcome === 'ok' ? `ok, ${c.rows} rows${left}${proved}` : `rejected: ${c.error}`;
          process.stdout.write(`${printable(c.file)}: ${printable(what)}\n`);
        }
      }
      setExit(exitStatus);
    });
}
