import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { userInfo } from 'node:os';
import { lstat, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { faultPoint } from './faults.js';
import { privateFileMode, worldWritableFolder } from './privateFiles.js';

/**
 * Every file a command writes for a person or a tool (the metrics file, the deliveries page, an
 * evidence pack) goes through writeFileAtomically: whole or not at all, and never through a
 * link another user planted (docs/DESIGN.md, invariant 10). The log, appended to line by line, is
 * opened by openAppendOnly under the same checks.
 */

/** Created new, never through a link: a name that exists, a link included, is an error, not a file to write into. */
const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export interface AtomicWrite {
  /** the file's mode (less the umask) */
  mode: number;
  /** how the user named it, for a refusal: `--html`, `metrics file` */
  what: string;
}

const notFound = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Refuses a folder that every user may write to and that is not sticky, the file's own or any
 * above it: anybody there could rename our file away or put a link in its place after we wrote
 * it (or swap a folder on the way for a link to another), so no check of ours can hold. A
 * sticky one (/tmp) is allowed: there only an entry's owner may remove or rename it.
 */
export function assertFolderForWrites(path: string, what: string): void {
  for (let entry = resolve(path); dirname(entry) !== entry; entry = dirname(entry)) {
    const open = worldWritableFolder(entry);
    if (open && !open.sticky) {
      throw new UsageError(
        `${what} ${path} is ${open.dir === dirname(resolve(path)) ? 'in' : 'under'} ${open.dir}, which every user may write to and which is not sticky: anybody could swap the file; write it to a folder of your own (or chmod +t ${open.dir})`,
      );
    }
  }
}

/**
 * What may stand at the target name: nothing, or a regular file, and in a sticky shared folder
 * only one of ours. A link there is refused rather than replaced: whoever put it meant the
 * file to be somewhere else, and writing to where it points is what must never happen.
 */
async function assertReplaceable(target: string, path: string, what: string): Promise<void> {
  const existing = await lstat(target).catch((err: unknown) => {
    if (notFound(err)) return undefined;
    throw err;
  });
  if (!existing) return;
  if (existing.isSymbolicLink()) throw new UsageError(`${what} ${path} is a symbolic link: name the file itself, not a link to it`);
  if (!existing.isFile()) throw new UsageError(`${what} ${path} exists and is not a regular file`);
  const uid = process.getuid?.();
  if (worldWritableFolder(target)?.sticky && uid !== undefined && existing.uid !== uid) {
    throw new UsageError(
      `${what} ${path} belongs to another user (uid ${existing.uid}) in the shared folder ${dirname(target)}: not replaced; remove it or choose another name`,
    );
  }
}

/** A temporary name nobody can guess, so none can be planted for it (a link is refused anyway by O_EXCL|O_NOFOLLOW). */
function temporaryName(target: string): string {
  // cut so that a long target name still leaves room for the suffix within NAME_MAX (255)
  return join(dirname(target), `.${basename(target).slice(0, 200)}.${randomBytes(8).toString('hex')}.tmp`);
}

/** The folder's entry for the renamed file reaches the disk too: after a crash the file is there, old or new, never missing. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `data` to `path` so that a reader sees the old file or the new one whole, never half
 * of it, and nothing is ever written through a link: the folder is checked, the target must be
 * a regular file of ours (or absent), and the bytes go to a new file of an unguessable name
 * (O_EXCL|O_NOFOLLOW), synced, then renamed over the target; a rename replaces the name
 * itself, whatever was put there meanwhile, and never follows it.
 */
export async function writeFileAtomically(path: string, data: string | Uint8Array, opts: AtomicWrite): Promise<void> {
  const target = resolve(path);
  assertFolderForWrites(target, opts.what);
  await assertReplaceable(target, path, opts.what);
  // a test plants links here, at the temporary names of old and at the target itself
  faultPoint('before-write', target);
  const temp = temporaryName(target);
  const handle = await open(temp, NEW_FILE, opts.mode);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncFolder(dirname(target));
}

/**
 * The log file, opened to append to (created private when missing, its folders too), in a folder
 * checked as above, never through a link (O_NOFOLLOW: a link there is an error), and in a
 * sticky shared folder only a file of ours. O_NONBLOCK so that a FIFO planted there fails at
 * once instead of waiting for a reader; it changes nothing for a regular file.
 */
export function openAppendOnly(path: string, what: string): number {
  assertFolderForWrites(path, what);
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const fd = openSync(path, APPEND | constants.O_CREAT, privateFileMode(path));
  refuseAppendTarget(fd, path, what);
  return fd;
}

const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** What openAppendOnly refuses once it has the file open: closed, and the refusal thrown. */
function refuseAppendTarget(fd: number, path: string, what: string): void {
  const file = fstatSync(fd);
  const uid = process.getuid?.();
  const refusal = !file.isFile()
    ? `${what} ${path} is not a regular file`
    : worldWritableFolder(path)?.sticky && uid !== undefined && file.uid !== uid
      ? `${what} ${path} belongs to another user (uid ${file.uid}) in the shared folder ${dirname(resolve(path))}: choose another name`
      : undefined;
  if (refusal) {
    closeSync(fd);
    throw new UsageError(refusal);
  }
}

const user = () => userInfo().username;

/** The nearest folder of `path` that is there: where a missing file (and the folders above it) would be made. */
function nearestFolder(path: string): string {
  let folder = dirname(resolve(path));
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  return folder;
}

/** This user may make entries in `folder`, or the refusal naming the fix. */
function assertCanMakeIn(folder: string, path: string, what: string): void {
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new UsageError(
      `${what} ${path} cannot be written: the user ${user()} may not make files in ${folder} (${(err as Error).message}); chown ${user()} ${folder}, or name another path`,
      { cause: err },
    );
  }
}

/**
 * What openAppendOnly would do, checked and nothing made (for `doctor`): the folder checked as
 * it checks it, the file opened to append exactly as it opens it (no link, a regular file of
 * ours) but never created, or, when it is not there, its folder one this user may make it in.
 */
export function checkAppendOnly(path: string, what: string): string {
  assertFolderForWrites(path, what);
  let descriptor: number;
  try {
    descriptor = openSync(path, APPEND);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      const folder = nearestFolder(path);
      assertCanMakeIn(folder, path, what);
      return `${path} is not there yet: the user ${user()} may make it in ${folder}`;
    }
    const why =
      code === 'ELOOP'
        ? 'it is a symbolic link, never written through: name the file itself'
        : code === 'EACCES' || code === 'EPERM'
          ? `the user ${user()} may not write it (${(err as Error).message}): chown ${user()} ${path}`
          : (err as Error).message;
    throw new UsageError(`${what} ${path} cannot be opened: ${why}`, { cause: err });
  }
  refuseAppendTarget(descriptor, path, what);
  closeSync(descriptor);
  return `${path} opens for appending as the user ${user()}`;
}

/**
 * What writeFileAtomically would do, checked and nothing written (for `doctor`): the folder as
 * it checks it, the target replaceable (absent, or a regular file of ours, never a link), and
 * its folder there and one this user may make the new file in.
 */
export async function checkAtomicWrite(path: string, what: string): Promise<string> {
  const target = resolve(path);
  assertFolderForWrites(target, what);
  await assertReplaceable(target, path, what);
  const folder = dirname(target);
  if (!existsSync(folder))
    throw new UsageError(`${what} ${path} cannot be written: its folder ${folder} does not exist (mkdir -p ${folder})`);
  assertCanMakeIn(folder, path, what);
  return `${path} can be replaced by the user ${user()}`;
}
