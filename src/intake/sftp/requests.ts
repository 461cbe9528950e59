import type { SFTPWrapper } from 'ssh2';
import { TransientError } from '../../errors.js';

/** How long a run waits on an SFTP server, and how slow a download may be (--sftp-timeout, --sftp-min-rate). */
export interface SftpLimits {
  /** the longest wait for any one answer (and for a connection's handshake) */
  timeoutMs: number;
  /** a download that brings less than this many bytes a second, over a stretch of `timeoutMs` spent waiting for it, fails; 0: no floor */
  minBytesPerSecond: number;
  /** a stop request (SIGTERM): a request unanswered STOP_GRACE_MS after it is then given up, not waited out */
  stop?: AbortSignal | undefined;
}

/** After a stop request: how long a request may still take before the run stops waiting for it. */
const STOP_GRACE_MS = 1000;

/**
 * The server did not answer in time, the download fell below its floor, or the run was asked to
 * stop while a request waited. The connection is given up (a new one may do better); the file
 * or the step in hand fails, and the next run resumes it. Never retried on the same run's
 * connection, since a server stuck on one request (a hung mount) is stuck on the next too.
 */
export class SftpGaveUpError extends TransientError {
  readonly code = 'ERR_SFTP_GAVE_UP';
  constructor(message: string) {
    super(message);
    this.name = 'SftpGaveUpError';
  }
}

/** An operation on a session whose connection is already known to be gone. */
export class SftpConnectionLostError extends Error {
  readonly code = 'ERR_SFTP_CONNECTION_LOST';
  constructor(why: string) {
    super(`SFTP connection lost: ${why}`);
    this.name = 'SftpConnectionLostError';
  }
}

interface Pending {
  /** the request's type, with its path where it has one: for the message when it is given up */
  what: string;
  since: number;
  reject: (err: unknown) => void;
}

/** Milliseconds as the seconds an SFTP message names, to a tenth: `2`, `3.4` (as --sftp-timeout is written). */
export const seconds = (milliseconds: number): number => Number((milliseconds / 1000).toFixed(1));

/**
 * Every request of one SFTP channel, each with a deadline. SSH keepalives only prove that the
 * SSH connection lives: a `sftp-server` stuck on a hung NFS mount answers them for ever while
 * never answering a READ. So each request is timed here, and the first one past --sftp-timeout
 * (or past a short grace after a stop request) gives the whole channel up: every pending request
 * fails with the same reason and `giveUp` ends the connection. A channel that closes fails its
 * pending requests at once. One timer per channel, running only while requests are pending.
 */
export class SftpRequests {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | undefined;
  private ended: Error | undefined;

  constructor(
    private readonly channel: SFTPWrapper,
    readonly limits: SftpLimits,
    private readonly onGiveUp: (why: string) => void,
  ) {
    const closed = () => this.fail(new SftpConnectionLostError('SFTP channel closed during a request'));
    channel.once('close', closed);
    channel.once('end', closed);
  }

  /** One request: `sendRequest` sends it with a callback. Rejects with the server's error, SftpGaveUpError, or SftpConnectionLostError. */
  request<T>(what: string, sendRequest: (channel: SFTPWrapper, cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> {
    if (this.ended) return Promise.reject(this.ended);
    return new Promise<T>((resolve, reject) => {
      const p: Pending = { what, since: Date.now(), reject };
      this.pending.add(p);
      this.timer ??= setInterval(() => this.tick(), Math.min(250, Math.max(50, this.limits.timeoutMs / 4))).unref();
      try {
        sendRequest(this.channel, (err, value) => {
          if (!this.pending.delete(p)) return; // given up already: a late answer changes nothing
          if (err) reject(err);
          else resolve(value);
        });
      } catch (err) {
        this.pending.delete(p);
        reject(err);
      }
    });
  }

  /** Gives the channel up now (a download below its floor): every pending request fails with `err`, and the connection ends. */
  giveUp(err: SftpGaveUpError): void {
    this.fail(err);
    this.onGiveUp(err.message);
  }

  private tick(): void {
    if (this.pending.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    const stop = this.limits.stop;
    for (const p of this.pending) {
      const waited = now - p.since;
      if (waited >= this.limits.timeoutMs) {
        const s = seconds(this.limits.timeoutMs);
        return this.giveUp(new SftpGaveUpError(`the SFTP server did not answer ${p.what} within ${s}s (--sftp-timeout ${s})`));
      }
      if (stop?.aborted && waited >= STOP_GRACE_MS) {
        const why = `asked to stop (${String(stop.reason ?? 'signal')})`;
        return this.giveUp(new SftpGaveUpError(`${why} while the SFTP server had not answered ${p.what} for ${seconds(waited)}s`));
      }
    }
  }

  private fail(err: Error): void {
    this.ended ??= err;
    clearInterval(this.timer);
    this.timer = undefined;
    const pending = [...this.pending];
    this.pending.clear();
    for (const p of pending) p.reject(err);
  }
}
