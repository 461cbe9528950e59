import type { Readable } from 'node:stream';

export interface IntakeEntry {
  name: string;
  size: number;
  /** modification time in ms since the epoch, as the source reports it */
  mtimeMs: number;
}

export type Destination = 'archive' | 'duplicates' | 'rejected';

/** Where settlement files come from and where they go when their outcome is final. */
export interface Intake {
  /** for messages and the ledger, e.g. `/data/settle/intake` or `sftp://ingest@sftp.example:22/in` */
  readonly description: string;
  /**
   * Whether file mtimes come from this host's clock. Only then may an old mtime alone show
   * that a file is complete; a server's clock may be skewed, so there it must be watched.
   */
  readonly mtimeIsLocalClock: boolean;
  /** plain files in the intake folder, unfiltered */
  list(): Promise<IntakeEntry[]>;
  /** null when the file is gone (another run took it) */
  stat(name: string): Promise<IntakeEntry | null>;
  /** a stream of the file's bytes; rejects with FileGoneError when it is gone */
  read(name: string): Promise<Readable>;
  /**
   * Moves the file to its final folder without ever overwriting: on a name clash it picks a
   * unique suffix. Returns where it now is. Rejects with FileGoneError when it is gone.
   */
  route(name: string, to: Destination): Promise<string>;
  /** Throws a TransientError when the source cannot be reached (after its own bounded retries). */
  ensureReachable(): Promise<void>;
  close(): Promise<void>;
}

/** The file left the intake between listing and use: another run took it. Not an error. */
export class FileGoneError extends Error {
  constructor(name: string, options?: { cause?: unknown }) {
    super(`${name} is no longer in the intake`, options);
    this.name = 'FileGoneError';
  }
}

/** `settle_x.csv` → `settle_x.2.csv`: the name on a clash, keeping the extension last. */
export function suffixedName(name: string, n: number): string {
  if (n === 0) return name;
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${name.slice(0, dot)}.${n}${name.slice(dot)}` : `${name}.${n}`;
}
