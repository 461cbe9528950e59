import { Readable } from 'node:stream';
import { SftpGaveUpError, seconds } from './requests.js';
import type { SftpSession } from './session.js';

const CHUNK = 64 * 1024;
const WINDOW = 32;

/**
 * A download's floor (--sftp-min-rate): the bytes the server delivered against the time spent
 * waiting for them. Only time waiting on the server counts, so a slow staging disk or decoder
 * downstream never trips it; a server that trickles (16 bytes every few seconds, each answer in
 * time for --sftp-timeout) does, after one stretch of --sftp-timeout spent waiting.
 */
class DownloadFloor {
  private waitedMs = 0;
  private waitingSince: number | undefined;
  private bytes = 0;
  private mark = { waitedMs: 0, bytes: 0 };
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly session: SftpSession,
    private readonly path: string,
  ) {}

  private get min(): number {
    return this.session.limits.minBytesPerSecond;
  }

  /** Bytes the server answered with (each READ, not each whole chunk: a trickle fills none). */
  readonly received = (n: number) => {
    this.bytes += n;
  };

  /** The next chunk, its wait timed. */
  async next(chunk: Promise<Buffer>): Promise<Buffer> {
    if (this.min <= 0) return chunk;
    this.waitingSince = Date.now();
    this.armAtWindowEnd();
    try {
      return await chunk;
    } finally {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.waitedMs += Date.now() - (this.waitingSince ?? Date.now());
      this.waitingSince = undefined;
      this.check();
    }
  }

  /**
   * A timer for the moment this stretch of waiting fills a window: set to that moment, not to a
   * coarse tick. A trickle keeps the download waiting from its first request on, so its window
   * ends before the deadline of any request sent after that first one, which a later tick could
   * let pass first (the request's own --sftp-timeout, a different and less telling message).
   */
  private armAtWindowEnd(): void {
    const left = this.session.limits.timeoutMs - (this.waited() - this.mark.waitedMs);
    this.timer = setTimeout(() => this.check(), Math.max(1, left + 1)).unref();
  }

  private waited(): number {
    return this.waitedMs + (this.waitingSince === undefined ? 0 : Date.now() - this.waitingSince);
  }

  private check(): void {
    const windowMs = this.session.limits.timeoutMs;
    const waited = this.waited();
    const span = waited - this.mark.waitedMs;
    if (span < windowMs) {
      if (this.waitingSince !== undefined) this.armAtWindowEnd(); // the clock read a millisecond short
      return;
    }
    const got = this.bytes - this.mark.bytes;
    this.mark = { waitedMs: waited, bytes: this.bytes };
    if (got / (span / 1000) >= this.min) {
      if (this.waitingSince !== undefined) this.armAtWindowEnd();
      return;
    }
    this.session.giveUp(
      new SftpGaveUpError(
        `the download of ${this.path} fell below --sftp-min-rate ${this.min}: ${got} bytes in ${seconds(span)}s of waiting for the SFTP server`,
      ),
    );
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * The bytes of a remote file already open as `handle`, in order, with up to WINDOW read
 * requests in flight: a plain SFTP read stream waits one round trip per chunk, which is an
 * order of magnitude slower. Each request has its deadline (SftpRequests) and the whole download
 * its floor (DownloadFloor); a cut connection fails the stream instead of leaving it waiting for
 * answers that will never come. The handle stays open: its owner closes it.
 */
export function sftpReadStream(session: SftpSession, handle: Buffer, path: string): Readable {
  const floor = new DownloadFloor(session, path);

  async function* chunks(): AsyncGenerator<Buffer> {
    let next = 0;
    const issue = () => {
      const p = session.readFully(handle, path, next, CHUNK, floor.received);
      p.catch(() => undefined); // awaited in order below; this only keeps an early failure from going unhandled
      next += CHUNK;
      return p;
    };
    const inflight = Array.from({ length: WINDOW }, issue);
    let failed = false;
    try {
      for (;;) {
        const chunk = await floor.next(inflight.shift()!);
        if (chunk.length > 0) yield chunk;
        if (chunk.length < CHUNK) return; // the end of the file
        inflight.push(issue());
      }
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      floor.stop();
      // reads past the end, answered with nothing; on a dead connection nobody answers: do not wait
      if (!failed) await Promise.allSettled(inflight);
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
