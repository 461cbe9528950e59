import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { runAdopt } from '../pipeline/adopt.js';
import { withArchiveWork } from './archiveWork.js';
import { jsonDocument } from './jsonOutput.js';
import { withConfigOptions, withSftpOptions } from './options.js';

export function registerAdopt(program: Command, setExit: (status: number) => void): void {
  withSftpOptions(withConfigOptions(program.command('adopt')))
    .description('record an existing archive in the ledger; report files in it with the same bytes (exit 1)')
    .requiredOption('--archive <dir>', 'the archive to adopt (a path on the server when --intake is sftp://)')
    .option('--intake <url>', 'an sftp:// intake, to reach a remote archive')
    .option('--json', 'one JSON object')
    .action(async (flags: RawFlags & { json?: boolean }) => {
      const s = resolveSettings(flags);
      const r = await withArchiveWork(s, ({ ledger, db, archive, logger }) => {
        if (!archive) throw new UsageError(`archive ${s.archive} does not exist`);
        return runAdopt({ ledger, db, schema: s.schema, archive, logger });
      });
      if (flags.json) {
        const { runId, ...rest } = r;
        process.stdout.write(`${jsonDocument({ run: runId, ...rest })}\n`);
      } else {
        for (const d of r.duplicates) process.stdout.write(`  content duplicate: ${d.name} has the same bytes as ${d.sameAs}\n`);
        process.stdout.write(
          `adopt ${r.runId} done: adopted=${r.adopted.length} known=${r.known.length} content_duplicates=${r.duplicates.length}\n`,
        );
      }
      setExit(r.exitStatus);
    });
}
