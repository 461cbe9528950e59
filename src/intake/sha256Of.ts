import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { FolderReader, PinnedFile } from './intake.js';

/** The SHA-256 of what a stream carries. */
export async function sha256OfStream(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The SHA-256 of a file pinned once (opened without following a link), closed afterwards. */
export async function sha256OfPinned(file: PinnedFile): Promise<string> {
  try {
    return await sha256OfStream(file.stream);
  } finally {
    await file.close();
  }
}

/** The SHA-256 of a file in a folder read as an intake. */
export async function sha256Of(folder: FolderReader, name: string): Promise<string> {
  return sha256OfPinned(await folder.pin(name));
}

/** The SHA-256 of a local file, opened without following a link. */
export async function sha256OfPath(path: string): Promise<string> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await sha256OfStream(fh.createReadStream({ autoClose: false }));
  } finally {
    await fh.close();
  }
}
