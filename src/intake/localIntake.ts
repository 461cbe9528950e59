import { constants } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { UsageError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { FileGoneError, suffixedName, type Destination, type Intake, type IntakeEntry } from './intake.js';

const isGone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, constants.O_RDONLY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function sameInode(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  return sa.dev === sb.dev && sa.ino === sb.ino;
}

/**
 * Puts `src` under `dir` with a name that is free there, by hard link (which, unlike rename,
 * never replaces an existing file) and only then drops the intake name. Across filesystems
 * it copies to a hidden temporary name first, fsyncs, and links that.
 */
async function moveNoOverwrite(src: string, dir: string, name: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  let from = src;
  let temp: string | undefined;
  for (let n = 0; n < 10_000; n++) {
    const dest = join(dir, suffixedName(name, n));
    try {
      await link(from, dest);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') {
        // A hard link made by a move that was interrupted before it dropped the intake name.
        if (await sameInode(from, dest)) return finish(dest);
        continue;
      }
      if ((code === 'EXDEV' || code === 'EPERM') && temp === undefined) {
        temp = join(dir, `.${name}.settle-moving-${process.pid}`);
        await copyFile(src, temp, constants.COPYFILE_EXCL);
        await fsyncPath(temp);
        from = temp;
        n--;
        continue;
      }
      if (code === 'ENOENT' && from === src) throw new FileGoneError(name, { cause: err });
      throw err;
    }
    return finish(dest);
  }
  throw new Error(`no free name for ${name} in ${dir}`);

  async function finish(dest: string): Promise<string> {
    await fsyncPath(dir);
    faultPoint('mid-move'); // the file now has two names: the next run must not count it twice
    await unlink(src).catch((err) => {
      if (!isGone(err)) throw err;
    });
    if (temp) await unlink(temp);
    await fsyncPath(dirname(src));
    return dest;
  }
}

export interface LocalFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

export class LocalIntake implements Intake {
  readonly description: string;

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

  async close(): Promise<void> {}
}
