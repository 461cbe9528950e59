import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { currentOwner, ownerIsGone } from '../owner.js';

/**
 * Names of a mover's temporary entries (a captured intake name, a copy on its way into a
 * final folder). Each is unique to one process and one call, so concurrent movers never share
 * one, and says whose it is, so that the next run can tell a dead mover's leftovers from a
 * live one's. Its length never depends on the file's name. A leading dot keeps it out of
 * every listing (names.ts: dot-files are never ours to take).
 */
const PREFIX = '.settle-moving-';
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const PATTERN = /^\.settle-moving-([0-9a-f]{8})-(\d+)-([^-]+)-[0-9a-f]+$/;

export function moverName(): string {
  const me = currentOwner();
  return `${PREFIX}${HOST}-${me.pid}-${me.startedAt}-${randomBytes(6).toString('hex')}`;
}

/**
 * The folder, inside a final folder on an SFTP server, where this host's movers keep their
 * temporaries (a copy on its way in, a probe of the server's RENAME): one per host, so that a
 * run sweeps its own host's dead movers' leftovers by listing it alone, never the archive.
 */
export function workFolderName(): string {
  return `${PREFIX}${HOST}`;
}

/** Whether a path is in a mover's work folder or is one of its temporaries: the tool's own, never a partner's upload. */
export function isMoverPath(path: string): boolean {
  return path.split('/').some((part) => part.startsWith(PREFIX));
}

export function isMoverName(name: string): boolean {
  return PATTERN.test(name);
}

/** Whether the process that made this name is provably gone: decidable only on its own host. */
export function moverIsGone(name: string): boolean {
  const m = PATTERN.exec(name);
  if (!m || m[1] !== HOST) return false;
  return ownerIsGone({ host: hostname(), pid: Number(m[2]), startedAt: m[3]! });
}
