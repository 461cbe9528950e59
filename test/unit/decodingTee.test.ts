import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DecodeOptions } from '../../src/delivery/decodeSettings.js';
import { DecodingTee } from '../../src/delivery/stagedContent.js';

const OPTIONS: DecodeOptions = {
  decryptionKey: undefined,
  verificationKey: undefined,
  maxInflateRatio: 100,
  maxDecodedBytes: 16 * 1024 ** 3,
  memberPattern: undefined,
};
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Feeds `bytes` the way a download does, in chunks, each feed awaited. */
async function feedAll(tee: DecodingTee, bytes: Buffer, chunk = 64 * 1024): Promise<void> {
  for (let at = 0; at < bytes.length; at += chunk) await tee.feed(bytes.subarray(at, at + chunk));
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'settle-tee-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('decoding a delivery while it is read', () => {
  // text that does not compress to nothing: several times the tee's 1 MiB buffer once inflated
  const csv = Array.from({ length: 60_000 }, (_, i) => `T${i},2026-06-01,${randomBytes(8).toString('hex')},EUR,${i}.00\n`).join('');

  it('gives the content and its hash once the last byte is fed, in any chunk size', async () => {
    for (const chunk of [1, 7, 64 * 1024]) {
      const gz = gzipSync(csv);
      const tee = new DecodingTee('gzip', gz.length, OPTIONS, join(dir, String(chunk)));
      // one byte at a time only for the head: the rest in large pieces, or the test would crawl
      await feedAll(tee, gz.subarray(0, 4096), chunk);
      await feedAll(tee, gz.subarray(4096));
      const content = await tee.end();
      expect(content).toMatchObject({ kind: 'content', sha256: sha(csv), size: Buffer.byteLength(csv), layers: ['gzip'] });
      expect(await readFile(join(dir, `${chunk}.content`), 'utf8')).toBe(csv);
    }
  });

  it('copies what it is given from a buffer the reader fills again, and hands it on whole', async () => {
    const gz = gzipSync(csv);
    const tee = new DecodingTee('gzip', gz.length, OPTIONS, join(dir, 'copied'));
    // one buffer read into again and again, as staging a local file does: each call's bytes are gone after it
    const reused = Buffer.alloc(64 * 1024 + 3);
    for (let at = 0; at < gz.length; at += reused.length) {
      const n = gz.copy(reused, 0, at, at + reused.length);
      await tee.feedCopy(reused.subarray(0, n));
      reused.fill(0xff);
    }
    const content = await tee.end();
    expect(content).toMatchObject({ kind: 'content', sha256: sha(csv), size: Buffer.byteLength(csv) });
    expect(await readFile(join(dir, 'copied.content'), 'utf8')).toBe(csv);
  });

  it('takes nothing more from a delivery it gave up on, without holding the download back', async () => {
    // gzip's magic, then garbage: the decoder fails at once; megabytes are still fed after it
    const broken = Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), randomBytes(8 * 1024 * 1024)]);
    const tee = new DecodingTee('gzip', broken.length, OPTIONS, join(dir, 'broken'));
    await feedAll(tee, broken);
    const content = await tee.end();
    expect(content.kind).toBe('refused');
    expect(content.kind === 'refused' && content.error.message).toMatch(/^not a readable gzip stream/);
    expect(await readdir(dir)).toEqual([]);
  });

  it('stops a bomb as it inflates, while the rest of the delivery is still fed', async () => {
    const bomb = gzipSync(Buffer.alloc(200 * 1024 * 1024));
    const tee = new DecodingTee('gzip', bomb.length, OPTIONS, join(dir, 'bomb'));
    await feedAll(tee, bomb);
    const content = await tee.end();
    expect(content.kind === 'refused' && content.error.message).toMatch(/inflates more than 100:1/);
    expect(await readdir(dir)).toEqual([]);
  });

  // the decoder writes the content file as the bytes arrive: it is on disk before the abort
  const contentOnDisk = async (path: string) => {
    while (!existsSync(path)) await setImmediate();
  };

  it('keeps nothing of a delivery abandoned half-way (the download failed, or the file changed)', async () => {
    const gz = gzipSync(csv);
    const tee = new DecodingTee('gzip', gz.length, OPTIONS, join(dir, 'half'));
    await feedAll(tee, gz.subarray(0, gz.length >> 1));
    await contentOnDisk(join(dir, 'half.content'));
    await tee.abort();
    expect(await readdir(dir)).toEqual([]);
  });

  it('keeps nothing of a delivery abandoned after its last byte was fed (the file changed at the end of its read)', async () => {
    const gz = gzipSync(csv);
    const tee = new DecodingTee('gzip', gz.length, OPTIONS, join(dir, 'whole'));
    await feedAll(tee, gz);
    await contentOnDisk(join(dir, 'whole.content'));
    await tee.abort();
    expect(await readdir(dir)).toEqual([]);
  });
});
