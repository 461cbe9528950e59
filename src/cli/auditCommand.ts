import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { FileGoneError, type FolderReader } from '../intake/intake.js';
import { audit } from '../report/audit.js';
import { printable } from '../report/printable.js';
import { withResources } from './resources.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';

/** No archive folder yet: nothing archived, so nothing to read. */
const EMPTY_ARCHIVE: FolderReader = {
  description: '(no archive yet)',
  list: async () => [],
  stat: async () => null,
  pin: async (name) => Promise.reject(new FileGoneError(name)),
  close: async () => undefined,
};

export function registerAudit(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('audit'), 'audit')
    .description('cross-check ledger, finance database and archive; exit 1 on any discrepancy')
    .option('--json', 'one JSON object')
    .action(async (flags: RawFlags & { json?: boolean }) => {
      const s = resolveSettings(flags);
      const result = await withResources(s, async (r) => {
        r.logger();
        const ledger = await r.ledger();
        const finance = await r.finance('read');
        return audit(ledger, finance, (await r.archive()) ?? EMPTY_ARCHIVE);
      });
      if (flags.json) process.stdout.write(`${jsonDocument({ ...result })}\n`);
      else {
        for (const c of result.checks) {
          const n = c.discrepancies.length;
          process.stdout.write(`audit: ${c.name}: ${n === 0 ? 'ok' : `${n} discrepanc${n === 1 ? 'y' : 'ies'}`}\n`);
          for (const d of c.discrepancies) process.stdout.write(`  ${printable(d.message)}\n`);
        }
        const n = result.discrepancies;
        process.stdout.write(
          `audit ${n === 0 ? 'clean' : 'found problems'}: ${result.checks.length} checks, ${n} discrepanc${n === 1 ? 'y' : 'ies'}\n`,
        );
      }
      setExit(result.discrepancies > 0 ? 1 : 0);
    });
}
