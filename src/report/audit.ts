import { FileGoneError, NotRegularFileError, type FolderReader, type IntakeEntry } from '../intake/intake.js';
import { isInProgressName } from '../intake/names.js';
import { placeWithoutLogin } from '../intake/openIntake.js';
import { sha256Of } from '../intake/sha256Of.js';
import { DESTINATION, type Destination } from '../destination.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { staleClaims } from './ledgerHealth.js';
import { contentOf, type FileRow } from '../ledger/types.js';
import type { TransferAuditResult } from './arrivalAudit/transferAudit.js';
import type { CheckedTotal } from '../layout/reader/totalsCheck.js';

/** What kind of discrepancy: a script decides by this, a person reads the message. */
export type DiscrepancyKind =
  | 'content_loaded_twice'
  | 'no_file_marker'
  | 'ledger_row_count_differs'
  | 'load_unknown_to_ledger'
  | 'table_row_count_differs'
  | 'stale_claim'
  | `${CopyFolder}_copy_missing`
  | `${CopyFolder}_copy_differs`
  | 'archived_file_unknown'
  | 'upload_unmatched'
  | 'upload_ambiguous'
  | 'upload_gone_after_outcome'
  | 'transfer_log_unread'
  | 'transfer_log_clock_offset';

export interface Discrepancy {
  kind: DiscrepancyKind;
  /** the partner it is about, where a file or archive says (a content loaded twice is the ledger's) */
  partner: string | null;
  file: string | null;
  sha256: string | null;
  run: string | null;
  message: string;
}

/** The folder a kept copy's discrepancy names: `archive_copy_missing`, `duplicate_copy_missing`, `rejected_copy_missing`. */
type CopyFolder = 'archive' | 'duplicate' | 'rejected';
const COPY_FOLDER: Record<Destination, CopyFolder> = { archive: 'archive', duplicates: 'duplicate', rejected: 'rejected' };

/** The final outcomes whose files are kept (in DESTINATION's folder), and the words for such a file. */
const KEPT = { loaded: 'loaded', duplicate: 'skipped as a duplicate', rejected: 'rejected' } as const;

/** One final folder the audit reads: a partner's archive/, duplicates/ or rejected/. */
export interface FinalFolder {
  partner: string;
  destination: Destination;
  folder: FolderReader;
}

/** How the kept copies were checked: read and hashed, or (`--quick`) by their size alone. */
export type ArchiveCheck = 'sha256' | 'size';

export interface AuditResult {
  checks: { name: string; discrepancies: Discrepancy[] }[];
  /** `size`: the kept copies' SHA-256 (archive/, duplicates/, rejected/) was not checked (--quick), and the output says so */
  archiveCheck: ArchiveCheck;
  discrepancies: number;
  /** the uploads the SFTP server logged, matched to the ledger (`--transfer-log`); null without one */
  transferLog: TransferAuditResult | null;
  /**
   * The loaded files that proved their control totals before their rows were loaded
   * (layout/reader/totalsCheck.ts), as the ledger kept them; absent when there are none (no layout states
   * totals), so that an audit without them reads as before.
   */
  balanced?: BalancedFile[];
}

/** A loaded file and the control totals it proved. */
export interface BalancedFile {
  partner: string;
  file: string;
  sha256: string;
  run: string;
  totals: CheckedTotal[];
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
 * row counts that agree, no stale claims, each loaded file's archived copy (and each skipped
 * duplicate's and rejected file's kept copy) where the ledger put it, and no archived file the
 * ledger does not know.
 */
export async function audit(
  ledger: LedgerQueries,
  finance: FinanceDb,
  folders: FinalFolder[],
  partners: string[] | undefined,
  transferLog: TransferAuditResult | null,
  archiveCheck: ArchiveCheck,
  /** --claim-lease: a claim's lease that runs further than this from the ledger's now holds nothing (ledger/staleClaim.ts) */
  claimLeaseSeconds: number,
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
    ...loaded.flatMap((fileRow) => {
      // the file marker holds the content's hash; the archive holds the delivered bytes
      const fact = bySha.get(contentOf(fileRow));
      if (!fact) {
        const both = contentOf(fileRow) === fileRow.sha256 ? fileRow.sha256 : `delivered ${fileRow.sha256}, content ${contentOf(fileRow)}`;
        const message = `${fileRow.name} (${both}) is loaded in the ledger (run ${fileRow.runId}) but has no file marker in ${schema}.file_loads`;
        return partners && !partners.includes(fileRow.partner)
          ? []
          : [found('no_file_marker', fileRow.name, fileRow.sha256, fileRow.runId, message, fileRow.partner)];
      }
      if (fileRow.rowCount !== null && fileRow.rowCount !== fact.markerRows) {
        const message = `${fileRow.name}: the ledger counts ${fileRow.rowCount} rows, the file marker ${fact.markerRows}`;
        return partners && !partners.includes(fileRow.partner)
          ? []
          : [found('ledger_row_count_differs', fileRow.name, fileRow.sha256, fileRow.runId, message, fileRow.partner)];
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
    (await staleClaims(ledger, partners, claimLeaseSeconds)).map((c) =>
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

  const listed = await listFolders(folders, archiveCheck);
  const inScope = (f: FileRow) => !partners || partners.includes(f.partner);
  // an upload's final outcome accounts for its bytes only while they are kept where its move put them
  const kept: KeptFile[] = [];
  for (const [state, what] of Object.entries(KEPT) as [keyof typeof KEPT, string][]) {
    const rows = state === 'loaded' ? loaded : await ledger.filesInState(state);
    kept.push(...rows.filter(inScope).map((file) => ({ file, destination: DESTINATION[state], what })));
  }
  const copies = "each loaded file's archived copy, and each skipped duplicate's and rejected file's kept copy, is where the ledger put it";
  check(
    archiveCheck === 'sha256' ? `${copies}, of its size and SHA-256` : `${copies}, of its size (--quick: SHA-256 not checked)`,
    await keptCopies(kept, listed, loaded, archiveCheck),
  );

  const unknown: Discrepancy[] = [];
  const placed = new Set(
    loaded
      .map((f) => f.location)
      .filter((l): l is string => l !== null)
      .map((location) => placeWithoutLogin(location)),
  );
  for (const folder of listed.filter((listedFolder) => listedFolder.destination === 'archive')) {
    for (const entry of folder.entries.values()) {
      if (entry.notRegular || isInProgressName(entry.name)) continue; // hidden temporaries of an interrupted move
      // a copy at a loaded file's place is judged by the check above, against that file
      if (placed.has(placeWithoutLogin(`${folder.folder.description}/${entry.name}`))) continue;
      const sha = folder.sha256.get(entry.name) ?? (await sha256Of(folder.folder, entry.name).catch(goneAsNull));
      if (sha === null) continue; // gone since it was listed
      if (!(await ledger.knowsContent(sha)).some((f) => f.state === 'loaded')) {
        const message = `${folder.folder.description}/${entry.name} (${sha}) is in the archive but the ledger has no load of its content`;
        unknown.push(found('archived_file_unknown', entry.name, sha, null, message, folder.partner));
      }
    }
  }
  check('every archived file is known to the ledger', unknown);

  if (transferLog) {
    check('every upload in the transfer log has a ledger outcome', [
      ...transferLog.unmatchedArrivals.map((a) =>
        a.afterWaiting !== null
          ? found('upload_gone_after_outcome', a.name, a.sha256, a.run, a.message, a.partner)
          : found('upload_unmatched', a.name, null, null, a.message, a.partner),
      ),
      // an upload the log ties to no one partner has no partner's outcome: crediting either could name the wrong one
      ...transferLog.ambiguous.map((upload) => found('upload_ambiguous', upload.path, null, null, upload.message)),
    ]);
    check(
      'every line of the transfer log was read',
      transferLog.unread.map((unreadPlace) => found('transfer_log_unread', unreadPlace.file, null, null, unreadPlace.message)),
    );
    // its uploads were matched at the offset the runs' own moves show, but a log read at the wrong time cannot be vouched for
    check(
      "the transfer log's times agree with the ledger's",
      transferLog.clockOffsets.map((c) => found('transfer_log_clock_offset', c.files.join(', '), null, null, c.message)),
    );
  }

  const balanced = loaded
    .filter((f) => f.totals && f.totals.length > 0 && (!partners || partners.includes(f.partner)))
    .map((f) => ({ partner: f.partner, file: f.name, sha256: f.sha256, run: f.runId, totals: f.totals! }));
  const discrepancies = checks.reduce((n, c) => n + c.discrepancies.length, 0);
  return { checks, archiveCheck, discrepancies, transferLog, ...(balanced.length > 0 ? { balanced } : {}) };
}

/** A file pinned and hashed, or null when it went away (or stopped being a regular file) meanwhile. */
const goneAsNull = (err: unknown): null => {
  if (err instanceof FileGoneError || err instanceof NotRegularFileError) return null;
  throw err;
};

interface ListedFolder extends FinalFolder {
  entries: Map<string, IntakeEntry>;
  /** each regular file's SHA-256, when the check reads them */
  sha256: Map<string, string>;
}

/** Every final folder listed once and, unless by size only, each regular file in it read once. */
async function listFolders(folders: FinalFolder[], how: ArchiveCheck): Promise<ListedFolder[]> {
  const listed: ListedFolder[] = [];
  for (const { partner, destination, folder } of folders) {
    const entries = new Map((await folder.list()).map((e) => [e.name, e]));
    const sha256 = new Map<string, string>();
    if (how === 'sha256') {
      for (const entry of entries.values()) {
        if (entry.notRegular || isInProgressName(entry.name)) continue;
        const sha = await sha256Of(folder, entry.name).catch(goneAsNull);
        if (sha === null) entries.delete(entry.name);
        else sha256.set(entry.name, sha);
      }
    }
    listed.push({ partner, destination, folder, entries, sha256 });
  }
  return listed;
}

/** A file the ledger decided, and the final folder its move put it in. */
interface KeptFile {
  file: FileRow;
  destination: Destination;
  /** its outcome, in words: "loaded", "rejected" */
  what: string;
}

/**
 * Each decided file's copy where the ledger put it (the place its move recorded, with the
 * file's row in one transaction): a loaded file's in the archive, a skipped duplicate's and a
 * rejected file's in duplicates/ and rejected/. Present, a regular file, of the recorded size
 * and, unless by size only, of the recorded SHA-256. A copy swapped for a loaded file's is named so.
 */
async function keptCopies(kept: KeptFile[], listed: ListedFolder[], loaded: FileRow[], how: ArchiveCheck): Promise<Discrepancy[]> {
  // a recorded location on a server names no login, and two partners' logins may each see a folder of
  // their own at one path (a chroot): a file is looked for in its own partner's folders, or in any
  // when none of its partner's is read (a row from before partners were kept)
  const byPartner = new Map<string, { byPlace: Map<string, { folder: ListedFolder; name: string }>; folderKeys: string[] }>();
  const placesOf = (partner: string) => {
    let places = byPartner.get(partner);
    if (!places) byPartner.set(partner, (places = { byPlace: new Map(), folderKeys: [] }));
    return places;
  };
  for (const folder of listed) {
    for (const places of [placesOf(folder.partner), placesOf('')]) {
      for (const name of folder.entries.keys())
        places.byPlace.set(placeWithoutLogin(`${folder.folder.description}/${name}`), { folder, name });
      places.folderKeys.push(`${placeWithoutLogin(folder.folder.description)}/`);
    }
  }
  const loadedBySha = new Map(loaded.map((fileRow) => [fileRow.sha256, fileRow]));
  const out: Discrepancy[] = [];
  for (const { file, destination, what: outcome } of kept) {
    const what = `${file.name} (${outcome} by run ${file.runId})`;
    const kind = COPY_FOLDER[destination];
    const missing = (why: string) =>
      out.push(found(`${kind}_copy_missing`, file.name, file.sha256, file.runId, `${what}: ${why}`, file.partner));
    const differs = (why: string) =>
      out.push(found(`${kind}_copy_differs`, file.name, file.sha256, file.runId, `${what}: ${why}`, file.partner));
    if (file.location === null) {
      missing(`the ledger has no record of where it was moved in ${destination}/ (its move was never recorded)`);
      continue;
    }
    const key = placeWithoutLogin(file.location);
    const { byPlace, folderKeys } = byPartner.get(file.partner) ?? placesOf('');
    const here = byPlace.get(key);
    if (!here) {
      const inFolder = folderKeys.some((folder) => key.startsWith(folder) && !key.slice(folder.length).includes('/'));
      const where =
        listed
          .filter((listedFolder) => listedFolder.destination === destination)
          .map((l) => l.folder.description)
          .join(', ') || 'none';
      missing(
        inFolder
          ? `its copy ${file.location} is gone`
          : `the ledger put it at ${file.location}, in no ${destination}/ folder this audit reads (${where})`,
      );
      continue;
    }
    const entry = here.folder.entries.get(here.name)!;
    if (entry.notRegular) {
      missing(`${file.location} is no longer a regular file: ${entry.notRegular}`);
      continue;
    }
    const sha = here.folder.sha256.get(here.name);
    const other = sha === undefined || sha === file.sha256 ? undefined : loadedBySha.get(sha);
    const copyOf = other ? `: a copy of ${other.name} (loaded by run ${other.runId})` : '';
    if (entry.size !== file.size) {
      differs(`${file.location} holds ${entry.size} bytes, the ledger recorded ${file.size}${copyOf}`);
    } else if (how === 'sha256' && sha !== file.sha256) {
      differs(`${file.location} holds other bytes (SHA-256 ${sha}) than the ledger recorded (${file.sha256})${copyOf}`);
    }
  }
  return out;
}
