import type { Stats } from 'ssh2';
import { FileGoneError, kindOf, NotRegularFileError, type FilePin, type PinnedFile } from '../intake.js';
import { sftpReadStream } from './readStream.js';
import { isNotFound, type SftpSession } from './session.js';

/** SFTP has no inodes: a remote file is known by its size and mtime (whole seconds). */
export const remotePin = (stats: { size: number; mtime: number }): FilePin => ({ size: stats.size, mtimeMs: stats.mtime * 1000 });

/** What the server says a name is, from more than one answer. */
export type RemoteLook =
  | { kind: 'file'; stats: Stats }
  /** the server's READLINK names a target: a link, whatever its LSTAT says (ProFTPD's LSTAT follows links) */
  | { kind: 'link'; target: string }
  | { kind: 'other'; what: string }
  /** nothing there, in the server's words */
  | { kind: 'gone'; answer: string };

export const LINK = 'a symbolic link (the server reads it as one), not a regular file';

/**
 * The name's LSTAT and READLINK, asked together. LSTAT alone does not show a link on every
 * server: ProFTPD's follows it and describes what it points to. READLINK answers for the name
 * itself on every server that has it; one that has not (rclone, which hides links anyway)
 * answers with an error, as for a name that is no link.
 */
export async function lookAt(session: SftpSession, path: string): Promise<RemoteLook> {
  const [own, link] = await Promise.allSettled([session.lstat(path), session.readlink(path)]);
  if (link.status === 'fulfilled') return { kind: 'link', target: link.value };
  if (own.status === 'rejected') {
    if (isNotFound(own.reason)) return { kind: 'gone', answer: (own.reason as Error).message };
    throw own.reason;
  }
  return own.value.isFile() ? { kind: 'file', stats: own.value } : { kind: 'other', what: kindOf(own.value) };
}

/** Whether two sets of attributes describe one file: size and mtime, and mode, owner and group where the server gives them. */
export function sameAttributes(stats: Stats, other: Stats): boolean {
  const agree = (x: number | undefined, y: number | undefined) => x === undefined || y === undefined || x === y;
  return (
    stats.size === other.size &&
    stats.mtime === other.mtime &&
    agree(stats.mode, other.mode) &&
    agree(stats.uid, other.uid) &&
    agree(stats.gid, other.gid)
  );
}

/**
 * The remote file opened once, never through a link: its LSTAT and READLINK first (a link,
 * FIFO or device is never opened), then, once open, the handle's own FSTAT against them and a
 * second READLINK. A link swapped in between the look and the open is followed by the server's
 * open: the second READLINK shows it, and the handle's attributes show another file.
 */
export async function pinRemote(session: SftpSession, path: string, name: string): Promise<PinnedFile> {
  const before = await lookAt(session, path);
  refuseUnlessFile(before, name);
  const handle = await session
    .open(path, 'r')
    .catch((err) => Promise.reject(isNotFound(err) ? new FileGoneError(name, { cause: err }) : err));
  const file = new SftpPinnedFile(session, handle, path, name, remotePin(before.stats));
  try {
    const [opened, again] = await Promise.all([session.fstat(handle, path), lookAt(session, path)]);
    if (again.kind === 'link') throw new NotRegularFileError(name, LINK);
    if (!opened.isFile() || !sameAttributes(opened, before.stats)) {
      throw new NotRegularFileError(name, 'another file once opened than when looked at (a link, or a new upload)');
    }
  } catch (err) {
    await file.close();
    throw err;
  }
  return file;
}

function refuseUnlessFile(look: RemoteLook, name: string): asserts look is { kind: 'file'; stats: Stats } {
  if (look.kind === 'gone') throw new FileGoneError(name, { cause: new Error(look.answer) });
  if (look.kind === 'link') throw new NotRegularFileError(name, LINK);
  if (look.kind === 'other') throw new NotRegularFileError(name, look.what);
}

class SftpPinnedFile implements PinnedFile {
  private streamed: ReturnType<typeof sftpReadStream> | undefined;
  private closed = false;

  constructor(
    private readonly session: SftpSession,
    private readonly handle: Buffer,
    private readonly path: string,
    private readonly name: string,
    readonly pin: FilePin,
  ) {}

  get stream() {
    this.streamed ??= sftpReadStream(this.session, this.handle, this.path);
    return this.streamed;
  }

  /**
   * The open file now, and a second look at its name: a name that has become a link is refused
   * (NotRegularFileError); one that holds another file shows as a changed pin.
   */
  async current(): Promise<FilePin> {
    const [opened, now] = await Promise.all([this.session.fstat(this.handle, this.path), lookAt(this.session, this.path)]);
    if (now.kind === 'link') throw new NotRegularFileError(this.name, LINK);
    if (now.kind === 'file' && !sameAttributes(now.stats, opened)) return remotePin(now.stats);
    return remotePin(opened);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.streamed?.destroy();
    this.session.closeHandle(this.handle); // not awaited: on a dead connection nobody answers
  }
}
