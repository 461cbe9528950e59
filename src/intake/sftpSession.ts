import { createReadStream } from 'node:fs';
import { posix } from 'node:path';
import { Client, type ConnectConfig, type FileEntryWithStats, type SFTPWrapper, type Stats } from 'ssh2';
import { sftpRequest } from './sftpReadStream.js';

/** SFTP's status for a missing file (ssh2 passes the protocol's status code as `code`). */
const NO_SUCH_FILE = 2;

/** Socket errors that mean the network path to the server broke. */
const NETWORK_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN'];

const codeOf = (err: unknown) => (err as { code?: unknown })?.code;

export const isNotFound = (err: unknown) => codeOf(err) === NO_SUCH_FILE || codeOf(err) === 'ENOENT';

/** The server refused the login, or the key could not be used: configuration, not a network problem. */
export class SftpLoginError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SftpLoginError';
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

/**
 * One SSH connection and its SFTP channel, through ssh2's public API. The connection is known
 * to be gone from its own events (the client's or the channel's `close`, `end` or `error`), not
 * from the wording of an error, so that every way a connection can drop (during a listing, a
 * read, a rename) is recognised the same way.
 */
export class SftpSession {
  private gone: string | undefined;

  private constructor(
    private readonly client: Client,
    readonly sftp: SFTPWrapper,
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
  }

  /**
   * Connects and opens the SFTP channel; rejects with SftpLoginError when the login or the key
   * is refused, else with the connection's own error.
   */
  static connect(config: ConnectConfig): Promise<SftpSession> {
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
          resolve(new SftpSession(client, sftp));
        }),
      );
      try {
        client.connect(config);
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

  /**
   * Whether `err` came from this connection dropping. A dropped channel fails its pending
   * requests before it emits `close`; one turn of the event loop later the events have come.
   */
  async droppedBy(err: unknown): Promise<boolean> {
    if (err instanceof SftpConnectionLostError) return true;
    if (typeof codeOf(err) === 'string' && NETWORK_CODES.includes(codeOf(err) as string)) return true;
    if (!this.lost) await new Promise((resolve) => setImmediate(resolve));
    return this.lost;
  }

  private request<T>(fn: (sftp: SFTPWrapper, cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> {
    if (this.gone !== undefined) return Promise.reject(new SftpConnectionLostError(this.gone));
    return sftpRequest<T>(this.sftp, (cb) => fn(this.sftp, cb));
  }

  readdir(dir: string): Promise<FileEntryWithStats[]> {
    return this.request((s, cb) => s.readdir(dir, cb));
  }

  stat(path: string): Promise<Stats> {
    return this.request((s, cb) => s.stat(path, cb));
  }

  lstat(path: string): Promise<Stats> {
    return this.request((s, cb) => s.lstat(path, cb));
  }

  /** The server's own path for `path`; '' when it does not exist. */
  realpath(path: string): Promise<string> {
    return this.request<string>((s, cb) => s.realpath(path, cb)).catch((err) => (isNotFound(err) ? '' : Promise.reject(err)));
  }

  /** Whether anything (a file, a folder, a link) has this name. */
  exists(path: string): Promise<boolean> {
    return this.lstat(path).then(
      () => true,
      (err) => (isNotFound(err) ? false : Promise.reject(err)),
    );
  }

  /** SFTP rename: OpenSSH refuses it when `to` exists, so nothing is ever overwritten. */
  rename(from: string, to: string): Promise<void> {
    return this.request<void>((s, cb) => s.rename(from, to, (err) => cb(err, undefined)));
  }

  unlink(path: string): Promise<void> {
    return this.request<void>((s, cb) => s.unlink(path, (err) => cb(err, undefined)));
  }

  /** `dir` and any missing folder above it. */
  async mkdirs(dir: string): Promise<void> {
    if (dir === '/' || dir === '.' || (await this.exists(dir))) return;
    await this.mkdirs(posix.dirname(dir));
    await this.request<void>((s, cb) => s.mkdir(dir, (err) => cb(err, undefined))).catch(async (err) => {
      if (!(await this.exists(dir))) throw err; // made meanwhile by another run: fine
    });
  }

  /** Uploads a local file to a new remote name ('wx': never onto an existing file), complete when it resolves. */
  upload(localPath: string, remotePath: string, mode: number): Promise<void> {
    if (this.gone !== undefined) return Promise.reject(new SftpConnectionLostError(this.gone));
    return new Promise((resolve, reject) => {
      const source = createReadStream(localPath);
      const target = this.sftp.createWriteStream(remotePath, { flags: 'wx', mode });
      const onGone = () => reject(new SftpConnectionLostError('closed during an upload'));
      this.sftp.once('close', onGone);
      const settle = (err?: unknown) => {
        this.sftp.removeListener('close', onGone);
        if (err) reject(err);
        else resolve();
      };
      source.once('error', (err) => {
        target.destroy();
        settle(err);
      });
      target.once('error', (err: Error) => {
        source.destroy();
        settle(err);
      });
      // the remote handle is closed (and every write acknowledged) only at 'close'
      target.once('close', () => settle());
      source.pipe(target);
    });
  }

  end(): void {
    this.gone ??= 'closed by this process';
    this.client.end();
  }
}
