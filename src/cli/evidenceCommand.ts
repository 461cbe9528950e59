import type { Command } from 'commander';
import { lstat, mkdir, readdir, realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { assertFolderForWrites, writeFileAtomically } from '../atomicFile.js';
import { nowIso } from '../clock.js';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { UsageError, errorMessage } from '../errors.js';
import { accountedArrivalLine, auditText } from '../report/auditText.js';
import { AccountedList, pieceText } from '../report/arrivalAudit/accountedList.js';
import type { AuditResult } from '../report/audit.js';
import { intakeFolders } from '../intake/openIntake.js';
import { evidencePack, isDay, periodBounds, type EvidenceArchive, type EvidencePeriod } from '../report/evidencePack.js';
import { auditJsonPieces, auditPartners } from './auditCommand.js';
import { accountedArrivalJson, jsonDocument } from './jsonOutput.js';
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
  if (!isDay(value))
    throw new UsageError(`${flag} ${value} is not a day: write a real calendar day YYYY-MM-DD, from 0001-01-01 to 9999-12-31`);
  return value;
}

/** Links resolved as far as the path exists: a folder not made yet lies where its nearest existing parent really is. */
async function realLocation(path: string): Promise<string> {
  const rest: string[] = [];
  for (let at = resolve(path); ; at = dirname(at)) {
    const real = await realpath(at).catch(() => undefined);
    if (real !== undefined) return join(real, ...rest.reverse());
    if (dirname(at) === at) return resolve(path);
    rest.push(basename(at));
  }
}

const inside = (path: string, folder: string) => path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);

/**
 * The pack's folder must be its own: not a link (written through, it could land anywhere),
 * not inside any partner's intake (a run would take the pack for uploads), and new or empty (a
 * pack never overwrites, nor mixes with, other files). Made when missing.
 */
async function packFolder(dir: string, intakes: string[]): Promise<string> {
  const path = resolve(dir);
  const entry = await lstat(path).catch(() => undefined);
  if (entry?.isSymbolicLink()) throw new UsageError(`--out ${dir} is a symbolic link: name the folder itself, not a link to it`);
  const real = await realLocation(path);
  for (const intake of intakes) {
    // an SFTP intake is on another host: no local folder lies inside it
    if (intake.includes('://')) continue;
    if (inside(real, await realLocation(intake)))
      throw new UsageError(`--out ${dir} is inside the intake ${intake}: a run would take the pack for uploads; write it elsewhere`);
  }
  const entries = await readdir(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw new UsageError(`--out ${dir} cannot be read: ${errorMessage(err)}`, { cause: err });
  });
  if (entries.length > 0)
    throw new UsageError(`--out ${dir} is not empty (${entries.length} entries): an evidence pack goes into a new or empty folder`);
  // checked before anything is made: a folder under a shared one could be swapped for a link
  assertFolderForWrites(join(path, 'MANIFEST'), '--out');
  await mkdir(path, { recursive: true }).catch((err) => {
    throw new UsageError(`--out ${dir} cannot be made: ${errorMessage(err)}`, { cause: err });
  });
  return path;
}

/** Each chosen partner's archive folder as its settings put it (where a run moves loaded files): local, or on its intake's server. */
function archivesOf(partners: ReturnType<typeof resolvePartners>['partners']): EvidenceArchive[] {
  return partners.flatMap((p): EvidenceArchive[] => {
    if (!p.intake) return p.archive ? [{ partner: p.partner, folder: resolve(p.archive), server: null }] : [];
    const folders = intakeFolders(p);
    return [{ partner: p.partner, folder: folders.archive, server: folders.server }];
  });
}

export function registerEvidence(report: Command, setExit: (status: number) => void): void {
  withSettingOptions(report.command('evidence'), 'evidence')
    .description(
      "an auditor's pack of a period: loads.csv, events.csv, a SHA256SUMS.<partner> of each partner's archived files, the audit, README.txt; the same period gives the same bytes, however much happens after it",
    )
    .action(async (flags: EvidenceFlags) => {
      const period: EvidencePeriod = { from: day(flags.from, '--from'), to: day(flags.to, '--to') };
      if (period.to < period.from) throw new UsageError(`--to ${period.to} is before --from ${period.from}`);
      if (!flags.out) throw new UsageError('--out is required: the folder to write the pack to');
      const { partners, all, asked } = resolvePartners(flags);
      const out = await packFolder(flags.out, [
        ...new Set([...all, ...partners].flatMap((settings) => (settings.intake ? [settings.intake] : []))),
      ]);
      // the uploads of the period alone: the whole log is read (a rename after the period follows an upload in it)
      const accounted = new AccountedList({ text: accountedArrivalLine, json: accountedArrivalJson });
      let audit: AuditResult;
      let pack: Awaited<ReturnType<typeof evidencePack>>;
      try {
        audit = await auditPartners(flags, { transferLogPeriod: periodBounds(period), accounted });
        const takenAt = nowIso();
        const auditResult = audit;
        pack = await withResources(partners[0]!, async (commandResources) =>
          evidencePack(
            await commandResources.ledger({ create: false, readOnly: true }),
            period,
            asked,
            {
              json: [...auditJsonPieces(auditResult, { takenAt })].map(pieceText).join(''),
              text: `audit taken at ${takenAt}\n${auditText(auditResult)}`,
            },
            archivesOf(partners),
          ),
        );
      } finally {
        accounted.close();
      }
      for (const [name, text] of pack.files) await writeFileAtomically(join(out, name), text, { mode: 0o644, what: '--out' });
      const loads = pack.loads.filter((evidenceLoad) => evidenceLoad.action !== 'reprocessed').length;
      const reprocessings = pack.loads.length - loads;
      const summary = {
        out,
        from: period.from,
        to: period.to,
        loads,
        reprocessings,
        events: pack.events,
        files: [...pack.files.keys()],
        manifestSha256: pack.manifestSha256,
        auditDiscrepancies: audit.discrepancies,
      };
      if (flags.json) process.stdout.write(`${jsonDocument(summary)}\n`);
      else {
        process.stdout.write(
          `evidence ${period.from} to ${period.to}: ${loads} loads, ${reprocessings} reprocessings, ${pack.events} events, audit ${audit.discrepancies === 0 ? 'clean' : `found ${audit.discrepancies} discrepancies`}\n` +
            `written to ${out}: ${[...pack.files.keys()].join(', ')}\n` +
            `manifest SHA-256 ${pack.manifestSha256} (note it down: sha256sum ${join(out, 'MANIFEST')} must show it)\n`,
        );
      }
      setExit(audit.discrepancies > 0 ? 1 : 0);
    });
}
