import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import SftpClient from 'ssh2-sftp-client';
import type { Logger } from 'pino';
import { TransientError, UsageError, errorMessage } from '../errors.js';
import type { SFTPWrapper } from 'ssh2';
import type { HostKeyPolicy } from './hostKeys.js';
import { sftpReadStream } from './sftpReadStream.js';
import { FileGoneError, suffixedName, type Destination, type Intake, type IntakeEntry } from './intake.js';
import type { SftpLocation } from './sftpUrl.js';

export interface SftpCredentials {
  keyPath?: string;
  keyPassphrase?: string;
  password?: string;
  agentSocket?: string;
}

export interface SftpFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

const CONNECT_ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 500;

const errCode = (err: unknown) => (err as { code?: unknown }).code;
const isNotFound = (err: unknown) => errCode(err) === 'ENOENT' || errCode(err) === 2;

/** Errors that a new connection may cure; anything else (auth, host key, permissions) will not. */
function isConnectionProblem(err: unknown): boolean {
  const code = errCode(err);
  if (
    typeof code === 'string' &&
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ERR_NOT_CONNECTED', 'ENOTCONN'].includes(code)
  ) {
    return true;
  }
  // ssh2-sftp-client dereferences its dropped channel in some calls: a TypeError means the same
  return /No SFTP connection|Not connected|connection lost|socket|ended|closed|Timed out|reading '(realpath|readdir|stat|rename|open)'/i.test(
    errorMessage(err),
  );
}

/**
 * The intake on an SFTP server. Host keys are always verified; reads, stats and renames
 * that hit a dropped connection reconnect (bounded, with backoff) and try once more.
 */
export class SftpIntake implements Intake {
  readonly description: string;
  readonly mtimeIsLocalClock = false;
  private client: SftpClient | undefined;
  private hostKeyProblem: string | undefined;

  private constructor(
    private readonly loc: SftpLocation,
    private readonly folders: SftpFolders,
    private readonly creds: SftpCredentials,
    private readonly hostKeys: HostKeyPolicy,
    private readonly log: Logger,
  ) {
    this.description = `sftp://${loc.user}@${loc.host}:${loc.port}${loc.path}`;
  }

  static async open(
    loc: SftpLocation,
    folders: SftpFolders,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    log: Logger,
  ): Promise<SftpIntake> {
    if (!creds.keyPath && !creds.agentSocket && !creds.password) {
      throw new UsageError('no SFTP credentials: set --sftp-key, run an ssh-agent (SSH_AUTH_SOCK), or set SETTLE_SFTP_PASSWORD');
    }
    const intake = new SftpIntake(loc, folders, creds, hostKeys, log);
    await intake.connect();
    const found = await intake.client!.stat(folders.intake).catch(() => null);
    if (!found?.isDirectory) {
      await intake.close();
      throw new UsageError(`intake folder ${intake.description} does not exist on the server or is not a folder`);
    }
    return intake;
  }

  private async connect(): Promise<SftpClient> {
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
      // a connection that drops is forgotten, so that the next operation reconnects
      const forget = (why: string) => {
        this.log.debug({ event: 'sftp-connection', reason: why }, 'sftp connection gone');
        if (this.client === client) this.client = undefined;
      };
      const client: SftpClient = new SftpClient('settle-ingest', {
        error: (err: unknown) => forget(errorMessage(err)),
        end: () => forget('ended'),
        close: () => forget('closed'),
      });
      this.hostKeyProblem = undefined;
      try {
        await client.connect({
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
        this.client = client;
        return client;
      } catch (err) {
        await client.end().catch(() => undefined);
        if (this.hostKeyProblem) throw new UsageError(`refusing ${this.description}: ${this.hostKeyProblem}`, { cause: err });
        if (/authentication|auth methods|passphrase|privateKey/i.test(errorMessage(err))) {
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

  /** Runs `op`; on a dropped connection reconnects (bounded) and runs it once more. */
  private async withConnection<T>(op: (c: SftpClient) => Promise<T>): Promise<T> {
    try {
      return await op(this.client ?? (await this.connect()));
    } catch (err) {
      if (!isConnectionProblem(err)) throw err;
      this.log.warn({ event: 'sftp-reconnect', reason: errorMessage(err) }, 'SFTP connection lost, reconnecting');
      await this.client?.end().catch(() => undefined);
      this.client = undefined;
      return op(await this.connect());
    }
  }

  private path(name: string): string {
    return posix.join(this.folders.intake, name);
  }

  async list(): Promise<IntakeEntry[]> {
    const entries = await this.withConnection((c) => c.list(this.folders.intake));
    return entries.filter((e) => e.type === '-').map((e) => ({ name: e.name, size: e.size, mtimeMs: e.modifyTime }));
  }

  async stat(name: string): Promise<IntakeEntry | null> {
    try {
      const s = await this.withConnection((c) => c.stat(this.path(name)));
      return s.isFile ? { name, size: s.size, mtimeMs: s.modifyTime } : null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async read(name: string): Promise<Readable> {
    if ((await this.stat(name)) === null) throw new FileGoneError(name);
    return this.withConnection(async (c) => {
      const sftp = (c as unknown as { sftp?: SFTPWrapper }).sftp;
      if (!sftp) throw Object.assign(new Error('No SFTP connection'), { code: 'ERR_NOT_CONNECTED' });
      return sftpReadStream(sftp, this.path(name));
    });
  }

  async ensureReachable(): Promise<void> {
    await this.withConnection((c) => c.realPath('.'));
  }

  /**
   * SFTP rename, which OpenSSH refuses when the target exists: so a clash is detected, not
   * overwritten, and the next free suffix is tried. Missing folders are created.
   */
  async route(name: string, to: Destination): Promise<string> {
    const dir = this.folders[to];
    await this.withConnection(async (c) => {
      if (!(await c.exists(dir))) await c.mkdir(dir, true);
    });
    for (let n = 0; n < 10_000; n++) {
      const target = posix.join(dir, suffixedName(name, n));
      if (await this.withConnection((c) => c.exists(target))) continue;
      try {
        await this.withConnection((c) => c.rename(this.path(name), target));
        return `sftp://${this.loc.host}:${this.loc.port}${target}`;
      } catch (err) {
        if ((await this.stat(name)) === null) {
          // gone from the intake: moved by this very rename before the connection dropped, or by another run
          if (await this.withConnection((c) => c.exists(target))) return `sftp://${this.loc.host}:${this.loc.port}${target}`;
          throw new FileGoneError(name, { cause: err });
        }
        if (await this.withConnection((c) => c.exists(target))) continue; // taken meanwhile
        throw err;
      }
    }
    throw new Error(`no free name for ${name} in ${dir}`);
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}
