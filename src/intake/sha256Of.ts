import { createHash } from 'node:crypto';
import type { Intake } from './intake.js';

/** The SHA-256 of a file in a folder read as an intake, streamed. */
export async function sha256Of(folder: Intake, name: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of await folder.read(name)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
