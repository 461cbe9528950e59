import { lstat, stat } from '../../syncFs.js';
import { mkdir, rmdir, unlink, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from '../../logEvents.js';
import { TransientError, UsageError, errorMessage } from '../../errors.js';
import { arrivalOf, rehearsalName, type DecidedFile, type Intake, type IntakeEntry, type RouteResult } from '../intake.js';
import type { Destination } from '../../destination.js';
import { findLanded } from '../findLanded.js';
import { isGone, LocalFolder } from './folder.js';
import { sha256OfPath } from '../sha256Of.js';
import { landStagedCopy, moveNoOverwrite, recoverInterruptedMoves, sameFolder } from './moveNoOverwrite.js';

export interface LocalFolders {
  intake: string;
  archive: string;
  duplicates: string;
  rejected: string;
}

/** Refuses a final folder that is the intake under another path (a symlink to it, a bind mount of it). */
export async function refuseIntakeAliases(localFolders: LocalFolders): Promise<void> {
  for (const name of ['archive', 'duplicates', 'rejected'] as const) {
    if (await sameFolder(localFolders.intake, localFolders[name])) {
      throw new UsageError(
        `--${name} ${localFolders[name]} is the intake folder ${localFolders.intake} under another path: it must be a folder of its own`,
      );
    }
  }
}

export class LocalIntake extends LocalFolder implements Intake {
  readonly mtimeIsLocalClock = true;
  private recovered = false;

  /** `runLog`: set for the intake of a run, the only command that moves files out of it */
  constructor(
    private readonly folders: LocalFolders,
    private readonly runLog?: Logger,
  ) {
    super(folders.intake);
  }

  static async open(folders: LocalFolders, runLog?: Logger): Promise<LocalIntake> {
    const s = await stat(folders.intake).catch(() => null);
    if (!s?.isDirectory()) throw new UsageError(`intake folder ${folders.intake} does not exist or is not a folder`);
    return new LocalIntake(folders, runLog);
  }

  override async list(): Promise<IntakeEntry[]> {
    if (!this.recovered && this.runLog) {
      // a run's first look puts back what a killed run captured while moving it
      this.recovered = true;
      for (const name of await recoverInterruptedMoves(this.folders.intake)) {
        this.runLog.warn({ event: 'move-interrupted', file: name }, 'put back in the intake after a run was killed while moving it');
      }
    }
    return super.list();
  }

  async route(name: string, to: Destination, decided: DecidedFile): Promise<RouteResult> {
    const r = await moveNoOverwrite(this.folders.intake, name, this.folders[to], decided);
    return { location: r.path, replaced: r.replaced };
  }

  keepStaged(name: string, to: Destination, decided: DecidedFile): Promise<string> {
    return landStagedCopy(decided, this.folders[to], name);
  }

  /** (`movingRun` names nothing here: a local move never replaces, so a file lands under its own name or a clash suffix.) */
  findLanded(name: string, to: Destination, sha256: string, size: number, _movingRun?: string): Promise<string | null> {
    const dir = this.folders[to];
    return findLanded(name, sha256, size, {
      size: async (candidate) => {
        const s = await lstat(join(dir, candidate)).catch((err) => (isGone(err) ? null : Promise.reject(err)));
        return s?.isFile() ? s.size : null;
      },
      sha256: (candidate) => sha256OfPath(join(dir, candidate)),
      location: (candidate) => join(dir, candidate),
    });
  }

  async landedShape(location: string): Promise<string | null> {
    const s = await lstat(location).catch((err) => (isGone(err) ? null : Promise.reject(err)));
    return s?.isFile() ? arrivalOf(s) : null;
  }

  async rehearse(role: 'intake' | Destination): Promise<string> {
    const dir = role === 'intake' ? this.folders.intake : this.folders[role];
    const user = `user ${userInfo().username}`;
    const found = await stat(dir).catch(() => null);
    if (found && !found.isDirectory()) throw new Error(`${role} ${dir} is not a folder`);
    if (found) {
      const file = join(dir, rehearsalName());
      try {
        await writeFile(file, '', { flag: 'wx', mode: 0o600 });
        await unlink(file);
      } catch (err) {
        throw new Error(
          `${role} ${dir} is not writable by the ${user} (${errorMessage(err)}): a run renames files ${role === 'intake' ? 'out of' : 'into'} it; chown ${userInfo().username} ${dir}, or grant it write access`,
          { cause: err },
        );
      }
      return `${dir} present, the ${user} writes in it`;
    }
    if (role === 'intake') throw new Error(`intake folder ${dir} does not exist: create it, or correct --intake`);
    // the first move makes the folder and any missing above it: tried in the nearest one that is there
    let parent = dirname(dir);
    while (!(await stat(parent).catch(() => null)) && dirname(parent) !== parent) parent = dirname(parent);
    const folder = join(parent, rehearsalName());
    try {
      await mkdir(folder, { mode: 0o700 });
      await rmdir(folder);
    } catch (err) {
      throw new Error(
        `${role} ${dir} does not exist and the ${user} cannot make it in ${parent} (${errorMessage(err)}): mkdir -p ${dir} && chown ${userInfo().username} ${dir}`,
        { cause: err },
      );
    }
    return `${dir} is not there yet: the first move there makes it in ${parent}`;
  }

  async ensureReachable(): Promise<void> {
    const s = await stat(this.folders.intake).catch((err) => {
      throw new TransientError(`intake folder ${this.folders.intake} cannot be read: ${(err as Error).message}`, { cause: err });
    });
    if (!s.isDirectory()) throw new TransientError(`intake ${this.folders.intake} is no longer a folder`);
  }
}
