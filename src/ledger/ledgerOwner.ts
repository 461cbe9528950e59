import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** A user's name as the system's user database (NSS, LDAP too) has it, else `uid N`. */
export function userName(uid: number): string {
  try {
    const entry = execFileSync('getent', ['passwd', String(uid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const name = entry.split(':')[0];
    if (name) return name;
  } catch {
    // getent exits 2 for a user it does not know
  }
  return `uid ${uid}`;
}

/**
 * `migrate` as root would create a SQLite ledger that only root may open (mode 0600, root's):
 * where its folder belongs to another user (the service user of the install steps, who owns
 * /srv/settle), every later run and `status` as that user would fail on it. Refused before
 * anything is touched, naming the user to run it as. An existing ledger keeps its owner when
 * root upgrades it, and a folder of root's own is root's choice.
 */
export function refuseLedgerOnlyRootCouldWrite(path: string): void {
  if (process.getuid?.() !== 0 || existsSync(path)) return;
  const folder = dirname(resolve(path));
  let owner: number;
  try {
    owner = statSync(folder).uid;
  } catch {
    return; // a missing folder is the ledger's own open to report
  }
  if (owner === 0) return;
  const user = userName(owner);
  const as = user.startsWith('uid ') ? `#${owner}` : user;
  throw new UsageError(
    `ledger ${path} would be created by root, readable by root alone, in ${folder}, which belongs to ${user}: run migrate as that user (sudo -u ${as} settle-ingest migrate …)`,
  );
}
