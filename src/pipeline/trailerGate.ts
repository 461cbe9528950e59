import type { RunLedger } from '../ledger/ledger.js';
import { runsWaiting } from '../ledger/waitingFiles.js';
import type { Layout } from '../layout/model/layout.js';
import { endsWithTrailer, missingFooter, missingTotalRecord } from '../layout/reader/trailer.js';
import { quoteValue } from '../layout/values/quoteValue.js';

/**
 * A layout with a trailer, a free-text footer, or control total records (a summary at the top,
 * footers at the end): a staged file that does not carry them (or a footer without the figures
 * the layout reads there) may still be uploading, so
 * it is not ready (left in the intake, counted) for up to `maxWaitingRuns` runs; after that it
 * goes on, and the reader rejects it as incomplete, naming its last line. Returns the reason to
 * wait, or undefined to go on.
 */
export async function waitForTrailer(
  ledger: RunLedger,
  layout: Layout,
  name: string,
  stagedPath: string,
  maxWaitingRuns: number,
): Promise<string | undefined> {
  const missing =
    layout.trailer && !(await endsWithTrailer(stagedPath, layout))
      ? `no trailer line (${quoteValue(layout.trailer.firstField)}) at its end yet`
      : ((layout.footer ? await missingFooter(stagedPath, layout).then((what) => (what ? `${what} yet` : undefined)) : undefined) ??
        (await missingTotalRecord(stagedPath, layout).then((what) => (what ? `no ${what} yet` : undefined))));
  if (!missing) return undefined;
  const { runs } = await runsWaiting(ledger, name);
  if (runs >= maxWaitingRuns) return undefined;
  return `${missing}: it may still be uploading (waited ${runs} of ${maxWaitingRuns} runs before it is rejected)`;
}
