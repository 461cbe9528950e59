import { open as openLocal } from 'node:fs/promises';
import { posix } from 'node:path';
import { Client, type ConnectConfig, type FileEntryWithStats, type SFTPWrapper, type Stats } from 'ssh2';
import { SftpConnectionLostError, SftpGaveUpError, SftpRequests, type SftpLimits } from './requests.js';

export { SftpConnectionLostError, SftpGaveUpError } from './requests.js';

/** SFTP's status codes (ssh2 passes the protocol's status code as `code`). */
const NO_SUCH_FILE = 2;
const EOF = 1;

/** Socket errors that mean the network path to the server broke. */
const NETWORK_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN'];

const codeOf = (err: unknown) => (err as { code?: unknown })?.code;

export const isNotFound = (err: unknown) => codeOf(err) === NO_SUCH_FILE || codeOf(err) === 'ENOENT';

/** Uploads write this much per request, with this many requests in flight. */
const WRITE_CHUNK = 32 * 1024;
const WRITES_IN_FLIGHT = 16;

/** The server refused the login, or the key could not be used: configuration, not a network problem. */
export class SftpLoginError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SftpLoginError';
  }
}

/**
 * One SSH connection and its SFTP channel, through ssh2's public API. Every request goes
 * through SftpRequests, which gives each a deadline. The connection is known to be gone from
 * its own events (the client's or the channel's `close`, `end` or `error`), not from the
 * wording of an error, so that every way a connection can drop (during a listing, a read, a
 * rename) is recognised the same way.
 */
export class SftpSession {
  private gone: string | undefined;
  private readonly requests: SftpRequests;

  private constructor(
    private readonly client: Client,
    private readonly sftp: SFTPWrapper,
    limits: SftpLimits,
  ) {
    const lost = (why: string) => () => {
      this.gone ??= why;
    };
    client.on('close', lost('connection closed'));
    client.on('end', lost('connection ended'));
    client.on('error', (err) => lost(err.message)());
    sftp.on('close', lost('SFTP channel closed'));
    sftp.on('end', lost('SFTP channel ended'));
    sftp.on('error', (err: Error) => lost(err.message)());
    this.requests = new SftpRequests(sftp, limits, (why) => {
      this.gone ??= why;
      this.client.end();
    });
  }

  /**
   * Connects and opens the SFTP channel; rejects with SftpLoginError when the login or the key
   * is refused, else with the connection's own error.
   */
  static connect(config: ConnectConfig, limits: SftpLimits): Promise<SftpSession> {
    return new Promise((resolve, reject) => {
      const client = new Client();
      let settled = false;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        client.end();
        // ssh2 marks a refused login by the error's level
        const login = (err as { level?: unknown })?.level === 'client-authentication';
        reject(login ? new SftpLoginError((err as Error).message, { cause: err }) : err);
      };
      client.on('error', fail);
      client.once('close', () => fail(new SftpConnectionLostError('closed while connecting')));
      client.once('ready', () =>
        client.sftp((err, sftp) => {
          if (err) return fail(err);
          if (settled) return sftp.end();
          settled = true;
          client.removeListener('error', fail);
          resolve(new SftpSession(client, sftp, limits));
        }),
      );
      try {
        client.connect(config);
        // every request is a small packet answered before the next one may go: Nagle's algorithm
        // against the server's delayed ACK would add 40 ms to each round trip
        client.setNoDelay(true);
      } catch (err) {
        // a key that cannot be parsed or decrypted is refused before anything is sent
        settled = true;
        reject(new SftpLoginError((err as Error).message, { cause: err }));
      }
    });
  }

  /** Whether this connection is gone: a new one may cure what failed. */
  get lost(): boolean {
    return this.gone !== undefined;
  }

  /** The server's SFTP extensions and their versions, as it announced them. */
  get extensions(): Record<string, string> {
    return (this.sftp as unknown as { _extensions?: Record<string, string> })._extensions ?? {};
  }

  /** --sftp-timeout and --sftp-min-rate, for a download to measure itself against */
  get limits(): SftpLimits {
    return this.requests.limits;
  }

  /**
   * Whether `err` came from this connection dropping (a new connection may do better). A server
   * that did not answer in time is not that: it was given up on purpose and is not asked again.
   * A dropped channel fails its pending requests before it emits `close`; one turn of the event
   * loop later the events have come.
   */
  async droppedBy(err: unknown): Promise<boolean> {
    if (err instanceof SftpGaveUpError) return false;
    if (err instanceof SftpConnectionLostError) return true;
    if (typeof codeOf(err) === 'string' && NETWORK_CODES.includes(codeOf(err) as string)) return true;
    if (!this.lost) await new Promise((resolve) => setImmediate(resolve));
    return this.lost;
  }

  /** Gives the connection up: a download below its floor. */
  giveUp(err: SftpGaveUpError): void {
    this.requests.giveUp(err);
  }

  private request<T>(
    what: string,
    sendRequest: (s: SFTPWrapper, cb: (err: Error | null | undefined, value: T) => void) => void,
  ): Promise<T> {
    if (this.gone !== undefined) return Promise.reject(new SftpConnectionLostError(this.gone));
    return this.requests.request(what, sendRequest);
  }

  private done(what: string, sendRequest: (s: SFTPWrapper, cb: (err: Error | null | undefined) => void) => void): Promise<void> {
    return this.request<void>(what, (s, cb) => sendRequest(s, (err) => cb(err, undefined)));
  }

  /** Every entry of `dir`, with the listing's own attributes and `ls -l` line, one request per batch of entries. */
  async readdir(dir: string): Promise<FileEntryWithStats[]> {
    const handle = await this.request<Buffer>(`OPENDIR ${dir}`, (s, cb) => s.opendir(dir, cb));
    const entries: FileEntryWithStats[] = [];
    try {
      for (;;) {
        const batch = await this.request<FileEntryWithStats[] | false>(`READDIR ${dir}`, (s, cb) =>
          s.readdir(handle, (err, list) => (codeOf(err) === EOF ? cb(undefined, false) : cb(err, list))),
        );
        if (batch === false) break;
        for (const e of batch) if (e.filename !== '.' && e.filename !== '..') entries.push(e);
      }
    } finally {
      this.closeHandle(handle);
    }
    return entries;
  }

  stat(path: string): Promise<Stats> {
    return this.request(`STAT ${path}`, (s, cb) => s.stat(path, cb));
  }

  lstat(path: string): Promise<Stats> {
    return this.request(`LSTAT ${path}`, (s, cb) => s.lstat(path, cb));
  }

  fstat(handle: Buffer, path: string): Promise<Stats> {
    return this.request(`FSTAT ${path}`, (s, cb) => s.fstat(handle, cb));
  }

  /** What the link `path` points to, as the server reads it: rejects for a name that is no link (or a server without READLINK). */
  readlink(path: string): Promise<string> {
    return this.request(`READLINK ${path}`, (s, cb) => s.readlink(path, cb));
  }

  /** The server's own path for `path`; '' when it does not exist. */
  realpath(path: string): Promise<string> {
    return this.request<string>(`REALPATH ${path}`, (s, cb) => s.realpath(path, cb)).catch((err) =>
      isNotFound(err) ? '' : Promise.reject(err),
    );
  }

  open(path: string, flags: 'r' | 'wx'): Promise<Buffer> {
    return this.request(`OPEN ${path}`, (s, cb) => s.open(path, flags, flags === 'wx' ? { mode: 0o640 } : {}, cb));
  }

  /** Closes a handle, waiting for the answer: a file written is complete only then. */
  close(handle: Buffer, path: string): Promise<void> {
    return this.done(`CLOSE ${path}`, (s, cb) => s.close(handle, cb));
  }

  /** Writes all of `buf` at `position` (ssh2 splits what one packet cannot hold). */
  write(handle: Buffer, path: string, buf: Buffer, position: number): Promise<void> {
    return this.done(`WRITE ${path}`, (s, cb) => s.write(handle, buf, 0, buf.length, position, cb));
  }

  /** Closes a handle without waiting: on a connection that is given up nobody answers. */
  closeHandle(handle: Buffer): void {
    if (this.gone === undefined) this.done('CLOSE', (s, cb) => s.close(handle, cb)).catch(() => undefined);
  }

  /** Up to `length` bytes at `position`; 0 at the end of the file. */
  read(handle: Buffer, path: string, buf: Buffer, offset: number, length: number, position: number): Promise<number> {
    return this.request<number>(`READ ${path}`, (s, cb) =>
      s.read(handle, buf, offset, length, position, (err, bytes) => (codeOf(err) === EOF ? cb(undefined, 0) : cb(err, bytes))),
    );
  }

  /** Reads [position, position + length) completely, or up to the end of the file; `onBytes` hears of each answer. */
  async readFully(handle: Buffer, path: string, position: number, length: number, onBytes?: (n: number) => void): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = await this.read(handle, path, buf, got, length - got, position + got);
      if (n === 0) break; // end of file
      got += n;
      onBytes?.(n);
    }
    return buf.subarray(0, got);
  }

  /** SFTP rename. Whether it replaces an existing `to` depends on the server (OpenSSH and ProFTPD refuse, rclone replaces). */
  rename(from: string, to: string): Promise<void> {
    return this.done(`RENAME ${from}`, (s, cb) => s.rename(from, to, cb));
  }

  unlink(path: string): Promise<void> {
    return this.done(`REMOVE ${path}`, (s, cb) => s.unlink(path, cb));
  }

  rmdir(path: string): Promise<void> {
    return this.done(`RMDIR ${path}`, (s, cb) => s.rmdir(path, cb));
  }

  mkdir(path: string): Promise<void> {
    return this.done(`MKDIR ${path}`, (s, cb) => s.mkdir(path, { mode: 0o750 }, cb));
  }

  /** Whether anything (a file, a folder, a link) has this name. */
  exists(path: string): Promise<boolean> {
    return this.lstat(path).then(
      () => true,
      (err) => (isNotFound(err) ? false : Promise.reject(err)),
    );
  }

  /** `dir` and any missing folder above it. */
  async mkdirs(dir: string): Promise<void> {
    if (dir === '/' || dir === '.' || (await this.exists(dir))) return;
    await this.mkdirs(posix.dirname(dir));
    await this.mkdir(dir).catch(async (err) => {
      if (!(await this.exists(dir))) throw err; // made meanwhile by another run: fine
    });
  }

  /**
   * Uploads a local file to a new remote name, complete (every write acknowledged, the handle
   * closed) when it resolves. The name must be one nobody else uses: not every server refuses
   * to open an existing file exclusively (rclone does not).
   */
  async upload(localPath: string, remotePath: string): Promise<void> {
    const source = await openLocal(localPath, 'r');
    try {
      const handle = await this.open(remotePath, 'wx');
      try {
        const size = (await source.stat()).size;
        let next = 0;
        const writer = async () => {
          const buf = Buffer.allocUnsafe(WRITE_CHUNK);
          while (next < size) {
            const position = next;
            next += WRITE_CHUNK;
            try {
              const { bytesRead } = await source.read(buf, 0, WRITE_CHUNK, position);
              await this.write(handle, remotePath, buf.subarray(0, bytesRead), position);
            } catch (err) {
              next = size; // the other writers stop too
              throw err;
            }
          }
        };
        await Promise.all(Array.from({ length: WRITES_IN_FLIGHT }, writer));
      } finally {
        // the upload is complete only once its handle is closed
        await this.close(handle, remotePath);
      }
    } finally {
      await source.close();
    }
  }

  end(): void {
    this.gone ??= 'closed by this process';
    this.client.end();
  }
}

/**
 * The host key types a server offers, read from its key exchange (one connection that ends
 * there): for the message when it offers none this tool accepts.
 */
export function offeredHostKeyTypes(config: ConnectConfig): Promise<string[]> {
  return new Promise((resolve) => {
    const client = new Client();
    let offered: string[] = [];
    const done = () => {
      client.end();
      resolve(offered);
    };
    client.on('error', done);
    client.on('close', done);
    client.on('ready', done);
    client.connect({
      ...config,
      hostVerifier: () => false,
      debug: (line: string) => {
        const m = /\(remote\) Host key format: (.*)$/.exec(line);
        if (m) offered = m[1]!.split(',');
      },
    });
  });
}
