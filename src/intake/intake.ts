import type { Readable } from 'node:stream';
import type { Destination } from '../destination.js';
import type { DecidedSample } from './sampleCheck.js';

export interface IntakeEntry {
  name: string;
  size: number;
  /** modification time in ms since the epoch, as the source reports it */
  mtimeMs: number;
  /** set for an entry that is not a regular file (a symlink, FIFO, socket, device): what it is, in words */
  notRegular?: string;
}

/** An upload as listed, `size:mtime`: tells it from a later upload of the same name (the ledger keeps it as `arrival`). */
export const arrivalOf = (entry: Pick<IntakeEntry, 'size' | 'mtimeMs'>): string => `${entry.size}:${entry.mtimeMs}`;

/**
 * What one open file was when it was pinned: the bytes decided are those of this very file.
 * `dev` and `ino` exist only where the source has inodes (a local folder, not SFTP).
 */
export interface FilePin {
  size: number;
  mtimeMs: number;
  dev?: number;
  ino?: number;
}

/** One regular file opened once, never through a link; its bytes are read from that open file. */
export interface PinnedFile {
  readonly pin: FilePin;
  /** the file's bytes, from the open handle (read it once) */
  readonly stream: Readable;
  /**
   * Where the source is a local file: a synchronous read into the caller's buffer from
   * `position` on, returning the bytes read (0 at the end). Staging then reads, hashes and writes
   * each chunk on one thread, from one buffer. Use this or `stream`, not both.
   */
  readSyncAt?(buffer: Buffer, position: number): number;
  /** the open file's identity now: after reading, it differs from `pin` when the file was written meanwhile */
  current(): Promise<FilePin>;
  /** closes the handle; safe to call more than once */
  close(): Promise<void>;
}

/** The decided file at its move: its pin and the staged copy of exactly the bytes that were decided. */
export interface DecidedFile {
  pin: FilePin;
  stagedPath: string;
  sha256: string;
  /**
   * The run that moves it, as its move intent records it before the move: where a server's
   * RENAME replaces an existing target, the file lands under a name unique to this move
   * (`settle_x.<run>.csv`), and a later run finds it there by this.
   */
  movingRun: string;
  /**
   * Where the source has no inodes (SFTP): a sample of the bytes as they were read, to tell
   * before the move whether the name still holds them (sampleCheck.ts).
   */
  sample?: DecidedSample | undefined;
}

export interface RouteResult {
  /** where the decided bytes now are */
  location: string;
  /**
   * The intake name no longer held the decided file (the partner re-uploaded it, or is
   * writing it): the staged copy went to `location` and the new upload stays in the intake.
   */
  replaced: boolean;
}

/** A folder whose files are read and never moved: what `audit`, `adopt` and reprocessing need of the archive. */
export interface FolderReader {
  /** for messages and the ledger, e.g. `/data/settle/intake` or `sftp://ingest@sftp.example:22/in` */
  readonly description: string;
  /** every entry of the folder but folders: regular files, and the others marked `notRegular` */
  list(): Promise<IntakeEntry[]>;
  /** null when the file is gone (another run took it) */
  stat(name: string): Promise<IntakeEntry | null>;
  /**
   * Opens the file once, never following a link and never blocking: rejects with
   * NotRegularFileError for a symlink, FIFO, socket, device or folder (left untouched), with
   * FileGoneError when it is gone.
   */
  pin(name: string): Promise<PinnedFile>;
  close(): Promise<void>;
}

/**
 * Where settlement files come from and where they go when their outcome is final.
 *
 * The move contract every intake kind keeps (a kind is an entry of the registry in
 * openIntake.ts): `route` moves a decided file out of the intake without ever overwriting what
 * is at the destination, and only the very bytes pinned and decided (a file changed meanwhile
 * stays); a move is found again after a crash by `findLanded` (same name, bytes and size) and
 * its landing's shape by `landedShape`, so a run that died between the move and its record
 * settles it exactly once; a final folder that is an alias of the intake is refused at open.
 */
export interface Intake extends FolderReader {
  /**
   * Whether file mtimes come from this host's clock. Only then may an old mtime alone show
   * that a file is complete; a server's clock may be skewed, so there it must be watched.
   */
  readonly mtimeIsLocalClock: boolean;
  /**
   * Moves the decided file to its final folder without ever overwriting: on a name clash it
   * picks a unique suffix. When the name no longer holds the decided file, the staged copy
   * goes there instead and the name is left alone. Rejects with FileGoneError when it is gone.
   */
  route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult>;
  /**
   * Where a decided file landed in `to` when its move was begun and never recorded (a crash
   * between the two): the location route would have returned, or null when it is not there.
   */
  findLanded(name: string, to: Destination, sha256: string, size: number, movingRun: string): Promise<string | null>;
  /**
   * The name left the intake before its move and no run moved it (the partner removed it, or
   * the server hides what it became): the staged copy, exactly the decided bytes, lands in `to`
   * under a free name. Returns where.
   */
  keepStaged(name: string, to: Destination, decided: DecidedFile): Promise<string>;
  /** size:mtime of the regular file at a location a move returned; null when nothing regular is there */
  landedShape(location: string): Promise<string | null>;
  /** Throws a TransientError when the source cannot be reached (after its own bounded retries). */
  ensureReachable(): Promise<void>;
  /**
   * What a night does in a folder, tried and undone, for `doctor`: in the intake and in a final
   * folder that is there, a file of a name nobody uses created (never replacing) and removed;
   * for a missing final folder, a folder of such a name made beside where it goes and removed
   * (the first move there makes the real one). Says what it found; throws naming the folder,
   * the error and the fix. Nothing is left behind.
   */
  rehearse(role: 'intake' | Destination): Promise<string>;
}

/**
 * The file left the intake between listing and use. Another run took it (not an error), or
 * nobody did (the partner removed it, the server hides what it became): the run asks the
 * ledger which. The message carries the server's own answer when there is one.
 */
export class FileGoneError extends Error {
  /** set when the intake itself saw another live run holding the name (a local capture) */
  readonly byAnotherRun: boolean;

  constructor(name: string, options?: { cause?: unknown; byAnotherRun?: boolean }) {
    const answer = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(`${name} is no longer there${answer}`, options);
    this.name = 'FileGoneError';
    this.byAnotherRun = options?.byAnotherRun ?? false;
  }
}

/**
 * The name is not a regular file (a symlink, FIFO, socket, device or folder, perhaps swapped in
 * after listing), or changed between its look and its opening: refused, never followed or read.
 * The message never carries anything of what it points to.
 */
export class NotRegularFileError extends Error {
  constructor(name: string, what: string, options?: { cause?: unknown }) {
    super(`${name} is ${what}: refused, not followed, left untouched in the intake`, options);
    this.name = 'NotRegularFileError';
  }
}

/** What a non-regular entry is, in words, from its stats (node's and ssh2's share these methods). */
export function kindOf(stats: {
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isDirectory(): boolean;
  isBlockDevice(): boolean;
  isCharacterDevice(): boolean;
}): string {
  if (stats.isSymbolicLink()) return 'a symbolic link, not a regular file';
  if (stats.isFIFO()) return 'a FIFO, not a regular file';
  if (stats.isSocket()) return 'a socket, not a regular file';
  if (stats.isDirectory()) return 'a folder, not a regular file';
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return 'a device, not a regular file';
  return 'not a regular file';
}

/** Whether `now` is still the very file that was pinned: same inode where there are inodes, same size and mtime. */
export function isPinned(now: FilePin, pin: FilePin): boolean {
  if (pin.ino !== undefined && (now.ino !== pin.ino || now.dev !== pin.dev)) return false;
  return now.size === pin.size && now.mtimeMs === pin.mtimeMs;
}

const NAME_MAX = 255;

/**
 * `settle_x.csv` → `settle_x.2.csv`: the name on a clash, keeping the extension last. The stem
 * is shortened when needed so that the name still fits a folder entry (255 bytes).
 */
export function suffixedName(name: string, count: number): string {
  return count === 0 ? name : taggedName(name, String(count));
}

/** `settle_x.csv` → `settle_x.TAG.csv`, shortened as suffixedName is: a name unique to one move when TAG is. */
export function taggedName(name: string, tag: string): string {
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const tail = `.${tag}${ext}`;
  let cut = stem;
  while (cut.length > 0 && Buffer.byteLength(cut) + Buffer.byteLength(tail) > NAME_MAX) cut = [...cut].slice(0, -1).join('');
  return `${cut}${tail}`;
}

/** A name no partner and no run uses, for `doctor`'s rehearsal of a night in a folder (a dot-file: never taken). */
export function rehearsalName(): string {
  return `.settle-doctor-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}
