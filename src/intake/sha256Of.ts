import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Intake } from './intake.js';

/** The SHA-256 of a file in a folder read as an intake, streamed from the file pinned once. */
export async function sha256Of(folder: Intake, name: string): Promise<string> {
  const file = await folder.pin(name);
  try {
    const hash = createHash('sha256');
    for await (const chunk of file.stream) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } finally {
    await file.close();
  }
}

/** The SHA-256 of a local file, opened without following a link. */
export async function sha256OfPath(path: string): Promise<string> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const hash = createHash('sha256');
    for await (const chunk of fh.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } finally {
    await fh.close();
  }
}
