import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Destination } from '../../src/destination.js';
import {
  FileGoneError,
  isPinned,
  NotRegularFileError,
  suffixedName,
  taggedName,
  type DecidedFile,
  type FilePin,
  type Intake,
  type IntakeEntry,
  type PinnedFile,
  type RouteResult,
} from '../../src/intake/intake.js';

/** One file of the in-memory intake: its bytes and the mtime the listing shows. */
export interface MemoryFile {
  bytes: Buffer;
  mtimeMs: number;
  /** not a regular file: what it is, in words (a symlink, a FIFO) */
  notRegular?: string;
}

/** What a test does to the intake at a moment of the run: e.g. rewrite a file while it is read. */
export interface IntakeEvents {
  /** after a file was opened (pinned), before its bytes are read */
  onPin?: (name: string, intake: MemoryIntake) => void;
  /** before a file leaves the intake for its final folder */
  onRoute?: (name: string, to: Destination, intake: MemoryIntake) => void;
}

let mtimes = 1_700_000_000_000;

/**
 * The Intake interface held in memory, for the pipeline's unit tests: a folder of names and
 * bytes, and the three final folders. It keeps the move contract of src/intake/intake.ts: a
 * move never overwrites (a clash gets `name.N.ext`), a name that no longer holds the decided
 * bytes is left alone while the staged copy lands instead, a name gone is FileGoneError. Every
 * mtime is its own millisecond, so that a rewrite always shows in size:mtime.
 */
export class MemoryIntake implements Intake {
  readonly description = 'memory://intake';
  readonly mtimeIsLocalClock = true;
  readonly files = new Map<string, MemoryFile>();
  readonly folders: Record<Destination, Map<string, Buffer>> = { archive: new Map(), duplicates: new Map(), rejected: new Map() };
  /** set: the source is away (every listing and look fails) */
  unreachable: string | undefined;
  events: IntakeEvents = {};

  /** Puts a file in the intake (a partner's upload), with a fresh mtime. */
  put(name: string, bytes: Buffer | string, extra: Partial<MemoryFile> = {}): MemoryFile {
    const file = { bytes: Buffer.from(bytes), mtimeMs: ++mtimes, ...extra };
    this.files.set(name, file);
    return file;
  }

  /** The names in each folder, sorted: what a test asserts after a run. */
  where(): Record<'intake' | Destination, string[]> {
    const names = (m: Map<string, unknown>) => [...m.keys()].sort();
    return {
      intake: names(this.files),
      archive: names(this.folders.archive),
      duplicates: names(this.folders.duplicates),
      rejected: names(this.folders.rejected),
    };
  }

  private entry(name: string, file: MemoryFile): IntakeEntry {
    return { name, size: file.bytes.length, mtimeMs: file.mtimeMs, ...(file.notRegular ? { notRegular: file.notRegular } : {}) };
  }

  private reach(): void {
    if (this.unreachable) throw new Error(this.unreachable);
  }

  async list(): Promise<IntakeEntry[]> {
    this.reach();
    return [...this.files].map(([name, file]) => this.entry(name, file));
  }

  async stat(name: string): Promise<IntakeEntry | null> {
    this.reach();
    const file = this.files.get(name);
    return file ? this.entry(name, file) : null;
  }

  async pin(name: string): Promise<PinnedFile> {
    this.reach();
    const file = this.files.get(name);
    if (!file) throw new FileGoneError(name);
    if (file.notRegular) throw new NotRegularFileError(name, file.notRegular);
    const pin: FilePin = { size: file.bytes.length, mtimeMs: file.mtimeMs };
    const bytes = file.bytes; // the open file's bytes: a rewrite after this gives a new file
    this.events.onPin?.(name, this);
    const now = () => this.files.get(name);
    return {
      pin,
      stream: Readable.from([bytes]),
      current: async () => {
        const present = now();
        return present ? { size: present.bytes.length, mtimeMs: present.mtimeMs } : pin;
      },
      close: async () => undefined,
    };
  }

  private freeName(to: Destination, name: string): string {
    for (let n = 0; ; n++) if (!this.folders[to].has(suffixedName(name, n))) return suffixedName(name, n);
  }

  private land(to: Destination, name: string, bytes: Buffer): string {
    const landed = this.freeName(to, name);
    this.folders[to].set(landed, bytes);
    return `${to}/${landed}`;
  }

  async route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult> {
    this.reach();
    this.events.onRoute?.(name, to, this);
    const file = this.files.get(name);
    if (!file) throw new FileGoneError(name);
    if (!isPinned({ size: file.bytes.length, mtimeMs: file.mtimeMs }, decided.pin)) {
      return { location: this.land(to, name, await readFile(decided.stagedPath)), replaced: true };
    }
    this.files.delete(name);
    return { location: this.land(to, name, file.bytes), replaced: false };
  }

  async findLanded(name: string, to: Destination, sha256: string, size: number, movingRun: string): Promise<string | null> {
    for (const candidate of [taggedName(name, movingRun), ...[0, 1, 2, 3].map((n) => suffixedName(name, n))]) {
      const bytes = this.folders[to].get(candidate);
      if (bytes && bytes.length === size && createHash('sha256').update(bytes).digest('hex') === sha256) return `${to}/${candidate}`;
    }
    return null;
  }

  async keepStaged(name: string, to: Destination, decided: DecidedFile): Promise<string> {
    return this.land(to, name, await readFile(decided.stagedPath));
  }

  async landedShape(location: string): Promise<string | null> {
    const [to, name] = location.split('/') as [Destination, string];
    const bytes = this.folders[to]?.get(name);
    return bytes ? `${bytes.length}:0` : null;
  }

  async rehearse(role: 'intake' | Destination): Promise<string> {
    this.reach();
    return `${role} (in memory)`;
  }

  async ensureReachable(): Promise<void> {
    this.reach();
  }

  async close(): Promise<void> {}
}
