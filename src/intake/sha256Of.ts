import { createHash } from 'node:crypto';
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
