import { once } from 'node:events';
import { closeSync, constants, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { lstat, readdir, stat } from '../../syncFs.js';
import { FileGoneError, kindOf, NotRegularFileError, type FolderReader, type IntakeEntry, type PinnedFile } from '../intake.js';
import { pinOf } from './moveNoOverwrite.js';

export const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;
export const isGone = (err: unknown) => errCode(err) === 'ENOENT';

/** A local folder, read only: the archive for `audit`, `adopt` and reprocessing, and what an intake reads. */
export class LocalFolder implements FolderReader {
  readonly description: string;

  constructor(protected readonly dir: string) {
    this.description = dir;
  }

  async list(): Promise<IntakeEntry[]> {
    const entries = await readdir(this.dir, { withFileTypes: true });
    const files: IntakeEntry[] = [];
    for (const e of entries) {
      if (e.isDirectory()) continue;
      if (!e.isFile()) {
        const s = await lstat(join(this.dir, e.name)).catch(() => null);
        if (s) files.push({ name: e.name, size: s.size, mtimeMs: s.mtimeMs, notRegular: kindOf(s) });
        continue;
      }
      const found = await this.stat(e.name);
      if (found) files.push(found);
      // a name that is not UTF-8 cannot be reached through its decoded form: listed, for the run to count it
      else if (e.name.includes('\uFFFD')) files.push({ name: e.name, size: 0, mtimeMs: 0 });
    }
    return files;
  }

  async stat(name: string): Promise<IntakeEntry | null> {
    try {
      const s = await stat(join(this.dir, name));
      return s.isFile() ? { name, size: s.size, mtimeMs: s.mtimeMs } : null;
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  async pin(name: string): Promise<PinnedFile> {
    const path = join(this.dir, name);
    const refuse = (what: string, cause?: unknown) => new NotRegularFileError(name, what, { cause });
    // a look without opening first: a device or FIFO is never opened at all
    const before = await lstat(path).catch((err) => Promise.reject(isGone(err) ? new FileGoneError(name, { cause: err }) : err));
    if (!before.isFile()) throw refuse(kindOf(before));
    // swapped after that look: O_NOFOLLOW refuses a symlink (ELOOP), O_NONBLOCK keeps a FIFO from blocking
    let descriptor: number;
    try {
      descriptor = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      if (isGone(err)) throw new FileGoneError(name, { cause: err });
      if (errCode(err) === 'ELOOP') throw refuse('a symbolic link, not a regular file', err);
      if (errCode(err) === 'ENXIO') throw refuse('a socket or device, not a regular file', err);
      throw err;
    }
    const stats = fstatSync(descriptor);
    if (!stats.isFile()) {
      closeSync(descriptor);
      throw refuse(kindOf(stats));
    }
    return new LocalPinnedFile(descriptor, pinOf(stats));
  }

  async close(): Promise<void> {}
}

/** The file opened once: its descriptor is used on this thread (src/syncFs.ts), its stream read through the pool. */
class LocalPinnedFile implements PinnedFile {
  private streamed: ReturnType<typeof createReadStream> | undefined;
  private closed = false;

  constructor(
    private readonly fd: number,
    readonly pin: ReturnType<typeof pinOf>,
  ) {}

  get stream() {
    // 1 MiB reads for staging and hashing at about `openssl dgst`'s cost; a small file gets a small
    // buffer, so that a run over thousands of them does not allocate and collect 1 MiB for each
    const highWaterMark = Math.max(64 * 1024, Math.min(1024 * 1024, this.pin.size + 1));
    this.streamed ??= createReadStream('', { fd: this.fd, highWaterMark, start: 0, autoClose: false });
    return this.streamed;
  }

  readSyncAt(buffer: Buffer, position: number): number {
    return readSync(this.fd, buffer, 0, buffer.length, position);
  }

  async current() {
    return pinOf(fstatSync(this.fd));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.streamed) return closeSync(this.fd);
    // a stream, once destroyed, closes the descriptor itself (after any read still in the pool)
    if (!this.streamed.closed) {
      const ended = once(this.streamed, 'close');
      this.streamed.destroy();
      await ended;
    }
  }
}
