import { RejectError } from '../errors.js';
import type { RunLedger } from '../ledger/ledger.js';
import { unchangedWaits, type SeenAs } from '../ledger/waitingFiles.js';
import type { Layout } from '../layout/model/layout.js';
import { lastRecordCutShort, type CutShort } from '../layout/reader/lastRecord.js';

/** What a staged file whose last record is cut short comes to: wait (not ready), or be rejected as incomplete. */
export type PausedUpload =
  /** `seenAs` goes into the not-ready event, so that the next run can tell whether it changed since */
  { kind: 'wait'; reason: string; seenAs: SeenAs; line: number } | { kind: 'incomplete'; error: RejectError };

/** How a cut record is said, by a run and by `check`: where the upload stopped, and the record's shape. */
export function cutShortWords(cut: CutShort): { stopped: string; shape: string } {
  return { stopped: `the upload stopped mid-line ${cut.line}`, shape: `${cut.fields} of ${cut.expected} fields, no line end` };
}

/**
 * A plain staged file whose last record stops short of its layout's width with no line end
 * after it is an upload the partner paused (throttled, a dropped connection it will resume),
 * not a broken file: it is not ready, left in the intake and never claimed, for as long as it
 * changes; once it has stayed exactly so (size, mtime and SHA-256) for `maxWaitingRuns` runs,
 * it is rejected as incomplete. Undefined: the file is whole, go on. (A gzip, zip or OpenPGP
 * delivery is complete or not by its own framing, judged while it is decoded.)
 */
export async function judgePausedUpload(
  ledger: RunLedger,
  layout: Layout,
  file: { name: string; arrival: string; sha256: string; contentPath: string },
  maxWaitingRuns: number,
): Promise<PausedUpload | undefined> {
  const cut = await lastRecordCutShort(file.contentPath, layout);
  if (!cut) return undefined;
  const { stopped, shape } = cutShortWords(cut);
  const seenAs = { arrival: file.arrival, stagedSha256: file.sha256 };
  const { runs } = await unchangedWaits(ledger, file.name, seenAs);
  if (runs >= maxWaitingRuns) {
    const since = maxWaitingRuns === 0 ? ' (--max-waiting-runs 0: no run waits for the rest)' : ` and has not changed for ${runs} runs`;
    return {
      kind: 'incomplete',
      error: new RejectError(`${stopped}${since} (${shape}): it is incomplete`, { line: cut.line, field: 'incomplete' }),
    };
  }
  return {
    kind: 'wait',
    reason: `${stopped} (${shape}): it may still be uploading (unchanged for ${runs} of ${maxWaitingRuns} runs before it is rejected as incomplete)`,
    seenAs,
    line: cut.line,
  };
}
