import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { KeyFirstLines, murmurHash3 } from '../../src/layout/reader/keySet.js';

/** What a Map of the keys as strings says, the rule the compact set keeps. */
function expectedFirstLines(keys: string[]): (number | undefined)[] {
  const seen = new Map<string, number>();
  return keys.map((key, i) => {
    const line = i + 2;
    const first = seen.get(key);
    if (first === undefined) seen.set(key, line);
    return first;
  });
}

const keysOfAFile = (count: number) =>
  Array.from({ length: count }, (_, i) => (i % 7 === 3 ? `k-${Math.floor(i / 3)}` : `k-${i}\u00e9\u0000${'x'.repeat(i % 40)}`));

describe('KeyFirstLines: a file\u2019s keys in a fixed number of bytes each', () => {
  it('names the first line of each repeated key, as a Map of the keys would', () => {
    const keys = keysOfAFile(50_000);
    const set = new KeyFirstLines();
    expect(keys.map((key, i) => set.firstLineOf(key, i + 2))).toEqual(expectedFirstLines(keys));
    expect(set.spilledToDisk).toBe(false);
    set.close();
  });

  it('keys whose hashes all collide are still told apart by their bytes', () => {
    const keys = ['a', 'b', 'a', 'ab', 'b', 'ba', 'ab', '', '', 'caf\u00e9', 'cafe\u0301', 'caf\u00e9'];
    const set = new KeyFirstLines({ hash: () => 42 });
    expect(keys.map((key, i) => set.firstLineOf(key, i + 2))).toEqual(expectedFirstLines(keys));
    expect(keys.map((key, i) => set.firstLineOf(key, i + 100))).toEqual(keys.map((key) => keys.indexOf(key) + 2));
    set.close();
  });

  it('keys past its memory go to a temporary file nobody else sees, and are read back from there', () => {
    const before = readdirSync(tmpdir()).filter((name) => name.startsWith('settle-ingest-keys-'));
    const keys = keysOfAFile(3_000);
    // hashes that collide often (256 values) make it read records back from the file, not only the buffer
    const sumOf = (bytes: Buffer) => bytes.reduce((sum, byte) => sum + byte, 0);
    const set = new KeyFirstLines({ hash: (bytes) => sumOf(bytes) & 255, spillAfter: 8 * 1024 });
    expect(keys.map((key, i) => set.firstLineOf(key, i + 2))).toEqual(expectedFirstLines(keys));
    expect(set.spilledToDisk).toBe(true);
    // unlinked at once: no file of it is left in the temporary folder
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith('settle-ingest-keys-'))).toEqual(before);
    set.close();
  });
});

describe('the hash of a key', () => {
  it('is MurmurHash3 x86_32 to the published test vectors, UTF-8 bytes included', () => {
    const vectors: [string, number, number][] = [
      ['', 0, 0],
      ['', 1, 0x514e28b7],
      ['', 0xffffffff, 0x81f16f39],
      ['\0\0\0\0', 0, 0x2362f9de],
      ['a', 0x9747b28c, 0x7fa09ea6],
      ['aa', 0x9747b28c, 0x5d211726],
      ['aaa', 0x9747b28c, 0x283e0130],
      ['aaaa', 0x9747b28c, 0x5a97808a],
      ['abcd', 0x9747b28c, 0xf0478627],
      ['Hello, world!', 0x9747b28c, 0x24884cba],
      ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
      ['ππππππππ', 0x9747b28c, 0xd58063c1],
    ];
    for (const [text, seed, hash] of vectors) expect(murmurHash3(Buffer.from(text, 'utf8'), seed), JSON.stringify(text)).toBe(hash);
  });
});
