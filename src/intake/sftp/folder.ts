import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../logEvents.js';
import type { ConnectConfig } from 'ssh2';
import { TransientError, UsageError, errorMessage } from '../../errors.js';
import type { HostKeyPolicy } from './hostKeys.js';
import { kindOf, type FolderReader, type IntakeEntry, type PinnedFile } from '../intake.js';
import { LINK, lookAt, pinRemote, type RemoteLook } from './pin.js';
import type { SftpLimits } from './requests.js';
import { offeredHostKeyTypes, SftpLoginError, SftpSession, isNotFound } from './session.js';
import type { SftpLocation } from './url.js';
import { readSftpKey, refuseNoCredentials, type SftpCredentials } from './credentials.js';

export type { SftpCredentials } from './credentials.js';

const CONNECT_ATTEMPTS = 4;
const FIRST_BACKOFF_MS = 500;
/** a handshake takes this long at most, or --sftp-timeout when that is shorter */
const READY_TIMEOUT_MS = 20_000;

/** ssh2's words when the server offers no host key type the client accepts. */
const NO_HOST_KEY_MATCH = /no matching host key format/i;

/** The entry type an `ls -l` line (READDIR's longname) starts with: `-`, `d`, `l`, …; undefined when it is no such line. */
const longnameType = (longname: string | undefined) => /^([-dlpscbD])[-rwxsStTlL]{9}/.exec(longname ?? '')?.[1];

/**
 * A folder on an SFTP server, read only: the archive for `audit`, `adopt` and reprocessing,
 * and what an SFTP intake reads. Host keys are always verified; every request has a deadline
 * (--sftp-timeout); an operation that hits a dropped connection reconnects (bounded, with
 * backoff) and runs once more.
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
    protected readonly limits: SftpLimits,
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
    limits: SftpLimits,
    log: Logger,
  ): Promise<SftpFolder> {
    const folder = new SftpFolder(loc, loc.path, creds, hostKeys, limits, log);
    await folder.connectAndCheck(what);
    return folder;
  }

  /**
   * The folder `loc.path`, or null when the server has nothing at that path: a final folder a run
   * makes with its first move there (rejected/ before anything was rejected). Anything else there
   * that is not a folder is refused, as openFolder does.
   */
  static async openFolderIfThere(
    loc: SftpLocation,
    what: string,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    limits: SftpLimits,
    log: Logger,
  ): Promise<SftpFolder | null> {
    const folder = new SftpFolder(loc, loc.path, creds, hostKeys, limits, log);
    return (await folder.connectAndCheck(what, { missingAsNull: true })) ? folder : null;
  }

  /** Connects, and refuses a folder that is missing on the server (false instead, with `missingAsNull`, when nothing is there). */
  protected async connectAndCheck(what: string, opts: { missingAsNull?: boolean } = {}): Promise<boolean> {
    refuseNoCredentials(this.creds);
    const session = await this.connect();
    const found = await session.stat(this.dir).catch((err: unknown) => (opts.missingAsNull && isNotFound(err) ? 'missing' : null));
    if (found === 'missing') {
      await this.close();
      return false;
    }
    if (!found?.isDirectory()) {
      await this.close();
      throw new UsageError(`${what} ${this.description} does not exist on the server or is not a folder`);
    }
    return true;
  }

  private connectConfig(): ConnectConfig {
    const privateKey = this.creds.keyPath ? readSftpKey(this.creds.keyPath) : undefined;
    return {
      host: this.loc.host,
      port: this.loc.port,
      username: this.loc.user,
      ...(privateKey ? { privateKey, passphrase: this.creds.keyPassphrase } : {}),
      ...(this.creds.agentSocket ? { agent: this.creds.agentSocket } : {}),
      ...(this.creds.password ? { password: this.creds.password } : {}),
      readyTimeout: Math.min(READY_TIMEOUT_MS, this.limits.timeoutMs),
      // a connection that silently stops answering is declared dead after about 30 s
      keepaliveInterval: 10_000,
      keepaliveCountMax: 3,
      // the types known_hosts has for the host first (never DSA, which is refused: knownTypes)
      algorithms: { serverHostKey: { prepend: this.hostKeys.knownTypes() } } as never,
      hostVerifier: (key: Buffer) => {
        const verdict = this.hostKeys.verify(key);
        if (!verdict.ok) this.hostKeyProblem = verdict.reason;
        return verdict.ok;
      },
    };
  }

  private hostKeyProblemFound(): string | undefined {
    return this.hostKeyProblem;
  }

  private async connect(): Promise<SftpSession> {
    const config = this.connectConfig();
    let lastError: unknown;
    for (let attempt = 1; attempt <= CONNECT_ATTEMPTS; attempt++) {
      this.hostKeyProblem = undefined;
      this.refuseWhenStopping();
      try {
        this.session = await SftpSession.connect(config, this.limits);
        return this.session;
      } catch (err) {
        // set by the host-key callback during the connect above, which the compiler's narrowing cannot see
        const hostKeyProblem = this.hostKeyProblemFound();
        if (hostKeyProblem) throw new UsageError(`refusing ${this.description}: ${hostKeyProblem}`, { cause: err });
        if (NO_HOST_KEY_MATCH.test(errorMessage(err))) {
          const offered = await offeredHostKeyTypes(config);
          throw new UsageError(
            `refusing ${this.description}: it offers no host key this tool accepts (it offers ${offered.join(', ') || 'none'}); DSA (ssh-dss) keys are refused: ask for an ed25519, ECDSA or RSA host key`,
            { cause: err },
          );
        }
        if (err instanceof SftpLoginError) {
          throw new UsageError(`${this.description} refused the login: ${errorMessage(err)}`, { cause: err });
        }
        lastError = err;
        if (attempt < CONNECT_ATTEMPTS) {
          const wait = FIRST_BACKOFF_MS * 2 ** (attempt - 1);
          this.log.warn({ event: 'sftp-retry', attempt, waitMs: wait, reason: errorMessage(err) }, 'SFTP server unreachable, retrying');
          await sleep(wait, undefined, this.limits.stop ? { signal: this.limits.stop } : {}).catch(() => undefined);
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

  /** After a stop request no new connection is made: what it was for waits for the next run. */
  private refuseWhenStopping(): void {
    const stop = this.limits.stop;
    if (stop?.aborted) {
      throw new TransientError(`asked to stop (${String(stop.reason ?? 'signal')}): not connecting to ${this.description} again`);
    }
  }

  /** Runs `operation`; when the connection dropped under it, reconnects (bounded) and runs it once more. */
  protected async withConnection<T>(operation: (s: SftpSession) => Promise<T>): Promise<T> {
    const session = this.session && !this.session.lost ? this.session : await this.connect();
    try {
      return await operation(session);
    } catch (err) {
      if (!(await session.droppedBy(err))) throw err;
      this.log.warn({ event: 'sftp-reconnect', reason: errorMessage(err) }, 'SFTP connection lost, reconnecting');
      session.end();
      return operation(await this.connect());
    }
  }

  protected path(name: string): string {
    return posix.join(this.dir, name);
  }

  /**
   * Every entry but folders. What an entry is comes from the listing's own attributes and its
   * `ls -l` line: where the two disagree (a link listed with its target's attributes), it is
   * not taken as a regular file.
   */
  async list(): Promise<IntakeEntry[]> {
    const entries = await this.withConnection((s) => s.readdir(this.dir));
    const listed: IntakeEntry[] = [];
    for (const e of entries) {
      const type = longnameType(e.longname);
      if (e.attrs.isDirectory() && (type === undefined || type === 'd')) continue;
      const notRegular = !e.attrs.isFile()
        ? kindOf(e.attrs)
        : type === 'l'
          ? LINK
          : type !== undefined && type !== '-'
            ? 'not a regular file (the listing says so)'
            : undefined;
      listed.push({ name: e.filename, size: e.attrs.size, mtimeMs: e.attrs.mtime * 1000, ...(notRegular ? { notRegular } : {}) });
    }
    return listed;
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
    return this.withConnection((s) => pinRemote(s, path, name));
  }

  /** What the server says is at `path`: by LSTAT and READLINK together (lookAt). */
  protected look(path: string): Promise<RemoteLook> {
    return this.withConnection((s) => lookAt(s, path));
  }

  async close(): Promise<void> {
    this.session?.end();
    this.session = undefined;
  }
}
