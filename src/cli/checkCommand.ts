import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { EXIT_OK, EXIT_PROBLEM, UsageError } from '../errors.js';
import { findBadRows } from '../load/readSettlement.js';
import { printable } from '../report/printable.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

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
      const checked: Checked[] = [];
      for (const file of files) {
        const { rows, skippedRows, error } = await findBadRows(file, s.layout);
        checked.push({
          file,
          outcome: error ? 'rejected' : 'ok',
          rows: error ? null : rows,
          skipped_rows: error ? null : skippedRows,
          error: error?.message ?? null,
        });
      }
      const exitStatus = checked.some((c) => c.outcome === 'rejected') ? EXIT_PROBLEM : EXIT_OK;
      if (flags.json) {
        process.stdout.write(`${jsonDocument({ files: checked, exit_status: exitStatus })}\n`);
      } else {
        for (const c of checked) {
          const left = c.skipped_rows ? ` (and ${c.skipped_rows} left out by the layout's skipRows)` : '';
          const what = c.outcome === 'ok' ? `ok, ${c.rows} rows${left}` : `rejected: ${c.error}`;
          process.stdout.write(`${printable(c.file)}: ${printable(what)}\n`);
        }
      }
      setExit(exitStatus);
    });
}
