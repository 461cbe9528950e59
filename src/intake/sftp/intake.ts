import { posix } from 'node:path';
import type { Logger } from '../../logEvents.js';
import { UsageError, errorMessage } from '../../errors.js';
import { findLanded } from '../findLanded.js';
import type { HostKeyPolicy } from './hostKeys.js';
import { rehearsalName, taggedName, type DecidedFile, type Intake, type RouteResult } from '../intake.js';
import type { Destination } from '../../destination.js';
import { SftpFolder, type SftpCredentials } from './folder.js';
import { SftpMover } from './move.js';
import { moverName } from '../moverName.js';
import type { SftpLimits } from './requests.js';
import { sha256OfPinned } from '../sha256Of.js';
import type { SftpLocation } from './url.js';

export type { SftpCredentials } from './folder.js';

export interface SftpFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/** The intake on an SFTP server: read as an SftpFolder, and files moved out of it by an SftpMover. */
export class SftpIntake extends SftpFolder implements Intake {
  readonly mtimeIsLocalClock = false;
  private readonly realFolders = new Map<string, string>();
  private readonly mover: SftpMover;

  private constructor(
    loc: SftpLocation,
    private readonly folders: SftpFolders,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    limits: SftpLimits,
    log: Logger,
  ) {
    super(loc, folders.intake, creds, hostKeys, limits, log);
    this.mover = new SftpMover({
      run: (op) => this.withConnection(op),
      location: (path) => this.url(path),
      intakeDir: folders.intake,
      log,
    });
  }

  static async open(
    loc: SftpLocation,
    folders: SftpFolders,
    creds: SftpCredentials,
    hostKeys: HostKeyPolicy,
    limits: SftpLimits,
    log: Logger,
  ): Promise<SftpIntake> {
    const intake = new SftpIntake(loc, folders, creds, hostKeys, limits, log);
    await intake.connectAndCheck('intake folder');
    return intake;
  }

  /**
   * Where an interrupted move left the file: under the name unique to that move (a server whose
   * RENAME replaces), or its staged copy's, else under its own name or a clash suffix.
   */
  async findLanded(name: string, to: Destination, sha256: string, size: number, movingRun: string): Promise<string | null> {
    const dir = this.folders[to];
    const probe = {
      size: async (candidate: string) => {
        const s = await this.look(posix.join(dir, candidate));
        return s.kind === 'file' ? s.stats.size : null;
      },
      sha256: async (candidate: string) => sha256OfPinned(await this.pinAt(posix.join(dir, candidate), candidate)),
      location: (candidate: string) => this.url(posix.join(dir, candidate)),
    };
    for (const unique of [taggedName(name, movingRun), taggedName(name, `${movingRun}-staged`)]) {
      if ((await probe.size(unique)) === size && (await probe.sha256(unique)) === sha256) return probe.location(unique);
    }
    return findLanded(name, sha256, size, probe);
  }

  async landedShape(location: string): Promise<string | null> {
    const prefix = this.url('');
    if (!location.startsWith(prefix)) return null;
    const s = await this.look(location.slice(prefix.length));
    return s.kind === 'file' ? `${s.stats.size}:${s.stats.mtime * 1000}` : null;
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

  /**
   * Refuses a final folder that is the intake under another path (a symlink to it): by the
   * server's REALPATH, and where that does not resolve links (rclone's), by a look: this host's
   * folder of its own made in the final folder must not show in the intake. Final folders not there
   * yet are looked at before the first move into them (finalFolder).
   */
  async refuseIntakeAliases(): Promise<void> {
    for (const name of ['archive', 'duplicates', 'rejected'] as const) {
      if (await this.withConnection((s) => s.exists(this.folders[name]))) await this.refuseAlias(name);
    }
  }

  /** Final folders found not to be the intake, each looked at once. */
  private readonly apart = new Set<Destination>();

  private async refuseAlias(to: Destination): Promise<void> {
    if (this.apart.has(to)) return;
    const dir = this.folders[to];
    const aliased = (await this.realFolder(dir)) === (await this.realFolder(this.dir)) || (await this.showsInIntake(dir));
    if (aliased) throw new UsageError(`--${to} ${dir} is the intake folder ${this.dir} on the server under another path`);
    this.apart.add(to);
  }

  /**
   * Whether an empty folder made in `dir` under a name of this process's own (a mover's name:
   * a dot name no listing takes, never shared with a concurrent mover) is seen in the intake.
   * The name is this call's alone, so a folder of that name is its own: made by a first try
   * whose connection dropped before its RMDIR, it is removed by the retry (withConnection),
   * whose MKDIR finds it there.
   */
  private async showsInIntake(dir: string): Promise<boolean> {
    const work = moverName();
    return this.withConnection(async (s) => {
      await s.mkdir(posix.join(dir, work)).catch(() => undefined);
      try {
        return await s.exists(posix.join(this.dir, work));
      } finally {
        await s.rmdir(posix.join(dir, work)).catch(() => undefined);
      }
    });
  }

  private url(path: string): string {
    return `sftp://${this.loc.host}:${this.loc.port}${path}`;
  }

  /** The final folder `to`, made when missing, and never the intake itself. */
  private async finalFolder(name: string, to: Destination): Promise<string> {
    const dir = this.folders[to];
    await this.withConnection((s) => s.mkdirs(dir));
    await this.refuseAlias(to).catch((err: unknown) => {
      throw new Error(`refusing to move ${name} into ${dir}: ${err instanceof Error ? err.message : String(err)}`);
    });
    return dir;
  }

  async rehearse(role: 'intake' | Destination): Promise<string> {
    const dir = role === 'intake' ? this.dir : this.folders[role];
    const login = `login ${this.loc.user}`;
    const there = await this.withConnection((s) => s.exists(dir));
    const probe = (parent: string) => posix.join(parent, rehearsalName());
    if (there) {
      const file = probe(dir);
      await this.withConnection(async (s) => {
        await s.close(await s.open(file, 'wx'), file);
        await s.unlink(file);
      }).catch((err: unknown) => {
        throw new Error(
          `the ${login} cannot write in ${dir} (${errorMessage(err)}): a run renames files ${role === 'intake' ? 'out of' : 'into'} it; give the login write access there on the server (chown ${this.loc.user} ${dir})`,
          { cause: err },
        );
      });
      return `${dir} present, the ${login} writes in it`;
    }
    if (role === 'intake') throw new Error(`intake folder ${dir} does not exist on the server`);
    const parent = posix.dirname(dir);
    const folder = probe(parent);
    await this.withConnection(async (s) => {
      await s.mkdir(folder);
      await s.rmdir(folder);
    }).catch((err: unknown) => {
      throw new Error(
        `${dir} is not there and the ${login} cannot make it in ${parent} (${errorMessage(err)}; a chroot's root is root's): make it on the server for the login (mkdir ${dir}; chown ${this.loc.user} ${dir}), or set --${role} to a folder it may write`,
        { cause: err },
      );
    });
    return `${dir} is not there yet: the ${login} may make it in ${parent}, as the first move there does`;
  }

  async route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult> {
    return this.mover.move(name, await this.finalFolder(name, to), decided);
  }

  async keepStaged(name: string, to: Destination, decided: DecidedFile): Promise<string> {
    return this.mover.landStaged(decided, await this.finalFolder(name, to), name);
  }
}
