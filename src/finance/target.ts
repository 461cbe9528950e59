import type { CheckedTotal } from '../layout/reader/totalsCheck.js';
import type pg from 'pg';
import type { Layout } from '../layout/model/layout.js';

/**
 * What every statement on the finance database needs: the connection, the schema, and the
 * layout whose table the rows go to. FinanceDb is the one value of it the rest of the tool holds.
 */
export interface FinanceTarget {
  readonly client: pg.ClientBase;
  readonly schema: string;
  readonly layout: Layout;
}

/** How a file's rows are sent: as CSV text the server parses, or in their binary wire forms (copyBinary.ts). */
export type CopyFormat = 'text' | 'binary';

/** One staged content to load (or reload) into the layout's table. */
export interface LoadRequest {
  stagedPath: string;
  /** the content's SHA-256: the file marker's key and the rows' source */
  sha256: string;
  /** the SHA-256 of the bytes as delivered (compressed, encrypted), kept beside the marker */
  deliveredSha256?: string;
  name: string;
  /** when the file was delivered (ms since the epoch): a layout may take the year of its dates from it */
  deliveredAt?: number;
  runId: string;
  /** rows copied so far, and the bytes of the staged content read for them */
  onProgress?: (rows: number, bytes: number) => void;
  /** how the rows are sent (copyRows.ts); unset: the faster for the file (binary for a large one) */
  format?: CopyFormat;
}

/** What the reader is told about a file besides its bytes: its name and when it was delivered. */
export const readContextOf = (req: Pick<LoadRequest, 'name' | 'deliveredAt'>): { fileName: string; deliveredAt?: number } => ({
  fileName: req.name,
  ...(req.deliveredAt !== undefined ? { deliveredAt: req.deliveredAt } : {}),
});

export type LoadResult =
  /** `skippedRows`: rows the layout's skipRows left out, counted and not loaded; `format`: how they went (none for no rows) */
  /** `totals`: the layout's control totals the file proved (layout/reader/totalsCheck.ts) */
  /** `rows`: new rows, now in the table; `seenBefore`: rows identical to rows another file loaded, not loaded again */
  | { outcome: 'loaded'; rows: number; seenBefore: number; skippedRows: number; format?: CopyFormat; totals?: CheckedTotal[] }
  /** the finance database already holds this content: its file marker says who loaded it */
  | { outcome: 'already-loaded'; fileName: string; runId: string; rows: number; deliveredSha256: string | null };
