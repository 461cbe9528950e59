import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { copyFile, link, mkdir, open, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { faultPoint } from '../faults.js';
import { FileGoneError, suffixedName } from './intake.js';

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;

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

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function sameContent(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  return sa.size === sb.size && (await sha256Of(a)) === (await sha256Of(b));
}

/**
 * Links `from` into `dir` under `name`, or `name` with a suffix when that is taken: a hard
 * link, unlike rename, never replaces an existing file. A name that is already a link to
 * `from` is an earlier, interrupted move of this very file, and is reused.
 */
async function linkUnderFreeName(from: string, dir: string, name: string): Promise<string> {
  for (let n = 0; n < 10_000; n++) {
    const dest = join(dir, suffixedName(name, n));
    try {
      await link(from, dest);
      return dest;
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
      if (await sameInode(from, dest)) return dest;
    }
  }
  throw new Error(`no free name for ${name} in ${dir}`);
}

/**
 * Moves `src` into `dir` without ever overwriting or deleting a file: the new name exists
 * (and is fsynced) before the intake name is dropped. Across filesystems the bytes go to a
 * hidden `.NAME.settle-moving` copy first; a run killed half-way leaves either that partial
 * copy (discarded next time) or a complete one already linked (reused), never two counted copies.
 */
export async function moveNoOverwrite(src: string, dir: string, name: string): Promise<string> {
  // linking a file onto itself and then dropping "the intake name" would delete it
  if (resolve(dir) === resolve(dirname(src))) throw new Error(`refusing to move ${name} into its own folder ${dir}`);
  await mkdir(dir, { recursive: true });
  let dest: string;
  let temp: string | undefined;
  try {
    dest = await linkUnderFreeName(src, dir, name);
  } catch (err) {
    const code = errCode(err);
    if (code === 'ENOENT') throw new FileGoneError(name, { cause: err });
    if (code !== 'EXDEV' && code !== 'EPERM') throw err;
    temp = join(dir, `.${name}.settle-moving`);
    // a complete copy left by an interrupted move is reused; a partial one is replaced
    if (!(await sameContent(temp, src).catch(() => false))) {
      await unlink(temp).catch((e) => {
        if (errCode(e) !== 'ENOENT') throw e;
      });
      await copyFile(src, temp, constants.COPYFILE_EXCL).catch((e) => {
        throw errCode(e) === 'ENOENT' ? new FileGoneError(name, { cause: e }) : e;
      });
      await fsyncPath(temp);
    }
    dest = await linkUnderFreeName(temp, dir, name);
  }
  await fsyncPath(dir);
  faultPoint('mid-move'); // the file has two names now: the next run must finish, not copy again
  await unlink(src).catch((err) => {
    if (errCode(err) !== 'ENOENT') throw err;
  });
  if (temp) await unlink(temp);
  await fsyncPath(dirname(src));
  return dest;
}
