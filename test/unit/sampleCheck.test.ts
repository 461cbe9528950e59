import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localSampleDigest, SampleTaker, sampleRanges, WHOLE_FILE_BYTES } from '../../src/intake/sampleCheck.js';

describe('the bytes read back before and after a move', () => {
  it('are the whole file when it is small', () => {
    expect(sampleRanges(0)).toEqual([[0, 0]]);
    expect(sampleRanges(WHOLE_FILE_BYTES)).toEqual([[0, WHOLE_FILE_BYTES]]);
  });

  it('are its two ends and 16 blocks drawn anew each time for a large file: at most 1.5 MiB, all inside it', () => {
    const size = 700 * 1024 ** 2 + 13;
    const a = sampleRanges(size);
    const b = sampleRanges(size);
    expect(a[0]).toEqual([0, 256 * 1024]);
    expect(a.at(-1)).toEqual([size - 256 * 1024, 256 * 1024]);
    expect(a).toHaveLength(18);
    expect(a.reduce((sum, [, length]) => sum + length, 0)).toBe(1.5 * 1024 ** 2);
    for (const [position, length] of a) expect(position + length).toBeLessThanOrEqual(size);
    expect(a).not.toEqual(b);
  });

  it('tell a same-size rewrite from the decided bytes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-sample-'));
    const decided = Buffer.alloc(3 * 1024 ** 2, 'a');
    const rewritten = Buffer.from(decided);
    rewritten.write('b', 1024 ** 2 + 5); // one byte in the middle
    writeFileSync(join(dir, 'decided'), decided);
    writeFileSync(join(dir, 'rewritten'), rewritten);
    // the middle blocks fall where the draw puts them: here, on the changed byte
    const ranges = sampleRanges(decided.length, () => 1024 ** 2 - 256 * 1024);
    expect(await localSampleDigest(join(dir, 'decided'), ranges)).not.toBe(await localSampleDigest(join(dir, 'rewritten'), ranges));
    // the decided bytes under another name (moved, or copied as staging does) read the same
    writeFileSync(join(dir, 'moved'), decided);
    expect(await localSampleDigest(join(dir, 'moved'), ranges)).toBe(await localSampleDigest(join(dir, 'decided'), ranges));
  });

  it('tell a file cut short inside a range, even where the lost bytes were zeros', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-sample-'));
    const decided = Buffer.concat([Buffer.from('T1,2026-06-01,EUR,10.00\n'), Buffer.alloc(40)]);
    writeFileSync(join(dir, 'decided'), decided);
    writeFileSync(join(dir, 'cut'), decided.subarray(0, 24));
    const ranges = sampleRanges(decided.length);
    expect(await localSampleDigest(join(dir, 'cut'), ranges)).not.toBe(await localSampleDigest(join(dir, 'decided'), ranges));
  });

  it('tell the same bytes read at another place in the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-sample-'));
    writeFileSync(join(dir, 'f'), Buffer.alloc(3 * 1024 ** 2, 'a'));
    const drawnAt = (offset: number) => sampleRanges(3 * 1024 ** 2, () => offset);
    expect(await localSampleDigest(join(dir, 'f'), drawnAt(0))).not.toBe(await localSampleDigest(join(dir, 'f'), drawnAt(4096)));
  });

  it('are taken as the file streams past, in reads of any size, the same as read back afterwards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-sample-'));
    const bytes = Buffer.from(Array.from({ length: 2 * 1024 ** 2 + 77 }, (_, i) => (i * 7919) % 251));
    writeFileSync(join(dir, 'f'), bytes);
    const ranges = sampleRanges(bytes.length);
    const taker = new SampleTaker(ranges);
    for (let at = 0, step = 1; at < bytes.length; at += step, step = (step * 3) % 100_003 || 1) {
      taker.feed(bytes.subarray(at, at + step), at);
    }
    expect(taker.sample()).toEqual({ ranges, digest: await localSampleDigest(join(dir, 'f'), ranges) });
  });
});
