import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Destination } from '../../destination.js';
import { siblingFolder, type FolderLooks, type IntakeFolders, type IntakeKind, type IntakeSettings } from '../intakeKind.js';
import { LocalFolder } from './folder.js';
import { LocalIntake, refuseIntakeAliases } from './intake.js';

/** A local intake folder and its final folders: archive/, duplicates/ and rejected/ beside it unless set. */
function localFolders(s: IntakeSettings): IntakeFolders {
  const intake = resolve(s.intake!);
  // siblingFolder's path, which is resolved already: a config of 20,000 partners resolves each of their folders once
  const beside = (name: Destination) => childPath(parentPath(intake), name);
  return {
    server: null,
    intake,
    archive: s.archive === undefined ? beside('archive') : resolve(s.archive),
    duplicates: s.duplicates === undefined ? beside('duplicates') : resolve(s.duplicates),
    rejected: s.rejected === undefined ? beside('rejected') : resolve(s.rejected),
  };
}

// A resolved path's parent and a child of it, as dirname and join make them, without their normalizing: the paths
// here are resolved (absolute, no `.`, `..`, doubled or trailing `/`), and a realpath is too.

/** The parent of a resolved path; `/` for `/`. */
const parentPath = (path: string): string => path.slice(0, Math.max(path.lastIndexOf('/'), 1));

/** A name (no `/`, not `.` or `..`) in a resolved folder. */
const childPath = (folder: string, name: string): string => (folder === '/' ? `/${name}` : `${folder}/${name}`);

/**
 * An absolute, resolved folder path with its links resolved, as far as it exists: a folder not
 * there yet (archive/ is made by the first move) is the real path of what is there, and the rest.
 * Each parent is resolved once in a look (`seen`), the folder itself each time asked (a partner's
 * folders are its own, their parents shared): a link is followed where it is, anything else is
 * its parent's real path and its own name.
 */
function realFolderPath(folder: string, seen: FolderLooks): string {
  return lookAt(folder, seen).real;
}

/** A folder's look, kept in `seen`. */
function look(folder: string, seen: FolderLooks): { real: string; there: boolean } {
  const known = seen.get(folder);
  if (known !== undefined) return known;
  const found = lookAt(folder, seen);
  seen.set(folder, found);
  return found;
}

/** A folder's real path, and whether it is there, from its parent's look. */
function lookAt(folder: string, seen: FolderLooks): { real: string; there: boolean } {
  const parentFolder = parentPath(folder);
  if (parentFolder === folder) return { real: folder, there: true };
  const parent = look(parentFolder, seen);
  // under a parent that is its own real path the folder's is the path itself (no new text for each partner's folder)
  const real =
    parent.real === parentFolder ? folder : childPath(parent.real, folder.slice(parentFolder.length + (parentFolder === '/' ? 0 : 1)));
  // nothing is under a folder that is not there: no look needed
  const entry = parent.there ? lstatSync(folder, { throwIfNoEntry: false }) : undefined;
  if (entry === undefined) return { real, there: false };
  if (!entry.isSymbolicLink()) return { real, there: true };
  const target = linkTarget(folder);
  return target === undefined ? { real, there: false } : { real: target, there: true };
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
