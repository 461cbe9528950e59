import type { SFTPWrapper, Stats } from 'ssh2';
import { FileGoneError, isPinned, kindOf, NotRegularFileError, type FilePin, type PinnedFile } from './intake.js';
import { sftpReadStream, sftpRequest } from './sftpReadStream.js';

const isNotFound = (err: unknown) => (err as { code?: unknown }).code === 2;

/** SFTP has no inodes: a remote file is known by its size and mtime (whole seconds). */
export const remotePin = (s: { size: number; mtime: number }): FilePin => ({ size: s.size, mtimeMs: s.mtime * 1000 });

/**
 * The remote file opened once: its lstat first (a link, FIFO or device is never opened), then
 * the open handle's own attributes, which must be a regular file with the size and mtime just
 * seen; a link swapped in between is followed by the server's open, and shows here as another file.
 */
export async function pinRemote(sftp: SFTPWrapper, path: string, name: string): Promise<PinnedFile> {
  const gone = (err: unknown) => (isNotFound(err) ? new FileGoneError(name, { cause: err }) : err);
  const before = await sftpRequest<Stats>(sftp, (cb) => sftp.lstat(path, cb)).catch((err) => Promise.reject(gone(err)));
  if (!before.isFile()) throw new NotRegularFileError(name, kindOf(before));
  const handle = await sftpRequest<Buffer>(sftp, (cb) => sftp.open(path, 'r', cb)).catch((err) => Promise.reject(gone(err)));
  const file = new SftpPinnedFile(sftp, handle, path, remotePin(before));
  const opened = await sftpRequest<Stats>(sftp, (cb) => sftp.fstat(handle, cb)).catch(async (err) => {
    await file.close();
    throw err;
  });
  if (!opened.isFile() || !isPinned(remotePin(opened), file.pin)) {
    await file.close();
    throw new NotRegularFileError(name, 'another file once opened than when looked at (a link, or a new upload)');
  }
  return file;
}

class SftpPinnedFile implements PinnedFile {
  private streamed: ReturnType<typeof sftpReadStream> | undefined;
  private closed = false;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly handle: Buffer,
    private readonly path: string,
    readonly pin: FilePin,
  ) {}

  get stream() {
    this.streamed ??= sftpReadStream(this.sftp, this.handle, this.path);
    return this.streamed;
  }

  async current(): Promise<FilePin> {
    return remotePin(await sftpRequest<Stats>(this.sftp, (cb) => this.sftp.fstat(this.handle, cb)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.streamed?.destroy();
    this.sftp.close(this.handle, () => undefined); // not awaited: on a dead connection nobody answers
  }
}
