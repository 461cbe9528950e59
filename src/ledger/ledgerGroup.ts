import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** The group's id: a number as it is, a name as the system's group database (NSS, LDAP too) has it. */
export function ledgerGroupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  try {
    const entry = execFileSync('getent', ['group', group], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const gid = Number(entry.split(':')[2]);
    if (Number.isInteger(gid)) return gid;
  } catch {
    // getent exits 2 for a group it does not know
  }
  throw new UsageError(`--ledger-group: no group "${group}" on this host (getent group ${group})`);
}

const SETGID = 0o2000;

/**
 * `migrate --ledger-group GROUP` (its id from ledgerGroupId, before anything is touched): lets the members of GROUP (a monitoring user) read a SQLite
 * ledger, and nothing more. The file and its -wal and -shm become GROUP's, mode 0640; its folder
 * GROUP's, g+rx and setgid, so the -wal and -shm SQLite creates again at the next run's open take
 * the group from the folder (and their mode from the file). A reader opens the ledger read-only:
 * with a run open it reads the -wal and -shm that exist (SQLite's rule for read-only WAL readers);
 * with none, when SQLite has removed them, it reads a copy of the file (see openReadOnly).
 */
export function shareLedgerWithGroup(path: string, group: string, gid: number): void {
  const folder = dirname(resolve(path));
  try {
    chownSync(folder, -1, gid);
    chmodSync(folder, (statSync(folder).mode & 0o7777) | 0o050 | SETGID);
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      if (!existsSync(file)) continue;
      chownSync(file, -1, gid);
      chmodSync(file, 0o640);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM') throw err;
    throw new UsageError(
      `--ledger-group: may not give ${folder} and the ledger to group "${group}": run migrate as the ledger's owner, a member of that group (usermod -aG ${group} USER), or as root`,
    );
  }
}
