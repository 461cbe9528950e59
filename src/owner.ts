import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Who holds a claim: enough to tell, on the same host, whether that process is still alive. */
export interface ClaimOwner {
  host: string;
  pid: number;
  /** the process's start time as the kernel reports it; tells a reused pid from the original */
  startedAt: string;
}

/** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. Null off Linux or when gone. */
function procStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may contain spaces and parentheses: split after its closing paren
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] ?? null;
  } catch {
    return null;
  }
}

/** This process's start time: read once (every claim and every move names its owner), it never changes. */
let ownStartTime: string | undefined;

export function currentOwner(): ClaimOwner {
  ownStartTime ??= procStartTime(process.pid) ?? 'unknown';
  return { host: hostname(), pid: process.pid, startedAt: ownStartTime };
}

/**
 * Whether a claim's owner is provably gone: only decidable on the owner's own host, where
 * the pid no longer exists or now belongs to a process that started at another time.
 */
export function ownerIsGone(owner: { host: string | null; pid: number | null; startedAt: string | null }): boolean {
  if (owner.host !== hostname() || owner.pid === null) return false;
  const started = procStartTime(owner.pid);
  if (started === null) {
    try {
      process.kill(owner.pid, 0);
      return false; // alive but /proc unreadable: not provable
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }
  return owner.startedAt !== 'unknown' && owner.startedAt !== started;
}
