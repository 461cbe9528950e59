import { posix } from 'node:path';
import { moverName } from '../moverName.js';
import type { SftpSession } from './session.js';

/** What a server's plain RENAME does, learned once per connection in the tool's own folder. */
export interface RenameTraits {
  /** it replaces an existing target (rclone's does; OpenSSH's and ProFTPD's refuse) */
  replaces: boolean;
  /** it answered done and moved nothing: no RENAME of this server is taken at its word (each is checked anyway) */
  answersWithoutDoing: boolean;
}

/**
 * Asks the server, in `work` (a private folder of this tool's own, never near a partner's file),
 * what its RENAME does to an existing target: two small files of its own, one renamed onto the
 * other, then looked at. Both are removed afterwards, whatever happened.
 */
export async function probeRename(session: SftpSession, work: string): Promise<RenameTraits> {
  const base = posix.join(work, moverName());
  const [from, onto] = [`${base}-a`, `${base}-b`];
  try {
    await writeSmall(session, from, 'a');
    await writeSmall(session, onto, 'b');
    const answeredDone = await session.rename(from, onto).then(
      () => true,
      () => false,
    );
    if (!answeredDone) return { replaces: false, answersWithoutDoing: false };
    const [fromLeft, ontoHolds] = await Promise.all([session.exists(from), readSmall(session, onto)]);
    if (!fromLeft && ontoHolds === 'a') return { replaces: true, answersWithoutDoing: false };
    // answered done, moved nothing: taken as the worst, a RENAME that may also replace
    return { replaces: true, answersWithoutDoing: true };
  } finally {
    await Promise.all([from, onto].map((p) => session.unlink(p).catch(() => undefined)));
  }
}

async function writeSmall(session: SftpSession, path: string, text: string): Promise<void> {
  const handle = await session.open(path, 'wx');
  try {
    await session.write(handle, path, Buffer.from(text), 0);
  } finally {
    await session.close(handle, path);
  }
}

async function readSmall(session: SftpSession, path: string): Promise<string | null> {
  const handle = await session.open(path, 'r').catch(() => null);
  if (!handle) return null;
  try {
    return (await session.readFully(handle, path, 0, 16)).toString();
  } finally {
    await session.close(handle, path);
  }
}
