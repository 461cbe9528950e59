import type { Command } from 'commander';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { errorMessage } from '../errors.js';
import { openArchive, openFinalFolder, openIntakeReader } from '../intake/openIntake.js';
import { FileGoneError, type FolderReader } from '../intake/intake.js';
import { audit, type AuditResult, type FinalFolder } from '../report/audit.js';
import { accountedArrivalLine, auditLines } from '../report/auditText.js';
import { AccountedList, type AnswerPiece } from '../report/arrivalAudit/accountedList.js';
import type { IntakeNow } from '../report/arrivalAudit/accountArrivals.js';
import { transferAudit, type TransferLogPeriod } from '../report/arrivalAudit/transferAudit.js';
import { withResources } from './resources.js';
import { accountedArrivalJson, jsonDocument, jsonDocumentPieces } from './jsonOutput.js';
import { writeStreamed } from './streamedOutput.js';
import { withSettingOptions } from './options.js';

/** No such final folder yet (nothing was moved there), or none named: nothing to read. */
const emptyFolder = (destination: string): FolderReader => ({
  description: `(no ${destination} folder yet)`,
  list: async () => [],
  stat: async () => null,
  pin: async (name) => Promise.reject(new FileGoneError(name)),
  close: async () => undefined,
});

/**
 * The audit of the chosen partners: ledger, finance database, each partner's archive,
 * duplicates/ and rejected/ (each read where the settings put it, as a run moves there) and, where
 * the settings name one, the transfer log (with each partner's intake as it is now, listed only
 * when an upload was left waiting there). `report evidence` holds the same answer, always with
 * every archived copy read, and of the uploads of its period alone (`transferLogPeriod`);
 * `sizeOnly` (`audit --quick`) lets the settings check them by size. The transfer log's accounted
 * uploads are written to `accounted` as they are decided, in the forms the caller will print
 * (its temporary files are the caller's to close).
 */
export function auditPartners(
  flags: RawFlags,
  opts: { sizeOnlyAllowed?: boolean; transferLogPeriod?: TransferLogPeriod; accounted?: AccountedList } = {},
): Promise<AuditResult> {
  const { partners, named, asked } = resolvePartners(flags);
  const archiveCheck = opts.sizeOnlyAllowed && partners[0]!.quick ? 'size' : 'sha256';
  return withResources(partners[0]!, async (commandResources) => {
    const logger = commandResources.logger();
    const ledger = await commandResources.ledger();
    const finance = await commandResources.finance('read');
    // each chosen partner's final folders; one partner's archive is the one its settings name
    const folders: FinalFolder[] = [];
    // the folders opened here, not by the resources: closed here
    const opened: FolderReader[] = [];
    const intakes: FolderReader[] = [];
    const intakeNow = async (partner: string): Promise<IntakeNow> => {
      const settings = partners.find((p) => p.partner === partner)!;
      try {
        const intake = await openIntakeReader(settings, logger);
        if (!intake) return { entries: new Map() };
        intakes.push(intake);
        return { entries: new Map((await intake.list()).map((intakeEntry) => [intakeEntry.name, intakeEntry])) };
      } catch (err) {
        return { problem: `the intake ${settings.intake} cannot be listed: ${errorMessage(err)}` };
      }
    };
    try {
      for (const partnerSettings of partners) {
        const archive = named ? await openArchive(partnerSettings, logger) : await commandResources.archive();
        if (named && archive) opened.push(archive);
        folders.push({ partner: partnerSettings.partner, destination: 'archive', folder: archive ?? emptyFolder('archive') });
        for (const destination of ['duplicates', 'rejected'] as const) {
          const folder = await openFinalFolder(partnerSettings, destination, logger);
          if (folder) opened.push(folder);
          folders.push({ partner: partnerSettings.partner, destination, folder: folder ?? emptyFolder(destination) });
        }
      }
      const transferLog = await transferAudit(ledger, partners, intakeNow, { period: opts.transferLogPeriod, accounted: opts.accounted });
      return await audit(ledger, finance, folders, asked, transferLog, archiveCheck, partners[0]!.claimLeaseSeconds);
    } finally {
      for (const folder of opened) await folder.close().catch(() => undefined);
      for (const intake of intakes) await intake.close().catch(() => undefined);
    }
  });
}

/**
 * An audit's JSON document, in pieces: as one `jsonDocument` of it, with the transfer log's
 * accounted uploads (`transfer_log.arrivals`) read back in order where they were written.
 */
export function auditJsonPieces(result: AuditResult, extra: Record<string, unknown> = {}): Iterable<AnswerPiece> {
  const { transferLog } = result;
  if (!transferLog) return [jsonDocument({ ...extra, ...result })];
  // in its place among the keys, as before; the kept unmatched ones are in `arrivals` already
  return jsonDocumentPieces(
    (placeholder) => ({ ...extra, ...result, transferLog: { ...transferLog, arrivals: placeholder, unmatchedArrivals: undefined } }),
    transferLog.arrivals.joined('json', ','),
  );
}

export function registerAudit(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('audit'), 'audit')
    .description("cross-check ledger, finance database, archive and the SFTP server's log of uploads; exit 1 on any discrepancy")
    .action(async (flags: RawFlags & { json?: boolean }) => {
      // the accounted uploads in the one form this answer prints
      const accounted = new AccountedList(flags.json ? { json: accountedArrivalJson } : { text: accountedArrivalLine });
      try {
        const result = await auditPartners(flags, { sizeOnlyAllowed: true, accounted });
        // nothing is printed before every check is done, and the verdict comes last: cut short, it never reads as clean
        if (flags.json) await writeStreamed(auditJsonPieces(result), { lines: false, end: '\n' });
        else await writeStreamed(auditLines(result), { lines: true });
        setExit(result.discrepancies > 0 ? 1 : 0);
      } finally {
        accounted.close();
      }
    });
}
