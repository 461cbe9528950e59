import { constants } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { TransientError, UsageError } from '../errors.js';
import { FileGoneError, type Destination, type Intake, type IntakeEntry } from './intake.js';
import { moveNoOverwrite } from './moveNoOverwrite.js';

const isGone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

export interface LocalFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

export class LocalIntake implements Intake {
  readonly description: string;
  readonly mtimeIsLocalClock = true;

  constructor(private readonly folders: LocalFolders) {
    this.description = folders.intake;
  }

  static async open(folders: LocalFolders): Promise<LocalIntake> {
    const s = await stat(folders.intake).catch(() => null);
    if (!s?.isDirectory()) throw new UsageError(`intake folder ${folders.intake} does not exist or is not a folder`);
    return new LocalIntake(folders);
  }

  async list(): Promise<IntakeEntry[]> {
    const entries = await readdir(this.folders.intake, { withFileTypes: true });
    const files: IntakeEntry[] = [];
    for (const e of entries) {
      if (!e.isFile()) continue;
      const found = await this.stat(e.name);
      if (found) files.push(found);
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

  async read(name: string): Promise<Readable> {
    const path = join(this.folders.intake, name);
    const fh = await open(path, constants.O_RDONLY).catch((err) => {
      throw isGone(err) ? new FileGoneError(name, { cause: err }) : err;
    });
    return fh.createReadStream({ highWaterMark: 256 * 1024 });
  }

  route(name: string, to: Destination): Promise<string> {
    return moveNoOverwrite(join(this.folders.intake, name), this.folders[to], name);
  }

  async ensureReachable(): Promise<void> {
    const s = await stat(this.folders.intake).catch((err) => {
      throw new TransientError(`intake folder ${this.folders.intake} cannot be read: ${(err as Error).message}`, { cause: err });
    });
    if (!s.isDirectory()) throw new TransientError(`intake ${this.folders.intake} is no longer a folder`);
  }

  async close(): Promise<void> {}
}
