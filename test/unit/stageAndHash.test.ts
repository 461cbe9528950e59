import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtempSync, openSync, closeSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalFolder } from '../../src/intake/localFolder.js';
import { stageAndHash } from '../../src/pipeline/stageAndHash.js';

const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An intake folder with one file of `bytes` (many 64 KiB read blocks), and an empty staging folder. */
function intakeWith(bytes: Buffer) {
  const intakeDir = mkdtempSync(join(tmpdir(), 'settle-stage-intake-'));
  const stagingDir = mkdtempSync(join(tmpdir(), 'settle-stage-staging-'));
  made.push(intakeDir, stagingDir);
  const name = 'settle_20260901_a01.csv';
  writeFileSync(join(intakeDir, name), bytes);
  const stats = statSync(join(intakeDir, name));
  return {
    folder: new LocalFolder(intakeDir),
    stagingDir,
    name,
    path: join(intakeDir, name),
    entry: { name, size: stats.size, mtimeMs: stats.mtimeMs },
  };
}

/** Bytes that differ in every block: a block staged twice or out of order changes the hash. */
function countedBytes(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let offset = 0; offset + 4 <= size; offset += 4) bytes.writeUInt32LE(offset / 4, offset);
  return bytes;
}

describe('stageAndHash of a local file', () => {
  it("hashes exactly the staged copy's bytes, kept private (0600)", async () => {
    const bytes = countedBytes(5 * 1024 * 1024 + 123);
    const { folder, stagingDir, entry } = intakeWith(bytes);
    const staged = await stageAndHash(folder, entry, stagingDir, 1);
    expect(staged.kind).toBe('staged');
    if (staged.kind !== 'staged') return;
    const kept = readFileSync(staged.path);
    expect(kept.equals(bytes)).toBe(true);
    expect(staged.sha256).toBe(sha256Hex(kept));
    expect(staged.size).toBe(bytes.length);
    expect(statSync(staged.path).mode & 0o777).toBe(0o600);
  });

  it('calls a file written in place while it is copied changed, and keeps no partial copy', async () => {
    const bytes = countedBytes(3 * 1024 * 1024);
    const { folder, stagingDir, entry, path } = intakeWith(bytes);
    let written = false;
    // after the first block, the same inode is rewritten further on: the copy holds a mix
    const onRead = () => {
      if (written) return;
      written = true;
      const fd = openSync(path, 'r+');
      writeSync(fd, Buffer.from('rewritten'), 0, 9, 2 * 1024 * 1024);
      closeSync(fd);
      utimesSync(path, new Date(), new Date(entry.mtimeMs + 5_000));
    };
    const staged = await stageAndHash(folder, entry, stagingDir, 2, undefined, onRead);
    expect(staged.kind).toBe('changed');
    expect(readdirSync(stagingDir)).toEqual([]);
  });
});
