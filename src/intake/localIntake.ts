import { constants } from 'node:fs';
import { lstat, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { TransientError, UsageError } from '../errors.js';
import {
  FileGoneError,
  kindOf,
  NotRegularFileError,
  type DecidedFile,
  type Destination,
  type Intake,
  type IntakeEntry,
  type PinnedFile,
  type RouteResult,
} from './intake.js';
import { findLanded } from './findLanded.js';
import { sha256OfPath } from './sha256Of.js';
import { moveNoOverwrite, pinOf, recoverInterruptedMoves, sameFolder } from './moveNoOverwrite.js';

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;
const isGone = (err: unknown) => errCode(err) === 'ENOENT';

export interface LocalFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/** Refuses a final folder that is the intake under another path (a symlink to it, a bind mount of it). */
export async function refuseIntakeAliases(f: LocalFolders): Promise<void> {
  for (const name of ['archive', 'duplicates', 'rejected'] as const) {
    if (await sameFolder(f.intake, f[name])) {
      throw new UsageError(`--${name} ${f[name]} is the intake folder ${f.intake} under another path: it must be a folder of its own`);
    }
  }
}

export class LocalIntake implements Intake {
  readonly description: string;
  readonly mtimeIsLocalClock = true;
  private recovered = false;

  /** `runLog`: set for the intake of a run, the only command that moves files out of it */
  constructor(
    private readonly folders: LocalFolders,
    private readonly runLog?: Logger,
  ) {
    this.description = folders.intake;
  }

  static async open(folders: LocalFolders, runLog?: Logger): Promise<LocalIntake> {
    const s = await stat(folders.intake).catch(() => null);
    if (!s?.isDirectory()) throw new UsageError(`intake folder ${folders.intake} does not exist or is not a folder`);
    return new LocalIntake(folders, runLog);
  }

  async list(): Promise<IntakeEntry[]> {
    if (!this.recovered && this.runLog) {
      // a run's first look puts back what a killed run captured while moving it
      this.recovered = true;
      for (const name of await recoverInterruptedMoves(this.folders.intake)) {
        this.runLog.warn({ event: 'move-interrupted', file: name }, 'put back in the intake after a run was killed while moving it');
      }
    }
    const entries = await readdir(this.folders.intake, { withFileTypes: true });
    const files: IntakeEntry[] = [];
    for (const e of entries) {
      if (e.isDirectory()) continue;
      if (!e.isFile()) {
        const s = await lstat(join(this.folders.intake, e.name)).catch(() => null);
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
      const s = await stat(join(this.folders.intake, name));
      return s.isFile() ? { name, size: s.size, mtimeMs: s.mtimeMs } : null;
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  async pin(name: string): Promise<PinnedFile> {
    const path = join(this.folders.intake, name);
    const refuse = (what: string, cause?: unknown) => new NotRegularFileError(name, what, { cause });
    // a look without opening first: a device or FIFO is never opened at all
    const before = await lstat(path).catch((err) => Promise.reject(isGone(err) ? new FileGoneError(name, { cause: err }) : err));
    if (!before.isFile()) throw refuse(kindOf(before));
    // swapped after that look: O_NOFOLLOW refuses a symlink (ELOOP), O_NONBLOCK keeps a FIFO from blocking
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err) => {
      if (isGone(err)) throw new FileGoneError(name, { cause: err });
      if (errCode(err) === 'ELOOP') throw refuse('a symbolic link, not a regular file', err);
      if (errCode(err) === 'ENXIO') throw refuse('a socket or device, not a regular file', err);
      throw err;
    });
    const s = await fh.stat();
    if (!s.isFile()) {
      await fh.close();
      throw refuse(kindOf(s));
    }
    return new LocalPinnedFile(fh, pinOf(s));
  }

  async route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult> {
    const r = await moveNoOverwrite(this.folders.intake, name, this.folders[to], decided);
    return { location: r.path, replaced: r.replaced };
  }

  findLanded(name: string, to: Destination, sha256: string, size: number): Promise<string | null> {
    const dir = this.folders[to];
    return findLanded(name, sha256, size, {
      size: async (candidate) => {
        const s = await lstat(join(dir, candidate)).catch((err) => (isGone(err) ? null : Promise.reject(err)));
        return s?.isFile() ? s.size : null;
      },
      sha256: (candidate) => sha256OfPath(join(dir, candidate)),
      location: (candidate) => join(dir, candidate),
    });
  }

  async landedShape(location: string): Promise<string | null> {
    const s = await lstat(location).catch((err) => (isGone(err) ? null : Promise.reject(err)));
    return s?.isFile() ? `${s.size}:${s.mtimeMs}` : null;
  }

  async ensureReachable(): Promise<void> {
    const s = await stat(this.folders.intake).catch((err) => {
      throw new TransientError(`intake folder ${this.folders.intake} cannot be read: ${(err as Error).message}`, { cause: err });
    });
    if (!s.isDirectory()) throw new TransientError(`intake ${this.folders.intake} is no longer a folder`);
  }

  async close(): Promise<void> {}
}

class LocalPinnedFile implements PinnedFile {
  readonly stream;
  private closed = false;

  constructor(
    private readonly fh: FileHandle,
    readonly pin: ReturnType<typeof pinOf>,
  ) {
    // 1 MiB reads for staging and hashing at about `openssl dgst`'s cost; a small file gets a small
    // buffer, so that a run over thousands of them does not allocate and collect 1 MiB for each
    const highWaterMark = Math.max(64 * 1024, Math.min(1024 * 1024, pin.size + 1));
    this.stream = fh.createReadStream({ highWaterMark, start: 0, autoClose: false });
  }

  async current() {
    return pinOf(await this.fh.stat());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stream.destroy();
    await this.fh.close().catch(() => undefined);
  }
}
