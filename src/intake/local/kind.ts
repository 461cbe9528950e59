import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { siblingFolder, type IntakeFolders, type IntakeKind, type IntakeSettings } from '../intakeKind.js';
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

/** An absolute folder path with its links resolved, as far as it exists. */
function realFolderPath(folder: string): string {
  const missing: string[] = [];
  for (let at = folder; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...missing);
    } catch {
      // not there yet (archive/ is made by the first move): the real path of what is there, and the rest
      if (dirname(at) === at) return folder;
      missing.unshift(basename(at));
    }
  }
}

/** A local folder: a path, no scheme, no settings of its own. */
export const localFolderKind: IntakeKind<null> = {
  name: 'local',
  scheme: null,
  example: 'a local folder',
  optionKeys: [],
  settings: () => null,
  shownDefaults: () => ({}),
  parse: () => undefined,
  folders: localFolders,
  place: (folders, role) => ({ role, folder: folders[role], place: realFolderPath(folders[role]) }),
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
