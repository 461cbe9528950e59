import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { siblingFolder, type FolderLooks, type IntakeFolders, type IntakeKind, type IntakeSettings } from '../intakeKind.js';
import { LocalFolder } from './folder.js';
import { LocalIntake, refuseIntakeAliases } from './intake.js';

/** A local intake folder and its final folders: archive/, duplicates/ and rejected/ beside it unless set. */
function localFolders(s: IntakeSettings): IntakeFolders {
  const intake = resolve(s.intake!);
  return {
    server: null,
    intake,
    archive: resolve(s.archive ?? siblingFolder(intake, 'archive')),
    duplicates: resolve(s.duplicates ?? siblingFolder(intake, 'duplicates')),
    rejected: resolve(s.rejected ?? siblingFolder(intake, 'rejected')),
  };
}

/**
 * An absolute folder path with its links resolved, as far as it exists: a folder not there yet
 * (archive/ is made by the first move) is the real path of what is there, and the rest. Each
 * parent is resolved once in a look (`seen`): a link is followed where it is, anything else is
 * its parent's real path and its own name.
 */
function realFolderPath(folder: string, seen: FolderLooks): string {
  return look(folder, seen).real;
}

function look(folder: string, seen: FolderLooks): { real: string; there: boolean } {
  const known = seen.get(folder);
  if (known !== undefined) return known;
  const parentPath = dirname(folder);
  let found: { real: string; there: boolean };
  if (parentPath === folder) found = { real: folder, there: true };
  else {
    const parent = look(parentPath, seen);
    const under = { real: join(parent.real, basename(folder)), there: false };
    // nothing is under a folder that is not there: no look needed
    const entry = parent.there ? lstatSync(folder, { throwIfNoEntry: false }) : undefined;
    if (entry === undefined) found = under;
    else if (!entry.isSymbolicLink()) found = { real: under.real, there: true };
    else {
      const target = linkTarget(folder);
      found = target === undefined ? under : { real: target, there: true };
    }
  }
  seen.set(folder, found);
  return found;
}

/** Where a link leads, resolved whole; undefined for a link that leads nowhere (taken as the name it is). */
function linkTarget(link: string): string | undefined {
  try {
    return realpathSync.native(link);
  } catch {
    return undefined;
  }
}

/** A local folder: a path, no scheme, no settings of its own. */
export const localFolderKind: IntakeKind<null, Record<never, never>> = {
  name: 'local',
  scheme: null,
  example: 'a local folder',
  options: {},
  settings: () => null,
  shownDefaults: () => ({}),
  parse: () => undefined,
  folders: localFolders,
  place: (folders, role, seen) => ({ role, folder: folders[role], place: realFolderPath(folders[role], seen) }),
  async open(_own, folders, log) {
    const local = await LocalIntake.open(folders, log);
    await refuseIntakeAliases(folders);
    return local;
  },
  async checkAccess(_own, folders) {
    await LocalIntake.open(folders);
    await refuseIntakeAliases(folders);
  },
  // a local folder that is not there is null, required or not: a run makes it with its first move there
  async openFolder(settings, _own, role, setting) {
    const dir = role === 'intake' ? resolve(settings.intake!) : resolve(setting ?? siblingFolder(resolve(settings.intake!), role));
    return existsSync(dir) ? new LocalFolder(dir) : null;
  },
};
