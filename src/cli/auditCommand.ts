import type { Command } from 'commander';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { openArchive } from '../intake/openIntake.js';
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
      const { partners, named } = resolvePartners(flags);
      const asked = flags.partner !== undefined || process.env.SETTLE_PARTNER ? partners.map((p) => p.partner) : undefined;
      const result = await withResources(partners[0]!, async (r) => {
        const logger = r.logger();
        const ledger = await r.ledger();
        const finance = await r.finance('read');
        // each chosen partner's archive; one partner's is the one its settings name
        const archives: { partner: string; archive: FolderReader }[] = [];
        try {
          for (const p of partners) {
            const archive = named ? await openArchive(p, logger) : await r.archive();
            archives.push({ partner: p.partner, archive: archive ?? EMPTY_ARCHIVE });
          }
          return await audit(ledger, finance, archives, asked);
        } finally {
          if (named) for (const a of archives) await a.archive.close().catch(() => undefined);
        }
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
