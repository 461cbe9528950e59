import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { faultPoint } from '../faults.js';
import { isPinned, type FilePin, type FolderReader, type IntakeEntry } from '../intake/intake.js';

export type Staged =
  /** `pin`: the very file the bytes were read from, checked again before its name leaves the intake */
  | { kind: 'staged'; path: string; sha256: string; size: number; pin: FilePin }
  /** the file changed while it was copied: it was not complete after all */
  | { kind: 'changed'; reason: string }
  | { kind: 'gone' };

/**
 * One read of the file, pinned (opened once, never through a link, only a regular file): its
 * bytes go to a private staging file while they are hashed, so the content that is loaded is
 * exactly the content that was claimed. The staging name is the sequence number alone, so any
 * file name fits. Whatever happens short of a complete copy, the partial copy is removed: a
 * full staging disk stops this file, not the ones after it.
 */
export async function stageAndHash(intake: FolderReader, entry: IntakeEntry, stagingDir: string, seq: number | string): Promise<Staged> {
  faultPoint('before-open', entry.name);
  const file = await intake.pin(entry.name);
  const path = join(stagingDir, String(seq));
  let kept = false;
  try {
    const hash = createHash('sha256');
    let size = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(file.stream, tap, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    const after = await file.current();
    if (!(await intake.stat(entry.name))) return { kind: 'gone' };
    const asListed = file.pin.size === entry.size && file.pin.mtimeMs === entry.mtimeMs;
    if (!asListed || !isPinned(after, file.pin) || size !== file.pin.size) {
      return { kind: 'changed', reason: `changed while being read (${entry.size} bytes listed, ${size} read, ${after.size} now)` };
    }
    kept = true;
    return { kind: 'staged', path, sha256: hash.digest('hex'), size, pin: file.pin };
  } finally {
    await file.close();
    if (!kept) await unlink(path).catch(() => undefined);
  }
}
