import { NO_COUNTS } from '../ledger/types.js';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Intake } from '../intake/intake.js';
import { isInProgressName } from '../intake/names.js';
import { sha256Of } from '../intake/sha256Of.js';
import type { Ledger } from '../ledger/ledger.js';
import { findFileMarker } from '../load/fileMarker.js';
import { newRunId } from './runId.js';

export interface AdoptResult {
  runId: string;
  adopted: { name: string; sha256: string; rows: number | null }[];
  /** contents the ledger already had as loaded (under this or another name) */
  known: { name: string; sha256: string }[];
  /** files in the archive whose bytes repeat an earlier file's there: a past double load */
  duplicates: { name: string; sameAs: string; sha256: string }[];
  exitStatus: 0 | 1;
}

/**
 * `adopt --archive DIR`: brings an archive from before this ledger into it, hashing each
 * file once, so that a later resend of any of them is skipped. Each content is recorded as
 * loaded (with the finance database's row count when it has a file marker); files whose
 * bytes repeat another archived file are reported, since they mean a past double load.
 */
export async function runAdopt(o: {
  ledger: Ledger;
  db: pg.ClientBase;
  schema: string;
  archive: Intake;
  logger: Logger;
}): Promise<AdoptResult> {
  const runId = await o.ledger.startRun({ mode: 'manual', host: hostname(), pid: process.pid }, () => newRunId());
  const log = o.logger.child({ run: runId, adopt: true });
  const result: AdoptResult = { runId, adopted: [], known: [], duplicates: [], exitStatus: 0 };
  const firstWith = new Map<string, string>();
  const files = (await o.archive.list()).filter((e) => !isInProgressName(e.name)).sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of files) {
    const sha256 = await sha256Of(o.archive, entry.name);
    const earlier = firstWith.get(sha256);
    if (earlier !== undefined) {
      result.duplicates.push({ name: entry.name, sameAs: earlier, sha256 });
      log.error(
        { event: 'content-duplicate', file: entry.name, sameAs: earlier, sha256 },
        `${entry.name} has the same bytes as ${earlier}`,
      );
      continue;
    }
    firstWith.set(sha256, entry.name);
    const marker = await findFileMarker(o.db, o.schema, sha256);
    const rows = marker?.rowCount ?? null;
    const location = `${o.archive.description}/${entry.name}`;
    if (await o.ledger.adoptLoaded({ name: entry.name, sha256, size: entry.size, runId }, location, rows)) {
      result.adopted.push({ name: entry.name, sha256, rows });
      log.info(
        { event: 'adopted', file: entry.name, sha256, rows },
        `adopted ${entry.name}${marker ? ` (${rows} rows in the finance database)` : ' (no file marker in the finance database)'}`,
      );
    } else {
      result.known.push({ name: entry.name, sha256 });
      log.info({ event: 'known', file: entry.name, sha256 }, `${entry.name}: the ledger already has this content`);
    }
  }
  result.exitStatus = result.duplicates.length > 0 ? 1 : 0;
  const rows = result.adopted.reduce((n, a) => n + (a.rows ?? 0), 0);
  await o.ledger.finishRun(runId, { ...NO_COUNTS, loaded: result.adopted.length, rows }, result.exitStatus);
  return result;
}
