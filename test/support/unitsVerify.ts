import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The shipped units as systemd-analyze verify takes them: each run with its timer, the template as an instance. */
export const UNIT_GROUPS = [
  ['settle-ingest.service', 'settle-ingest.timer'],
  ['settle-ingest@finance.service', 'settle-ingest@finance.timer'],
  ['settle-ingest-watch.service'],
] as const;

const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * `systemd-analyze verify` of each group of units in `folder`, in a mount namespace of its own where
 * `over` (a folder of the host: /usr, /usr/local/bin) also holds what `extra` holds, laid over it by
 * an overlay mount: an install under that prefix, seen by nothing else on the host. Needs root.
 * Returns each group's exit status and stderr.
 */
export function verifyUnitsWith(folder: string, extra: string, over: string): { units: string; status: number | null; stderr: string }[] {
  return UNIT_GROUPS.map((group) => {
    const verify = ['systemd-analyze', 'verify', ...group.map((name) => join(folder, name))].map(quote).join(' ');
    const mount = `mount -t overlay overlay -o lowerdir=${quote(`${extra}:${over}`)} ${quote(over)}`;
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `${mount} && ${verify}`], { encoding: 'utf8' });
    return { units: group.join(' '), status: r.status, stderr: r.stderr };
  });
}
