import { Readable } from 'node:stream';
import type { SFTPWrapper } from 'ssh2';

const CHUNK = 64 * 1024;
const WINDOW = 32;

/**
 * The bytes of a remote file already open as `handle`, in order, with up to WINDOW read
 * requests in flight: a plain SFTP read stream waits one round trip per chunk, which is an
 * order of magnitude slower. Every request also ends when the channel closes, so a cut
 * connection fails the stream instead of leaving it waiting for answers that will never come.
 * The handle stays open: its owner closes it.
 */
export function sftpReadStream(sftp: SFTPWrapper, handle: Buffer, path: string): Readable {
  let onGone: () => void = () => undefined;
  const gone = new Promise<never>((_, reject) => {
    onGone = () => reject(new Error(`SFTP connection closed while reading ${path}`));
  });
  gone.catch(() => undefined);
  sftp.once('close', onGone);
  sftp.once('end', onGone);

  const call = <T>(fn: (cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> =>
    Promise.race([new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value)))), gone]);

  /** Reads [position, position + length) completely, or up to the end of the file. */
  const readFully = async (handle: Buffer, position: number, length: number): Promise<Buffer> => {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = await call<number>((cb) => sftp.read(handle, buf, got, length - got, position + got, (err, bytes) => cb(err, bytes)));
      if (n === 0) break; // end of file
      got += n;
    }
    return buf.subarray(0, got);
  };

  async function* chunks(): AsyncGenerator<Buffer> {
    let next = 0;
    const issue = () => {
      const p = readFully(handle, next, CHUNK);
      p.catch(() => undefined); // awaited in order below; this only keeps an early failure from going unhandled
      next += CHUNK;
      return p;
    };
    const inflight = Array.from({ length: WINDOW }, issue);
    let failed = false;
    try {
      for (;;) {
        const chunk = await inflight.shift()!;
        if (chunk.length > 0) yield chunk;
        if (chunk.length < CHUNK) return; // the end of the file
        inflight.push(issue());
      }
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      sftp.removeListener('close', onGone);
      sftp.removeListener('end', onGone);
      // reads past the end, answered with nothing; on a dead connection nobody answers: do not wait
      if (!failed) await Promise.allSettled(inflight);
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** One request on the raw SFTP channel: it fails, rather than waits forever, when the channel closes first. */
export function sftpRequest<T>(sftp: SFTPWrapper, fn: (cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onGone = () => reject(new Error('SFTP connection closed during a request'));
    sftp.once('close', onGone);
    sftp.once('end', onGone);
    fn((err, value) => {
      sftp.removeListener('close', onGone);
      sftp.removeListener('end', onGone);
      if (err) reject(err);
      else resolve(value);
    });
  });
}
