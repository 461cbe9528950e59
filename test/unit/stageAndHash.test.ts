import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtempSync, openSync, closeSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LocalFolder } from '../../src/intake/local/folder.js';
import { killHashWorker, stopHashWorker } from '../../src/pipeline/hashWorker.js';
import { stageAndHash } from '../../src/pipeline/stageAndHash.js';

const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(stopHashWorker);

const decodeOptions = {
  decryptionKey: undefined,
  verificationKey: undefined,
  maxInflateRatio: 1000,
  maxDecodedBytes: 1024 * 1024 * 1024,
  memberPattern: undefined,
};

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

// the same cases with the hash on this thread (the default threshold: these files are under it) and on the worker (from the first byte)
describe.each([
  ['on this thread', undefined],
  ['on the hash worker', 0],
])('stageAndHash of a local file, hashed %s', (_where, hashWorkerFromBytes) => {
  it("hashes exactly the staged copy's bytes, kept private (0600)", async () => {
    const bytes = countedBytes(5 * 1024 * 1024 + 123);
    const { folder, stagingDir, entry } = intakeWith(bytes);
    const staged = await stageAndHash(folder, entry, stagingDir, 1, undefined, undefined, hashWorkerFromBytes);
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
    const staged = await stageAndHash(folder, entry, stagingDir, 2, undefined, onRead, hashWorkerFromBytes);
    expect(staged.kind).toBe('changed');
    expect(readdirSync(stagingDir)).toEqual([]);
  });
});

describe('stageAndHash of a local file on the hash worker', () => {
  it('hashes file after file on the one worker, each from its own first byte', async () => {
    // the first file is left part way (changed), so the worker must drop its partial hash
    const first = countedBytes(2 * 1024 * 1024);
    const changing = intakeWith(first);
    let written = false;
    const onRead = () => {
      if (written) return;
      written = true;
      utimesSync(changing.path, new Date(), new Date(changing.entry.mtimeMs + 5_000));
    };
    expect((await stageAndHash(changing.folder, changing.entry, changing.stagingDir, 1, undefined, onRead, 0)).kind).toBe('changed');
    for (const [seq, size] of [
      [2, 7 * 1024 * 1024 + 5],
      [3, 11 * 1024 * 1024 + 77],
      [4, 3],
    ] as const) {
      const bytes = countedBytes(size);
      bytes[0] = seq; // each file's bytes its own
      const { folder, stagingDir, entry } = intakeWith(bytes);
      const staged = await stageAndHash(folder, entry, stagingDir, seq, undefined, undefined, 0);
      expect(staged.kind).toBe('staged');
      if (staged.kind !== 'staged') return;
      expect(readFileSync(staged.path).equals(bytes)).toBe(true);
      expect(staged.sha256).toBe(sha256Hex(bytes));
    }
  });

  it('decodes a gzipped delivery read through the ring: both hashes right', async () => {
    const plain = Buffer.from(Array.from({ length: 200_000 }, (_unused, row) => `row ${row},${(row * 7919) % 100003}\n`).join(''));
    const delivered = gzipSync(plain, { level: 1 });
    const { folder, stagingDir, entry } = intakeWith(delivered);
    const staged = await stageAndHash(folder, entry, stagingDir, 5, decodeOptions, undefined, 0);
    expect(staged.kind).toBe('staged');
    if (staged.kind !== 'staged') return;
    expect(staged.sha256).toBe(sha256Hex(delivered));
    expect(readFileSync(staged.path).equals(delivered)).toBe(true);
    expect(staged.content.kind).toBe('content');
    if (staged.content.kind !== 'content') return;
    expect(staged.content.sha256).toBe(sha256Hex(plain));
    expect(readFileSync(staged.content.path).equals(plain)).toBe(true);
  });

  it('fails the file with a clear error when the worker dies mid-file, keeps nothing staged, and starts another for the next file', async () => {
    const bytes = countedBytes(9 * 1024 * 1024);
    const { folder, stagingDir, entry } = intakeWith(bytes);
    let killed = false;
    const onRead = () => {
      if (killed) return;
      killed = true;
      killHashWorker();
    };
    await expect(stageAndHash(folder, entry, stagingDir, 6, undefined, onRead, 0)).rejects.toThrow(/SHA-256 worker thread/);
    expect(readdirSync(stagingDir)).toEqual([]);
    const staged = await stageAndHash(folder, entry, stagingDir, 7, undefined, undefined, 0);
    expect(staged.kind === 'staged' && staged.sha256).toBe(sha256Hex(bytes));
  });
});
