import { createHash } from 'node:crypto';
import { constants, createReadStream, type Stats } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { faultPoint } from '../../faults.js';
import { fsyncPath, link, lstat, mkdir, readdir, rename, rmdir, stat, unlink } from '../../syncFs.js';
import { FileGoneError, isPinned, suffixedName, type DecidedFile, type FilePin } from '../intake.js';
import { isMoverName, moverIsGone, moverName } from '../moverName.js';

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;
const isGone = (err: unknown) => errCode(err) === 'ENOENT';
/** a hard link across filesystems, or on one that has none */
const cannotLink = (err: unknown) => ['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP'].includes(errCode(err) ?? '');

export const pinOf = (stats: Stats): FilePin => ({ size: stats.size, mtimeMs: stats.mtimeMs, dev: stats.dev, ino: stats.ino });
const sameInode = (a: Stats, b: { dev?: number; ino?: number }) => a.dev === b.dev && a.ino === b.ino;

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Whether two paths are one folder: a symlink or a bind mount shows the same device and inode. */
export async function sameFolder(first: string, second: string): Promise<boolean> {
  const [firstStat, secondStat] = await Promise.all([stat(first), stat(second).catch((err) => (isGone(err) ? null : Promise.reject(err)))]);
  return secondStat !== null && sameInode(firstStat, secondStat);
}

/**
 * Links `from` into `dir` under `name`, or `name` with a suffix when that is taken: a hard
 * link, unlike rename, never replaces an existing file. A taken name for which `isEarlierLanding`
 * holds is where an interrupted move of this very file already put it, and is reused.
 */
async function linkUnderFreeName(from: string, dir: string, name: string, isEarlierLanding: (dest: string) => Promise<boolean>) {
  for (let n = 0; n < 10_000; n++) {
    const dest = join(dir, suffixedName(name, n));
    try {
      await link(from, dest);
      return dest;
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
      if (await isEarlierLanding(dest)) return dest;
    }
  }
  throw new Error(`no free name for ${name} in ${dir}`);
}

/** `from` back under its intake name; under a suffixed one when an even newer upload took that name meanwhile. */
async function putBack(from: string, intakeDir: string, name: string): Promise<string> {
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const target = join(intakeDir, suffixedName(name, attempt));
    try {
      await link(from, target);
    } catch (err) {
      if (errCode(err) === 'EEXIST') {
        if (sameInode(await lstat(target), await lstat(from))) break;
        continue;
      }
      if (!cannotLink(err)) throw err;
      // no hard links here: a rename after a look, the best this filesystem offers
      if (
        await lstat(target).then(
          () => true,
          (e) => (isGone(e) ? false : Promise.reject(e)),
        )
      )
        continue;
      await rename(from, target);
      return target;
    }
    await unlink(from);
    return target;
  }
  throw new Error(`no free name for ${name} in ${intakeDir}`);
}

/**
 * Dead movers' copies in `dir` are swept once per process: a partial copy (one name) is
 * removed; a complete one that already has its final name (two names) is kept, since it is how
 * the next move of that file recognises where the interrupted one landed.
 */
const swept = new Set<string>();
async function sweepDeadCopies(dir: string): Promise<void> {
  if (swept.has(dir)) return;
  swept.add(dir);
  for (const entry of await readdir(dir)) {
    if (!isMoverName(entry) || !moverIsGone(entry)) continue;
    const s = await lstat(join(dir, entry)).catch(() => null);
    if (s?.isFile() && s.nlink === 1) await unlink(join(dir, entry)).catch(() => undefined);
  }
}

/** A dead mover's copy in `dir` that `dest` is another name of, holding the decided bytes: an interrupted move's landing. */
async function leftoverCopyOf(dir: string, dest: string, decided: DecidedFile): Promise<string | null> {
  const d = await lstat(dest);
  if (!d.isFile() || d.nlink < 2 || d.size !== decided.pin.size) return null;
  for (const entry of await readdir(dir)) {
    if (!isMoverName(entry) || !moverIsGone(entry)) continue;
    const s = await lstat(join(dir, entry)).catch(() => null);
    if (s && sameInode(s, d) && (await sha256File(dest)) === decided.sha256) return join(dir, entry);
  }
  return null;
}

/**
 * The staged copy (exactly the decided bytes) into `dir` under a free name, through a private
 * temporary whose name is this mover's own. The temporaries (ours and a reused leftover) are
 * removed by the caller once the intake name is settled: until then they mark the landing.
 */
async function copyStaged(decided: DecidedFile, dir: string, name: string): Promise<{ dest: string; temps: string[] }> {
  await sweepDeadCopies(dir);
  const temp = join(dir, moverName());
  try {
    await copyFile(decided.stagedPath, temp, constants.COPYFILE_EXCL);
    await fsyncPath(temp);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  const temps = [temp];
  const dest = await linkUnderFreeName(temp, dir, name, async (d) => {
    const leftover = await leftoverCopyOf(dir, d, decided);
    if (leftover) temps.push(leftover);
    return leftover !== null;
  });
  return { dest, temps };
}

/**
 * The intake name, captured: renamed into a private folder of this mover inside the intake.
 * The rename is atomic, so whatever the name held at that instant (the decided file or a
 * re-upload that replaced it) is now out of the partner's reach and can be looked at in peace;
 * a re-upload landing later simply creates the name anew.
 */
async function capture(intakeDir: string, name: string): Promise<{ dir: string; path: string }> {
  const dir = join(intakeDir, moverName());
  await mkdir(dir, { mode: 0o700 });
  const path = join(dir, name);
  try {
    await rename(join(intakeDir, name), path);
  } catch (err) {
    await rmdir(dir).catch(() => undefined);
    if (!isGone(err)) throw err;
    throw new FileGoneError(name, { cause: err, byAnotherRun: await capturedByLiveMover(intakeDir, name) });
  }
  return { dir, path };
}

/** Whether a live mover of this host holds `name` captured right now (it is moving that very file). */
async function capturedByLiveMover(intakeDir: string, name: string): Promise<boolean> {
  for (const e of await readdir(intakeDir, { withFileTypes: true }).catch(() => [])) {
    if (!e.isDirectory() || !isMoverName(e.name) || moverIsGone(e.name)) continue;
    if (
      await lstat(join(intakeDir, e.name, name)).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

/**
 * Moves the decided file `name` from `intakeDir` into `dir` without ever overwriting or
 * deleting a file that is not provably the decided one. The name is captured first; the final
 * name exists (and is fsynced) before the captured one is dropped, and it is dropped only when
 * it is still the pinned file (same inode, size and mtime). Otherwise the staged copy lands in
 * `dir` and the capture goes back to the intake as a new arrival (`replaced`). A run killed
 * half-way leaves the capture in a dead mover's folder, which the next run puts back
 * (recoverInterruptedMoves), and the landing, which the next move of that file reuses.
 */
export async function moveNoOverwrite(
  intakeDir: string,
  name: string,
  dir: string,
  decided: DecidedFile,
): Promise<{ path: string; replaced: boolean }> {
  await mkdir(dir, { recursive: true });
  // linking a file onto itself and then dropping "the intake name" would delete it
  if (await sameFolder(intakeDir, dir)) throw new Error(`refusing to move ${name} into ${dir}: it is the intake folder itself`);
  const held = await capture(intakeDir, name);
  try {
    let ours = isPinned(pinOf(await lstat(held.path)), decided.pin);
    let dest: string | undefined;
    let temps: string[] = [];
    if (ours) {
      dest = await linkUnderFreeName(held.path, dir, name, async (d) => sameInode(await lstat(d), decided.pin)).catch((err) => {
        if (cannotLink(err)) return undefined;
        throw err;
      });
    }
    if (dest === undefined) ({ dest, temps } = await copyStaged(decided, dir, name));
    await fsyncPath(dir);
    faultPoint('mid-move', name); // the file has two names now: the next run must finish, not copy again
    // the last look before the name is dropped: an upload still writing into this very file shows here
    if (ours && !isPinned(pinOf(await lstat(held.path)), decided.pin)) {
      ours = false;
      if (temps.length === 0) {
        await unlink(dest); // a second name of the changed file, which keeps its captured name
        ({ dest, temps } = await copyStaged(decided, dir, name));
        await fsyncPath(dir);
      }
    }
    if (ours) await unlink(held.path);
    else await putBack(held.path, intakeDir, name);
    for (const temp of temps) await unlink(temp).catch((e) => (isGone(e) ? undefined : Promise.reject(e)));
    await fsyncPath(intakeDir);
    return { path: dest, replaced: !ours };
  } catch (err) {
    // a failed move (a full or unwritable final folder) leaves the file where it was, for the next run
    await putBack(held.path, intakeDir, name).catch(() => undefined);
    throw err;
  } finally {
    await rmdir(held.dir).catch(() => undefined);
  }
}

/**
 * The staged copy alone into `dir` under a free name: the intake name is gone and no run moved
 * it, yet the decided bytes must be kept.
 */
export async function landStagedCopy(decided: DecidedFile, dir: string, name: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const { dest, temps } = await copyStaged(decided, dir, name);
  await fsyncPath(dir);
  for (const t of temps) await unlink(t).catch((e) => (isGone(e) ? undefined : Promise.reject(e)));
  return dest;
}

/**
 * Puts back what dead movers captured and never dropped (a run killed during a move): every
 * capture returns to its intake name, where the next look at it finishes its move. Returns the
 * names put back.
 */
export async function recoverInterruptedMoves(intakeDir: string): Promise<string[]> {
  const restored: string[] = [];
  for (const e of await readdir(intakeDir, { withFileTypes: true })) {
    if (!e.isDirectory() || !isMoverName(e.name) || !moverIsGone(e.name)) continue;
    const dir = join(intakeDir, e.name);
    for (const name of await readdir(dir)) restored.push(await putBack(join(dir, name), intakeDir, name));
    await rmdir(dir);
  }
  if (restored.length > 0) await fsyncPath(intakeDir);
  return restored;
}
