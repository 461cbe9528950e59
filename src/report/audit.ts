import type { FolderReader } from '../intake/intake.js';
import { isInProgressName } from '../intake/names.js';
import { sha256Of } from '../intake/sha256Of.js';
import type { Ledger } from '../ledger/ledger.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { staleClaims } from './ledgerHealth.js';
import { contentOf } from '../ledger/types.js';
import type { TransferAuditResult } from './transferLog/transferAudit.js';

/** What kind of discrepancy: a script decides by this, a person reads the message. */
export type DiscrepancyKind =
  | 'content_loaded_twice'
  | 'no_file_marker'
  | 'ledger_row_count_differs'
  | 'load_unknown_to_ledger'
  | 'table_row_count_differs'
  | 'stale_claim'
  | 'archived_file_unknown'
  | 'upload_unmatched'
  | 'transfer_log_unread';

export interface Discrepancy {
  kind: DiscrepancyKind;
  /** the partner it is about, where a file or archive says (a content loaded twice is the ledger's) */
  partner: string | null;
  file: string | null;
  sha256: string | null;
  run: string | null;
  message: string;
}

export interface AuditResult {
  checks: { name: string; discrepancies: Discrepancy[] }[];
  discrepancies: number;
  /** the uploads the SFTP server logged, matched to the ledger (`--transfer-log`); null without one */
  transferLog: TransferAuditResult | null;
}

const found = (
  kind: DiscrepancyKind,
  file: string | null,
  sha256: string | null,
  run: string | null,
  message: string,
  partner: string | null = null,
): Discrepancy => ({
  kind,
  partner,
  file,
  sha256,
  run,
  message,
});

/**
 * Cross-checks the ledger, the finance database and the archive: one load per content,
 * row counts that agree, no stale claims, and no archived file the ledger does not know.
 */
export async function audit(
  ledger: Ledger,
  finance: FinanceDb,
  archives: { partner: string; archive: FolderReader }[],
  partners?: string[],
  transferLog: TransferAuditResult | null = null,
): Promise<AuditResult> {
  const { schema } = finance;
  const facts = await finance.loadFacts();
  const bySha = new Map(facts.map((f) => [f.sha256, f]));
  const checks: AuditResult['checks'] = [];
  const check = (name: string, discrepancies: Discrepancy[]) => checks.push({ name, discrepancies });

  check(
    'each content loaded once',
    (await ledger.contentsLoadedTwice()).map((x) =>
      found('content_loaded_twice', null, x.sha256, null, `content ${x.sha256} has ${x.loads} load events in the ledger`),
    ),
  );

  // content identity is the ledger's: a load is matched against every partner's
  const loaded = await ledger.filesInState('loaded');
  check('ledger loads match the finance database', [
    ...loaded.flatMap((f) => {
      // the file marker holds the content's hash; the archive holds the delivered bytes
      const fact = bySha.get(contentOf(f));
      if (!fact) {
        const both = contentOf(f) === f.sha256 ? f.sha256 : `delivered ${f.sha256}, content ${contentOf(f)}`;
        const message = `${f.name} (${both}) is loaded in the ledger (run ${f.runId}) but has no file marker in ${schema}.file_loads`;
        return partners && !partners.includes(f.partner) ? [] : [found('no_file_marker', f.name, f.sha256, f.runId, message, f.partner)];
      }
      if (f.rowCount !== null && f.rowCount !== fact.markerRows) {
        const message = `${f.name}: the ledger counts ${f.rowCount} rows, the file marker ${fact.markerRows}`;
        return partners && !partners.includes(f.partner)
          ? []
          : [found('ledger_row_count_differs', f.name, f.sha256, f.runId, message, f.partner)];
      }
      return [];
    }),
    ...facts
      .filter((fact) => !loaded.some((f) => contentOf(f) === fact.sha256))
      .map((fact) =>
        found(
          'load_unknown_to_ledger',
          fact.fileName,
          fact.sha256,
          fact.runId,
          `${fact.fileName} (${fact.sha256}) was loaded by run ${fact.runId} but the ledger has no load of it (a lost or replaced ledger?)`,
        ),
      ),
  ]);

  check(
    'row counts match the file markers',
    facts
      .filter((f) => f.markerRows !== f.actualRows)
      .map((f) =>
        found(
          'table_row_count_differs',
          f.fileName,
          f.sha256,
          f.runId,
          `${f.fileName}: the file marker says ${f.markerRows} rows, ${f.table} holds ${f.actualRows}`,
        ),
      ),
  );

  check(
    'no stale claims',
    (await staleClaims(ledger, partners)).map((c) =>
      found(
        'stale_claim',
        c.name,
        c.sha256,
        c.runId,
        `${c.name} is claimed by run ${c.runId} (pid ${c.ownerPid} on ${c.ownerHost}, lease until ${c.leaseUntil}), which is gone`,
        c.partner,
      ),
    ),
  );

  const unknown: Discrepancy[] = [];
  for (const { partner, archive } of archives) {
    for (const entry of await archive.list()) {
      if (entry.notRegular || isInProgressName(entry.name)) continue; // hidden temporaries of an interrupted move
      const sha = await sha256Of(archive, entry.name);
      if (!(await ledger.knowsContent(sha)).some((f) => f.state === 'loaded')) {
        const message = `${archive.description}/${entry.name} (${sha}) is in the archive but the ledger has no load of its content`;
        unknown.push(found('archived_file_unknown', entry.name, sha, null, message, partner));
      }
    }
  }
  check('every archived file is known to the ledger', unknown);

  if (transferLog) {
    check(
      'every upload in the transfer log has a ledger outcome',
      transferLog.arrivals.filter((a) => a.unmatched).map((a) => found('upload_unmatched', a.name, null, null, a.message, a.partner)),
    );
    check(
      'every line of the transfer log was read',
      transferLog.unread.map((u) => found('transfer_log_unread', u.file, null, null, u.message)),
    );
  }

  return { checks, discrepancies: checks.reduce((n, c) => n + c.discrepancies.length, 0), transferLog };
}
