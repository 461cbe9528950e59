import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../logEvents.js';
import { RejectError, TransientError, errorMessage, exitStatusOf } from '../errors.js';
import { FileGoneError, type FolderReader, type IntakeEntry } from '../intake/intake.js';
import { isInProgressName } from '../intake/names.js';
import type { RunLedger } from '../ledger/ledger.js';
import type { FileRow } from '../ledger/types.js';
import { runOutcomes } from '../ledger/runOutcomes.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { keyName } from '../layout/model/layout.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { isConnectionLost } from './connectionLost.js';
import { newRunId } from '../ledger/runIds.js';
import { stageAndHash, type Staged } from './stageAndHash.js';
import { contentDetails, removeContent, type StagedContent } from '../delivery/stagedContent.js';

export const ADOPT_OUTCOMES = [
  'adopted',
  'would-adopt',
  'known',
  'not-loaded',
  'partly-loaded',
  'unreadable',
  'undecodable',
  'content-duplicate',
  'ledger-conflict',
] as const;
export type AdoptOutcome = (typeof ADOPT_OUTCOMES)[number];

/** Outcomes that adopt a file, or find it adopted already: logged as information. */
type AdoptFine = 'adopted' | 'would-adopt' | 'known';

/** An outcome that leaves a file unadopted for a reason an operator must look at: exit 1, logged as an error. */
const isAdoptProblem = (outcome: AdoptOutcome): outcome is Exclude<AdoptOutcome, AdoptFine> =>
  outcome !== 'adopted' && outcome !== 'would-adopt' && outcome !== 'known';

/** Outcomes that leave a file unadopted for a reason an operator must look at: exit 1, logged as errors. */
export const ADOPT_PROBLEMS: readonly AdoptOutcome[] = ADOPT_OUTCOMES.filter(isAdoptProblem);

/** What showed a file loaded: its file marker, every natural key in the table, or the operator's word. */
export type Evidence = 'file-marker' | 'natural-keys' | 'operator';

export interface AdoptedFile {
  name: string;
  /** the bytes as archived (the claim key) */
  sha256: string | null;
  /** the content inside them, gzip, zip and OpenPGP taken off (the file marker's hash); null when it could not be decoded */
  contentSha256: string | null;
  outcome: AdoptOutcome;
  evidence?: Evidence;
  rows: number | null;
  /** rows whose natural key the settlement table holds, when that was looked up */
  presentRows?: number;
  /** content-duplicate: the archived file with the same content (the same bytes, or other bytes wrapping it) */
  sameAs?: string;
  message: string;
}

export interface AdoptOptions {
  ledger: RunLedger;
  /** bound to the layout the archived files are read with */
  finance: FinanceDb;
  archive: FolderReader;
  /** which archived names are considered */
  pattern: RegExp;
  dryRun: boolean;
  /** `--assume-loaded --reason`: adopt files the finance database does not show, on the operator's word */
  assumeLoaded?: { reason: string; operator: string };
  stagingRoot: string;
  /** archived files are kept as delivered (compressed, encrypted): decoded as a run decodes them */
  decode: DecodeOptions;
  logger: Logger;
  /** the command layer's rule from the files' outcomes to the exit status the ledger records */
  exitStatusFor: (files: AdoptedFile[]) => 0 | 1;
}

export interface AdoptResult {
  runId: string;
  dryRun: boolean;
  files: AdoptedFile[];
  exitStatus: 0 | 1;
}

type Finding =
  | { loaded: true; evidence: 'file-marker' | 'natural-keys'; rows: number; message: string }
  | { loaded: false; outcome: 'not-loaded' | 'partly-loaded' | 'unreadable'; rows: number | null; presentRows?: number; message: string };

/** Whether the finance database shows this content's rows: its file marker, else its natural keys. */
async function whatTheDatabaseShows(opts: AdoptOptions, path: string, sha256: string, entry: IntakeEntry): Promise<Finding> {
  const name = entry.name;
  const marker = await opts.finance.fileMarker(sha256);
  if (marker) {
    const message = `its file marker is in ${opts.finance.schema}.file_loads (${marker.rowCount} rows, run ${marker.runId})`;
    return { loaded: true, evidence: 'file-marker', rows: marker.rowCount, message };
  }
  let presence;
  try {
    presence = await opts.finance.keyPresence(path, name, entry.mtimeMs);
  } catch (err) {
    if (!(err instanceof RejectError)) throw err;
    const message = `cannot be read with the layout, so its rows cannot be looked up (${err.message}); not adopted`;
    return { loaded: false, outcome: 'unreadable', rows: null, message };
  }
  // with `occurrence`, the n-th identical row of the file is looked up as the n-th loaded under its key
  const { layout } = opts.finance;
  const keys = `rows' ${keyName(layout)}${layout.occurrence !== undefined ? ` values with their ${layout.occurrence}` : ' values'}`;
  const table = opts.finance.table;
  if (presence.present === presence.rows) {
    const message =
      presence.rows === 0 ? 'no file marker, and no rows to load' : `no file marker, but all ${presence.rows} ${keys} are in ${table}`;
    return { loaded: true, evidence: 'natural-keys', rows: presence.rows, message };
  }
  if (presence.present === 0) {
    const message = `not loaded: leave it for a run (move it back to the intake) or use --assume-loaded (no file marker, and none of its ${presence.rows} ${keys} are in ${table})`;
    return { loaded: false, outcome: 'not-loaded', rows: presence.rows, presentRows: 0, message };
  }
  const message = `partly loaded: ${presence.present} of ${presence.rows} ${keys} are in ${table} (first missing: line ${presence.firstMissing!.line}); not adopted: a discrepancy to resolve by hand`;
  return { loaded: false, outcome: 'partly-loaded', rows: presence.rows, presentRows: presence.present, message };
}

type Decoded = Extract<StagedContent, { kind: 'content' }>;

async function adoptOne(opts: AdoptOptions, runId: string, entry: IntakeEntry, sha256: string, content: Decoded): Promise<AdoptedFile> {
  const base = { name: entry.name, sha256, contentSha256: content.sha256 };
  // the same content under other delivered bytes (a gzipped or plain copy) is the same file
  const liveHolder = async () => (await opts.ledger.liveHolder(sha256)) ?? (await opts.ledger.liveContentHolder(content.sha256));
  const known = (fileRow: FileRow): AdoptedFile => {
    return {
      ...base,
      outcome: 'known',
      rows: fileRow.rowCount,
      message: `the ledger already has this content as ${fileRow.name} (${fileRow.state})`,
    };
  };
  const holder = await liveHolder();
  if (holder) return known(holder);
  const found = await whatTheDatabaseShows(opts, content.path, content.sha256, entry);
  const counted = found.loaded || found.presentRows === undefined ? {} : { presentRows: found.presentRows };
  // a file partly in the table is never adopted, whatever the operator says: its missing rows would be lost
  if (!found.loaded && (found.outcome === 'partly-loaded' || !opts.assumeLoaded)) {
    return { ...base, ...counted, outcome: found.outcome, rows: found.rows, message: found.message };
  }
  const evidence: Evidence = found.loaded ? found.evidence : 'operator';
  const message = found.loaded ? found.message : `on the operator's word (--assume-loaded: ${opts.assumeLoaded!.reason}); ${found.message}`;
  const rows = found.loaded ? found.rows : null;
  if (opts.dryRun) return { ...base, ...counted, outcome: 'would-adopt', evidence, rows, message };

  const location = `${opts.archive.description}/${entry.name}`;
  const why =
    evidence === 'operator' ? { assumedLoaded: true, reason: opts.assumeLoaded!.reason, operator: opts.assumeLoaded!.operator } : {};
  const file = { name: entry.name, sha256, contentSha256: content.sha256, size: entry.size, runId };
  if (await opts.ledger.adoptLoaded(file, location, rows, { evidence, ...why, ...contentDetails(content, sha256) })) {
    return { ...base, ...counted, outcome: 'adopted', evidence, rows, message };
  }
  // another run claimed or loaded it meanwhile, or the ledger holds this very name and content in another state
  const now = (await liveHolder()) ?? (await opts.ledger.file(entry.name, sha256));
  if (now && (now.state === 'loaded' || now.state === 'claimed')) return known(now);
  const state = now?.state ?? 'unknown';
  return { ...base, outcome: 'ledger-conflict', rows, message: `the ledger already has this name and content as ${state}; not adopted` };
}

/**
 * A delivery whose wrapping cannot be undone (no --pgp-key, damaged, not signed by the partner)
 * is never adopted, not even on the operator's word: without its content there is no content
 * hash to record, and a re-compressed or re-encrypted resend is recognised only by that.
 */
function undecodable(opts: AdoptOptions, entry: IntakeEntry, sha256: string, content: Exclude<StagedContent, Decoded>): AdoptedFile {
  const why = content.kind === 'refused' ? content.error.message : content.reason;
  const word = opts.assumeLoaded
    ? ' (--assume-loaded cannot adopt it either: its content hash, by which a re-compressed or re-encrypted resend is known, cannot be read)'
    : '';
  const message = `cannot be decoded: ${why}; not adopted${word}`;
  return { name: entry.name, sha256, contentSha256: null, outcome: 'undecodable', rows: null, message };
}

/**
 * `adopt --archive DIR`: brings an archive from before this ledger into it, so that a later
 * resend of any of its files is skipped. A file is recorded as loaded only where the finance
 * database shows its rows (its file marker, or every natural key of it) or the operator says
 * so (`--assume-loaded`); a file never loaded stays unrecorded, so that a run can still load it.
 * Each file is read once, and decoded in that read as a run decodes it (gzip, zip, OpenPGP):
 * the content whose file marker and keys are looked up is the content whose hash is kept,
 * beside the delivered bytes' hash. Files whose content repeats an earlier archived file are
 * reported: a past double load.
 */
export async function runAdopt(opts: AdoptOptions): Promise<AdoptResult> {
  // a dry run leaves no trace in the ledger, not even its run
  const runId = opts.dryRun
    ? newRunId(new Date(), { dryRun: true })
    : await opts.ledger.startRun({ mode: 'manual', host: hostname(), pid: process.pid }, () => newRunId());
  const log = opts.logger.child({ run: runId, adopt: true });
  const files: AdoptedFile[] = [];
  const firstWith = new Map<string, SeenBefore>();
  const entries = (await opts.archive.list())
    .filter((intakeEntry) => !intakeEntry.notRegular && !isInProgressName(intakeEntry.name) && opts.pattern.test(intakeEntry.name))
    .sort((a, b) => a.name.localeCompare(b.name));
  const staging = await mkdtemp(join(opts.stagingRoot, `settle-${runId}-`));
  try {
    let seq = 0;
    for (const entry of entries) {
      const adoptedFile = await stagedFile(opts, runId, entry, staging, seq++, firstWith);
      files.push(adoptedFile);
      const decoded =
        adoptedFile.contentSha256 !== null && adoptedFile.contentSha256 !== adoptedFile.sha256
          ? { contentSha256: adoptedFile.contentSha256 }
          : {};
      const fields = {
        file: adoptedFile.name,
        sha256: adoptedFile.sha256,
        ...decoded,
        evidence: adoptedFile.evidence,
        rows: adoptedFile.rows,
      };
      const { outcome } = adoptedFile;
      if (isAdoptProblem(outcome)) log.error({ event: `adopt-${outcome}` as const, ...fields }, adoptedFile.message);
      else log.info({ event: `adopt-${outcome}` as const, ...fields }, adoptedFile.message);
    }
  } catch (err) {
    if (!opts.dryRun)
      await opts.ledger.finishRun(runId, (await runOutcomes(opts.ledger, runId)).counts, exitStatusOf(err)).catch(() => undefined);
    if (isConnectionLost(err)) throw new TransientError(`finance database connection lost: ${errorMessage(err)}`, { cause: err });
    throw err;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  const exitStatus = opts.exitStatusFor(files);
  if (!opts.dryRun) await opts.ledger.finishRun(runId, (await runOutcomes(opts.ledger, runId)).counts, exitStatus);
  return { runId, dryRun: opts.dryRun, files, exitStatus };
}

/** An archived file already looked at, under its delivered bytes' hash and its content's. */
interface SeenBefore {
  name: string;
  sha256: string;
  /** null until decoded, or when it could not be */
  contentSha256: string | null;
}

/** One archived file: staged, hashed and decoded in one read, checked against earlier files, then decided. */
async function stagedFile(
  opts: AdoptOptions,
  runId: string,
  entry: IntakeEntry,
  staging: string,
  seq: number,
  firstWith: Map<string, SeenBefore>,
): Promise<AdoptedFile> {
  const staged = await stageAndHash(opts.archive, entry, staging, seq, opts.decode).catch((err: unknown): Staged => {
    if (err instanceof FileGoneError) return { kind: 'gone', answer: err.message };
    throw err;
  });
  if (staged.kind !== 'staged') {
    const why = staged.kind === 'gone' ? 'left the archive while it was read' : staged.reason;
    return { name: entry.name, sha256: null, contentSha256: null, outcome: 'unreadable', rows: null, message: `${why}; not adopted` };
  }
  const repeatOf = (hash: string): AdoptedFile | undefined => {
    const earlier = firstWith.get(hash);
    if (earlier === undefined) return undefined;
    const message = `has the same ${earlier.sha256 === staged.sha256 ? 'bytes' : 'content'} as ${earlier.name}`;
    const { contentSha256 } = earlier;
    return {
      name: entry.name,
      sha256: staged.sha256,
      contentSha256,
      outcome: 'content-duplicate',
      rows: null,
      sameAs: earlier.name,
      message,
    };
  };
  const seen: SeenBefore = { name: entry.name, sha256: staged.sha256, contentSha256: null };
  const { content } = staged;
  try {
    // repeated bytes are told by the delivered hash first: a repeat is seen even when no key can decode it
    const sameBytes = repeatOf(staged.sha256);
    if (sameBytes) return sameBytes;
    firstWith.set(staged.sha256, seen);
    if (content.kind !== 'content') return undecodable(opts, entry, staged.sha256, content);
    seen.contentSha256 = content.sha256;
    if (content.sha256 !== staged.sha256) {
      // a gzipped and a plain copy of one CSV, or two encryptions of it, are one content: a past double load
      const sameContent = repeatOf(content.sha256);
      if (sameContent) return sameContent;
      firstWith.set(content.sha256, seen);
    }
    return await adoptOne(opts, runId, entry, staged.sha256, content);
  } finally {
    await removeContent(content, staged.path);
    await unlink(staged.path).catch(() => undefined);
  }
}
