import type { DecidedFile } from '../intake/intake.js';
import type { FinanceDb } from '../finance/financeDb.js';
import type { ClaimOwner } from '../owner.js';
import type { StagedContent } from '../delivery/stagedContent.js';
import type { RejectError } from '../errors.js';
import type { MoveContext } from './moveDecided.js';

/** What deciding, loading and moving one file share with the run they are part of. */
export interface RunContext extends MoveContext {
  finance: FinanceDb;
  owner: ClaimOwner;
  claimLeaseSeconds: number;
  /** false when this host's clock is off the ledger's past the limit: no other host's claim is taken over by its lease */
  clockTrusted: boolean;
  /** rows as they stream into the database, for a progress line on a terminal */
  onProgress?: ((progress: LoadProgress) => void) | undefined;
  /** set when the run must stop after the file in hand: the finance database went away, or a stop was asked for */
  abortedBy?: string;
}

/** A load in progress: rows copied, and the bytes of the file's content read for them. */
export interface LoadProgress {
  file: string;
  rows: number;
  bytes: number;
  totalBytes: number;
  startedAt: number;
}

/** The staged delivered bytes (what moves when the intake name was replaced) and the content inside them (what loads). */
export type StagedDelivery = DecidedFile & {
  content: StagedContent;
  /** a reject decided before the claim (an upload that stopped mid-line and never went on): claimed, rejected with it and moved */
  refusal?: RejectError;
};

export { DESTINATION } from '../destination.js';
