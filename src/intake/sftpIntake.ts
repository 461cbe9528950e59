import { findLanded } from './findLanded.js';
import { sha256OfPinned } from './sha256Of.js';
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SftpClient from 'ssh2-sftp-client';
import type { Logger } from 'pino';
import { TransientError, UsageError, errorMessage } from '../errors.js';
import type { SFTPWrapper, Stats } from 'ssh2';
import type { HostKeyPolicy } from './hostKeys.js';
import { sftpRequest } from './sftpReadStream.js';
import { pinRemote, remotePin } from './sftpPin.js';
import { moverName } from './moverName.js';
import {
  FileGoneError,
  isPinned,
  suffixedName,
  type DecidedFile,
  type Destination,
  type FilePin,
  type Intake,
  type IntakeEntry,
  type PinnedFile,
  type RouteResult,
} from './intake.js';
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
  private readonly realFolders = new Map<string, string>();

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
    const what: Record<string, string> = {
      l: 'a symbolic link, not a regular file',
      p: 'a FIFO, not a regular file',
      s: 'a socket, not a regular file',
    };
    return entries
      .filter((e) => e.type !== 'd')
      .map((e) => ({
        name: e.name,
        size: e.size,
        mtimeMs: e.modifyTime,
        ...(e.type === '-' ? {} : { notRegular: what[e.type] ?? 'not a regular file' }),
      }));
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

  /** The raw channel of a connected client, for what the client library does not offer. */
  private static channel(c: SftpClient): SFTPWrapper {
    const sftp = (c as unknown as { sftp?: SFTPWrapper }).sftp;
    if (!sftp) throw Object.assign(new Error('No SFTP connection'), { code: 'ERR_NOT_CONNECTED' });
    return sftp;
  }

  async pin(name: string): Promise<PinnedFile> {
    return this.withConnection((c) => pinRemote(SftpIntake.channel(c), this.path(name), name));
  }

  /** The name's own attributes (a link is not followed); null when it is gone. */
  private async look(path: string): Promise<{ pin: FilePin; regular: boolean } | null> {
    try {
      const s = await this.withConnection((c) => sftpRequest<Stats>(SftpIntake.channel(c), (cb) => SftpIntake.channel(c).lstat(path, cb)));
      return { pin: remotePin(s), regular: s.isFile() };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  findLanded(name: string, to: Destination, sha256: string, size: number): Promise<string | null> {
    const dir = this.folders[to];
    return findLanded(name, sha256, size, {
      size: async (candidate) => {
        const s = await this.look(posix.join(dir, candidate));
        return s?.regular ? s.pin.size : null;
      },
      sha256: async (candidate) =>
        sha256OfPinned(await this.withConnection((c) => pinRemote(SftpIntake.channel(c), posix.join(dir, candidate), candidate))),
      location: (candidate) => this.url(posix.join(dir, candidate)),
    });
  }

  async landedShape(location: string): Promise<string | null> {
    const prefix = this.url('');
    if (!location.startsWith(prefix)) return null;
    const s = await this.look(location.slice(prefix.length));
    return s?.regular ? `${s.pin.size}:${s.pin.mtimeMs}` : null;
  }

  async ensureReachable(): Promise<void> {
    await this.withConnection((c) => c.realPath('.'));
  }

  /** The server's own path for a folder ('' when it does not exist), to tell an alias of the intake; asked once per folder. */
  private async realFolder(dir: string): Promise<string> {
    const known = this.realFolders.get(dir);
    if (known) return known;
    const real = await this.withConnection((c) => c.realPath(dir));
    if (real) this.realFolders.set(dir, real);
    return real;
  }

  /** Refuses a final folder that is the intake under another path (a symlink to it). */
  async refuseIntakeAliases(): Promise<void> {
    const intake = await this.realFolder(this.folders.intake);
    for (const name of ['archive', 'duplicates', 'rejected'] as const) {
      if ((await this.realFolder(this.folders[name])) === intake) {
        throw new UsageError(
          `--${name} ${this.folders[name]} is the intake folder ${this.folders.intake} on the server under another path`,
        );
      }
    }
  }

  private url(path: string): string {
    return `sftp://${this.loc.host}:${this.loc.port}${path}`;
  }

  /** The first name in `dir` for `name` that nothing holds yet (a rename onto it is refused if one appears meanwhile). */
  private async freeName(dir: string, name: string, from: number): Promise<{ target: string; n: number }> {
    for (let n = from; n < 10_000; n++) {
      const target = posix.join(dir, suffixedName(name, n));
      if (!(await this.withConnection((c) => c.exists(target)))) return { target, n };
    }
    throw new Error(`no free name for ${name} in ${dir}`);
  }

  /**
   * SFTP rename, which OpenSSH refuses when the target exists: so a clash is detected, not
   * overwritten, and the next free suffix is tried. Missing folders are created. Without
   * inodes, the decided file is known by size and mtime: looked at before the rename and, at
   * its landing place, after it; a re-upload caught by the rename goes back to the intake.
   * When the name no longer holds the decided file, the staged copy is uploaded instead.
   */
  async route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult> {
    const dir = this.folders[to];
    await this.withConnection(async (c) => {
      if (!(await c.exists(dir))) await c.mkdir(dir, true);
    });
    if ((await this.realFolder(dir)) === (await this.realFolder(this.folders.intake))) {
      throw new Error(`refusing to move ${name} into ${dir}: it is the intake folder itself`);
    }
    const now = await this.look(this.path(name));
    if (!now) throw new FileGoneError(name);
    if (!now.regular || !isPinned(now.pin, decided.pin)) return { location: await this.putStaged(decided, dir, name), replaced: true };
    for (let n = 0; n < 10_000;) {
      const free = await this.freeName(dir, name, n);
      n = free.n + 1;
      try {
        await this.withConnection((c) => c.rename(this.path(name), free.target));
      } catch (err) {
        if ((await this.stat(name)) === null) {
          // gone from the intake: moved by this very rename before the connection dropped, or by another run
          if (await this.withConnection((c) => c.exists(free.target))) return { location: this.url(free.target), replaced: false };
          throw new FileGoneError(name, { cause: err });
        }
        if (await this.withConnection((c) => c.exists(free.target))) continue; // taken meanwhile
        throw err;
      }
      const landed = await this.look(free.target);
      if (landed?.regular && isPinned(landed.pin, decided.pin)) return { location: this.url(free.target), replaced: false };
      // a re-upload took the name between the look and the rename: it goes back, the staged copy lands instead
      await this.putBack(free.target, name);
      return { location: await this.putStaged(decided, dir, name), replaced: true };
    }
    throw new Error(`no free name for ${name} in ${dir}`);
  }

  /** A file moved out by mistake, back under its intake name (or a suffixed one when an even newer upload took it). */
  private async putBack(from: string, name: string): Promise<void> {
    for (let n = 0; n < 10_000;) {
      const free = await this.freeName(this.folders.intake, name, n);
      n = free.n + 1;
      try {
        await this.withConnection((c) => c.rename(from, free.target));
        return;
      } catch (err) {
        if (!(await this.withConnection((c) => c.exists(free.target)))) throw err;
      }
    }
  }

  /** The staged copy, exactly the decided bytes, uploaded under a private name, then renamed to a free one. */
  private async putStaged(decided: DecidedFile, dir: string, name: string): Promise<string> {
    let temp = '';
    try {
      await this.withConnection((c) => {
        temp = posix.join(dir, moverName()); // a new one per attempt: a dropped attempt may have left its part
        // 'wx': never onto an existing file (ssh2 takes it; the client's types list fewer flags)
        return c.put(decided.stagedPath, temp, { writeStreamOptions: { flags: 'wx' as 'w', mode: 0o640 } });
      });
      for (let n = 0; n < 10_000;) {
        const free = await this.freeName(dir, name, n);
        n = free.n + 1;
        try {
          await this.withConnection((c) => c.rename(temp, free.target));
          return this.url(free.target);
        } catch (err) {
          if (!(await this.withConnection((c) => c.exists(free.target)))) throw err;
        }
      }
      throw new Error(`no free name for ${name} in ${dir}`);
    } catch (err) {
      if (temp) await this.withConnection((c) => c.delete(temp, true)).catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
    this.client = undefined;
  }
}
