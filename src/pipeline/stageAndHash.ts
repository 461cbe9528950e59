import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Intake, IntakeEntry } from '../intake/intake.js';

export type Staged =
  | { kind: 'staged'; path: string; sha256: string; size: number }
  /** the file changed while it was copied: it was not complete after all */
  | { kind: 'changed'; reason: string }
  | { kind: 'gone' };

/**
 * One read of the file: its bytes go to a private staging file while they are hashed, so
 * the content that is loaded is exactly the content that was claimed.
 */
export async function stageAndHash(intake: Intake, entry: IntakeEntry, stagingDir: string, seq: number): Promise<Staged> {
  const path = join(stagingDir, `${seq}-${entry.name}`);
  const hash = createHash('sha256');
  let size = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(await intake.read(entry.name), tap, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
  const after = await intake.stat(entry.name);
  if (!after) return { kind: 'gone' };
  if (after.size !== entry.size || after.mtimeMs !== entry.mtimeMs || size !== entry.size) {
    return { kind: 'changed', reason: `changed while being read (${entry.size} bytes listed, ${size} read, ${after.size} now)` };
  }
  return { kind: 'staged', path, sha256: hash.digest('hex'), size };
}
