import { execFileSync } from 'node:child_process';
import { userInfo } from 'node:os';

/**
 * Who asked, for the ledger (a waiver's, a reprocessing's, an adoption's operator): the real user,
 * the login of the process's real uid as the system's user database says (getpwuid). Under sudo
 * the real uid is root's and the person is the one sudo names: `SUDO_USER` is believed only then,
 * when the real uid is root and sudo set it (with its `SUDO_UID`), never from another caller, who
 * could set it to anyone (`SUDO_USER=the-cfo settle-ingest waive …`). A uid without a login is `uid N`.
 */
export function operatorName(env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.();
  if (uid === undefined) return userInfo().username; // no uids on this system
  if (uid === 0 && env.SUDO_USER && /^\d+$/.test(env.SUDO_UID ?? '')) return env.SUDO_USER;
  return loginOf(uid);
}

/** The login of a uid as the system's user database says, or `uid N` where it has none (a container's arbitrary uid). */
export function loginOf(uid: number): string {
  try {
    // os.userInfo() looks up the effective uid, the same as the real one but in a set-uid process
    if (process.geteuid?.() === uid) return userInfo().username;
    const entry = execFileSync('getent', ['passwd', String(uid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return entry.split(':')[0] || `uid ${uid}`;
  } catch {
    return `uid ${uid}`; // no login for it (a container's arbitrary uid)
  }
}
