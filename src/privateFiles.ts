import { closeSync, constants, existsSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';

/**
 * The mode for files that quote partners' data (the ledger, the log): readable by the owner
 * only, or by the group too when the folder is a setgid folder shared with a team.
 */
export function privateFileMode(path: string): number {
  const dir = statSync(dirname(resolve(path)), { throwIfNoEntry: false });
  return dir && (dir.mode & 0o2000) !== 0 /* setgid */ ? 0o640 : 0o600;
}

/**
 * Creates `path` empty with the private mode unless it exists, so that the library that then
 * opens it (and SQLite's -wal and -shm files, which copy its mode) never makes it world-readable.
 */
export function createPrivateFile(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, privateFileMode(path)));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Every user may write to a folder of this mode (o+w). */
const WORLD_WRITABLE = 0o002;
/** In a world-writable folder, only an entry's owner may then remove or rename it (/tmp). */
const STICKY = 0o1000;

/**
 * The folder `path` is in, when every user may write to it, and whether it is sticky; undefined
 * when it is not world-writable (or does not exist yet).
 */
export function worldWritableFolder(path: string): { dir: string; sticky: boolean } | undefined {
  const dir = dirname(resolve(path));
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st || (st.mode & WORLD_WRITABLE) === 0) return undefined;
  return { dir, sticky: (st.mode & STICKY) !== 0 };
}

/**
 * A ledger in a folder anybody may write to could be swapped or pre-created (its -wal file
 * too) by another user, sticky or not: refused, with what to do.
 */
export function assertNotWorldWritableFolder(path: string, what: string): void {
  const open = worldWritableFolder(path);
  if (open) {
    throw new UsageError(
      `${what} ${path} is in ${open.dir}, which every user may write to: put it in a folder of its own (mode 0700 or 0750)`,
    );
  }
}

/**
 * A file of this process's own for what does not fit in memory (a table's keys, an audit's
 * accounted uploads), opened for reading and writing and already unlinked: created new in a
 * fresh private folder of the temporary folder, which is removed at once, so no other user can
 * open it and nothing is left behind however the process ends. `what` names the folder while it
 * exists (`settle-ingest-keys-`).
 */
export function unlinkedTemporaryFile(what: string): number {
  const folder = mkdtempSync(join(tmpdir(), `settle-ingest-${what}-`));
  try {
    return openSync(join(folder, what), 'wx+', 0o600);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
