import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { TransientError, UsageError, errorMessage } from '../errors.js';
import type { HostKeyPolicy } from './hostKeys.js';
import { kindOf, type FilePin, type FolderReader, type IntakeEntry, type PinnedFile } from './intake.js';
import { pinRemote, remotePin } from './sftpPin.js';
import { SftpLoginError, SftpSession, isNotFound } from './sftpSession.js';
import type { SftpLocation } from './sftpUrl.js';

export interface SftpCredentials {
  keyPath?: string;
  keyPassphrase?: string;
  password?: string;
  agentSocket?: string;
}

const CONNECT_ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 500;

/**
 * A folder on an SFTP server, read only: the archive for `audit`, `adopt` and reprocessing,
 * and what an SFTP intake reads. Host keys are always verified; an operation that hits a
 * dropped connection reconnects (bounded, with backoff) and runs once more.
 */
export class SftpFolder implements FolderReader {
  readonly description: string;
  private session: SftpSession | undefined;
  private hostKeyProblem: string | undefined;

  protected constructor(
    protected readonly loc: SftpLocation,
    protected readonly dir: string,
    private readonly creds: SftpCredentials,
    private readonly hostKeys: HostKeyPolicy,
    protected readonly log: Logger,
  ) {
    this.description = `sftp://${loc.user}@${loc.host}:${loc.port}${dir}`;
  }

  /** The folder `loc.path`; `what` names it when it is missing ("archive"). */
  static async openFolder(
    loc: SftpLocation,
    what: string,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    log: Logger,
  ): Promise<SftpFolder> {
    const folder = new SftpFolder(loc, loc.path, creds, hostKeys, log);
    await folder.connectAndCheck(what);
    return folder;
  }

  /** Connects, and refuses a folder that is missing on the server. */
  protected async connectAndCheck(what: string): Promise<void> {
    if (!this.creds.keyPath && !this.creds.agentSocket && !this.creds.password) {
      throw new UsageError('no SFTP credentials: set --sftp-key, run an ssh-agent (SSH_AUTH_SOCK), or set SETTLE_SFTP_PASSWORD');
    }
    const session = await this.connect();
    const found = await session.stat(this.dir).catch(() => null);
    if (!found?.isDirectory()) {
      await this.close();
      throw new UsageError(`${what} ${this.description} does not exist on the server or is not a folder`);
    }
  }

  private async connect(): Promise<SftpSession> {
    let privateKey: Buffer | undefined;
    if (this.creds.keyPath) {
      try {
        privateKey = readFileSync(this.creds.keyPath);
      } catch (err) {
        throw new UsageError(`SFTP key ${this.creds.keyPath} cannot be read: ${errorMessage(err)}`, { cause: err });
      }
    }
    let lastError: unknown;
    for (let attempt = 1; attempt <= CONNECT_ATTEMPTS; attempt++) {
      this.hostKeyProblem = undefined;
      try {
        this.session = await SftpSession.connect({
          host: this.loc.host,
          port: this.loc.port,
          username: this.loc.user,
          ...(privateKey ? { privateKey, passphrase: this.creds.keyPassphrase } : {}),
          ...(this.creds.agentSocket ? { agent: this.creds.agentSocket } : {}),
          ...(this.creds.password ? { password: this.creds.password } : {}),
          readyTimeout: 20_000,
          // a connection that silently stops answering is declared dead after about 30 s
          keepaliveInterval: 10_000,
          keepaliveCountMax: 3,
          algorithms: { serverHostKey: { prepend: this.hostKeys.knownTypes() } } as never,
          hostVerifier: (key: Buffer) => {
            const verdict = this.hostKeys.verify(key);
            if (!verdict.ok) this.hostKeyProblem = verdict.reason;
            return verdict.ok;
          },
        });
        return this.session;
      } catch (err) {
        if (this.hostKeyProblem) throw new UsageError(`refusing ${this.description}: ${this.hostKeyProblem}`, { cause: err });
        if (err instanceof SftpLoginError) {
          throw new UsageError(`${this.description} refused the login: ${errorMessage(err)}`, { cause: err });
        }
        lastError = err;
        if (attempt < CONNECT_ATTEMPTS) {
          const wait = FIRST_BACKOFF_MS * 2 ** (attempt - 1);
          this.log.warn({ event: 'sftp-retry', attempt, waitMs: wait, reason: errorMessage(err) }, 'SFTP server unreachable, retrying');
          await sleep(wait);
        }
      }
    }
    throw new TransientError(
      `SFTP server ${this.description} is unreachable after ${CONNECT_ATTEMPTS} attempts: ${errorMessage(lastError)}`,
      {
        cause: lastError,
      },
    );
  }

  /** Runs `op`; when the connection dropped under it, reconnects (bounded) and runs it once more. */
  protected async withConnection<T>(op: (s: SftpSession) => Promise<T>): Promise<T> {
    const session = this.session && !this.session.lost ? this.session : await this.connect();
    try {
      return await op(session);
    } catch (err) {
      if (!(await session.droppedBy(err))) throw err;
      this.log.warn({ event: 'sftp-reconnect', reason: errorMessage(err) }, 'SFTP connection lost, reconnecting');
      session.end();
      return op(await this.connect());
    }
  }

  protected path(name: string): string {
    return posix.join(this.dir, name);
  }

  async list(): Promise<IntakeEntry[]> {
    const entries = await this.withConnection((s) => s.readdir(this.dir));
    // readdir's attributes are the entry's own (OpenSSH does not follow a link for them)
    return entries
      .filter((e) => !e.attrs.isDirectory())
      .map((e) => ({
        name: e.filename,
        size: e.attrs.size,
        mtimeMs: e.attrs.mtime * 1000,
        ...(e.attrs.isFile() ? {} : { notRegular: kindOf(e.attrs) }),
      }));
  }

  async stat(name: string): Promise<IntakeEntry | null> {
    try {
      const s = await this.withConnection((c) => c.stat(this.path(name)));
      return s.isFile() ? { name, size: s.size, mtimeMs: s.mtime * 1000 } : null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  pin(name: string): Promise<PinnedFile> {
    return this.pinAt(this.path(name), name);
  }

  protected pinAt(path: string, name: string): Promise<PinnedFile> {
    return this.withConnection((s) => pinRemote(s.sftp, path, name));
  }

  /** The name's own attributes (a link is not followed); null when it is gone. */
  protected async look(path: string): Promise<{ pin: FilePin; regular: boolean } | null> {
    try {
      const s = await this.withConnection((c) => c.lstat(path));
      return { pin: remotePin(s), regular: s.isFile() };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async close(): Promise<void> {
    this.session?.end();
    this.session = undefined;
  }
}
