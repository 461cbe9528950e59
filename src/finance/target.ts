import type pg from 'pg';
import type { Layout } from '../layout/layout.js';

/**
 * What every statement on the finance database needs: the connection, the schema, and the
 * layout whose table the rows go to. FinanceDb is the one value of it the rest of the tool holds.
 */
export interface FinanceTarget {
  readonly client: pg.ClientBase;
  readonly schema: string;
  readonly layout: Layout;
}

/** One staged content to load (or reload) into the layout's table. */
export interface LoadRequest {
  stagedPath: string;
  /** the content's SHA-256: the file marker's key and the rows' source */
  sha256: string;
  /** the SHA-256 of the bytes as delivered (compressed, encrypted), kept beside the marker */
  deliveredSha256?: string;
  name: string;
  runId: string;
  /** rows copied so far, and the bytes of the staged content read for them */
  onProgress?: (rows: number, bytes: number) => void;
}

export type LoadResult =
  /** `skippedRows`: rows the layout's skipRows left out, counted and not loaded */
  | { outcome: 'loaded'; rows: number; skippedRows: number }
  /** the finance database already holds this content: its file marker says who loaded it */
  | { outcome: 'already-loaded'; fileName: string; runId: string; rows: number; deliveredSha256: string | null };
