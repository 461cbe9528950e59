import type { Command } from 'commander';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { UsageError, errorMessage } from '../errors.js';
import { auditText } from '../report/auditText.js';
import { evidencePack, type EvidencePeriod } from '../report/evidencePack.js';
import { auditPartners } from './auditCommand.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
import { withResources } from './resources.js';

interface EvidenceFlags extends RawFlags {
  from?: string;
  to?: string;
  out?: string;
  json?: boolean;
}

function day(value: string | undefined, flag: string): string {
  if (value === undefined) throw new UsageError(`${flag} is required: a day such as 2026-12-01`);
  const valid = /^\d{4}-\d\d-\d\d$/.test(value) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value);
  if (!valid) throw new UsageError(`${flag} must be a day written YYYY-MM-DD, got ${value}`);
  return value;
}

/** The pack's folder: made when missing, refused when it holds anything (a pack never overwrites, nor mixes with, other files). */
async function emptyFolder(dir: string): Promise<string> {
  const path = resolve(dir);
  const entries = await readdir(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw new UsageError(`--out ${dir} cannot be read: ${errorMessage(err)}`, { cause: err });
  });
  if (entries.length > 0)
    throw new UsageError(`--out ${dir} is not empty (${entries.length} entries): an evidence pack goes into a new or empty folder`);
  await mkdir(path, { recursive: true }).catch((err) => {
    throw new UsageError(`--out ${dir} cannot be made: ${errorMessage(err)}`, { cause: err });
  });
  return path;
}

export function registerEvidence(report: Command, setExit: (status: number) => void): void {
  withSettingOptions(report.command('evidence'), 'evidence')
    .description(
      "an auditor's pack of a period: loads.csv, events.csv, SHA256SUMS of the archived files, the audit, README.txt; the same ledger gives the same bytes",
    )
    .option('--from <day>', 'the first day of the period (YYYY-MM-DD, UTC)')
    .option('--to <day>', 'the last day of the period, included')
    .option('--out <dir>', 'a new or empty folder for the pack')
    .option('--json', 'one JSON object')
    .action(async (flags: EvidenceFlags) => {
      const period: EvidencePeriod = { from: day(flags.from, '--from'), to: day(flags.to, '--to') };
      if (period.to < period.from) throw new UsageError(`--to ${period.to} is before --from ${period.from}`);
      if (!flags.out) throw new UsageError('--out is required: the folder to write the pack to');
      const out = await emptyFolder(flags.out);
      const audit = await auditPartners(flags);
      const { partners } = resolvePartners(flags);
      const asked = flags.partner !== undefined || process.env.SETTLE_PARTNER ? partners.map((p) => p.partner) : undefined;
      const pack = await withResources(partners[0]!, async (r) =>
        evidencePack(await r.ledger({ create: false, readOnly: true }), period, asked, {
          json: jsonDocument({ ...audit }),
          text: auditText(audit),
        }),
      );
      // each file whole or not at all: written beside its name, then renamed
      for (const [name, text] of pack.files) {
        const temp = join(out, `.${name}.tmp`);
        await writeFile(temp, text, { mode: 0o644 });
        await rename(temp, join(out, name));
      }
      const summary = {
        out,
        from: period.from,
        to: period.to,
        loads: pack.loads.length,
        events: pack.events,
        files: [...pack.files.keys()],
        manifestSha256: pack.manifestSha256,
        auditDiscrepancies: audit.discrepancies,
      };
      if (flags.json) process.stdout.write(`${jsonDocument(summary)}\n`);
      else {
        process.stdout.write(
          `evidence ${period.from} to ${period.to}: ${pack.loads.length} loads, ${pack.events} events, audit ${audit.discrepancies === 0 ? 'clean' : `found ${audit.discrepancies} discrepancies`}\n` +
            `written to ${out}: ${[...pack.files.keys()].join(', ')}\n` +
            `manifest SHA-256 ${pack.manifestSha256} (note it down: sha256sum ${join(out, 'MANIFEST')} must show it)\n`,
        );
      }
      setExit(audit.discrepancies > 0 ? 1 : 0);
    });
}
