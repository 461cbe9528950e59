import { posix } from 'node:path';
import type { Logger } from 'pino';
import { UsageError } from '../errors.js';
import { findLanded } from './findLanded.js';
import type { HostKeyPolicy } from './hostKeys.js';
import { FileGoneError, isPinned, suffixedName, type DecidedFile, type Intake, type RouteResult } from './intake.js';
import type { Destination } from '../destination.js';
import { moverName } from './moverName.js';
import { SftpFolder, type SftpCredentials } from './sftpFolder.js';
import { sha256OfPinned } from './sha256Of.js';
import type { SftpLocation } from './sftpUrl.js';

export type { SftpCredentials } from './sftpFolder.js';

export interface SftpFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/** The intake on an SFTP server: read as an SftpFolder, and files moved out of it with SFTP rename. */
export class SftpIntake extends SftpFolder implements Intake {
  readonly mtimeIsLocalClock = false;
  private readonly realFolders = new Map<string, string>();

  private constructor(
    loc: SftpLocation,
    private readonly folders: SftpFolders,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    log: Logger,
  ) {
    super(loc, folders.intake, creds, hostKeys, log);
  }

  static async open(
    loc: SftpLocation,
    folders: SftpFolders,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    log: Logger,
  ): Promise<SftpIntake> {
    const intake = new SftpIntake(loc, folders, creds, hostKeys, log);
    await intake.connectAndCheck('intake folder');
    return intake;
  }

  findLanded(name: string, to: Destination, sha256: string, size: number): Promise<string | null> {
    const dir = this.folders[to];
    return findLanded(name, sha256, size, {
      size: async (candidate) => {
        const s = await this.look(posix.join(dir, candidate));
        return s?.regular ? s.pin.size : null;
      },
      sha256: async (candidate) => sha256OfPinned(await this.pinAt(posix.join(dir, candidate), candidate)),
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
    await this.withConnection((s) => s.realpath('.'));
  }

  /** The server's own path for a folder ('' when it does not exist), to tell an alias of the intake; asked once per folder. */
  private async realFolder(dir: string): Promise<string> {
    const known = this.realFolders.get(dir);
    if (known) return known;
    const real = await this.withConnection((s) => s.realpath(dir));
    if (real) this.realFolders.set(dir, real);
    return real;
  }

  /** Refuses a final folder that is the intake under another path (a symlink to it). */
  async refuseIntakeAliases(): Promise<void> {
    const intake = await this.realFolder(this.dir);
    for (const name of ['archive', 'duplicates', 'rejected'] as const) {
      if ((await this.realFolder(this.folders[name])) === intake) {
        throw new UsageError(`--${name} ${this.folders[name]} is the intake folder ${this.dir} on the server under another path`);
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
      if (!(await this.withConnection((s) => s.exists(target)))) return { target, n };
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
    await this.withConnection((s) => s.mkdirs(dir));
    if ((await this.realFolder(dir)) === (await this.realFolder(this.dir))) {
      throw new Error(`refusing to move ${name} into ${dir}: it is the intake folder itself`);
    }
    const now = await this.look(this.path(name));
    if (!now) throw new FileGoneError(name);
    if (!now.regular || !isPinned(now.pin, decided.pin)) return { location: await this.putStaged(decided, dir, name), replaced: true };
    for (let n = 0; n < 10_000;) {
      const free = await this.freeName(dir, name, n);
      n = free.n + 1;
      try {
        await this.withConnection((s) => s.rename(this.path(name), free.target));
      } catch (err) {
        if ((await this.stat(name)) === null) {
          // gone from the intake: moved by this very rename before the connection dropped, or by another run
          if (await this.withConnection((s) => s.exists(free.target))) return { location: this.url(free.target), replaced: false };
          throw new FileGoneError(name, { cause: err });
        }
        if (await this.withConnection((s) => s.exists(free.target))) continue; // taken meanwhile
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
      const free = await this.freeName(this.dir, name, n);
      n = free.n + 1;
      try {
        await this.withConnection((s) => s.rename(from, free.target));
        return;
      } catch (err) {
        if (!(await this.withConnection((s) => s.exists(free.target)))) throw err;
      }
    }
  }

  /** The staged copy, exactly the decided bytes, uploaded under a private name, then renamed to a free one. */
  private async putStaged(decided: DecidedFile, dir: string, name: string): Promise<string> {
    let temp = '';
    try {
      await this.withConnection((s) => {
        temp = posix.join(dir, moverName()); // a new one per attempt: a dropped attempt may have left its part
        return s.upload(decided.stagedPath, temp, 0o640);
      });
      for (let n = 0; n < 10_000;) {
        const free = await this.freeName(dir, name, n);
        n = free.n + 1;
        try {
          await this.withConnection((s) => s.rename(temp, free.target));
          return this.url(free.target);
        } catch (err) {
          if (!(await this.withConnection((s) => s.exists(free.target)))) throw err;
        }
      }
      throw new Error(`no free name for ${name} in ${dir}`);
    } catch (err) {
      if (temp) await this.withConnection((s) => s.unlink(temp)).catch(() => undefined);
      throw err;
    }
  }
}
