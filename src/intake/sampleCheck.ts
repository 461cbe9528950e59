import { createHash, randomInt } from 'node:crypto';
import { open } from 'node:fs/promises';

/** A file up to this size is read back whole. */
export const WHOLE_FILE_BYTES = 1024 * 1024;
const EDGE_BYTES = 256 * 1024;
const BLOCK_BYTES = 64 * 1024;
const BLOCKS = 16;

export type ByteRange = readonly [position: number, length: number];

/**
 * Which bytes of a file of `size` bytes to read back, to tell whether a name still holds the
 * decided bytes where the server has no inodes and its mtime has whole seconds (a rewrite in
 * the same second with the same size looks the same to STAT). A small file is read whole, so
 * any change shows. A larger one: its first and last 256 KiB (a header, a trailer, an append)
 * and 16 blocks of 64 KiB at offsets drawn afresh for every check, so no rewrite can know
 * which bytes will be compared; a partner's re-export changes ids, dates and amounts on every
 * line and cannot miss all of them. At most 1.5 MiB is read back, whatever the size.
 */
export function sampleRanges(size: number, draw: (below: number) => number = randomInt): ByteRange[] {
  if (size <= WHOLE_FILE_BYTES) return [[0, size]];
  const ranges: ByteRange[] = [
    [0, EDGE_BYTES],
    [size - EDGE_BYTES, EDGE_BYTES],
  ];
  const middle = size - 2 * EDGE_BYTES - BLOCK_BYTES;
  for (let i = 0; i < BLOCKS; i++) ranges.push([EDGE_BYTES + draw(middle + 1), BLOCK_BYTES]);
  return ranges.sort((a, b) => a[0] - b[0]);
}

/** The decided bytes' sample: which ranges, and the digest of what they held when the file was read. */
export interface DecidedSample {
  ranges: readonly ByteRange[];
  digest: string;
}

function digestOf(ranges: readonly ByteRange[], parts: readonly Buffer[]): string {
  const hash = createHash('sha256');
  for (const [i, part] of parts.entries()) {
    hash.update(`${ranges[i]![0]}:${part.length}:`);
    hash.update(part);
  }
  return hash.digest('hex');
}

/** SHA-256 over the ranges' bytes, in the ranges' order, each read by `read`. */
export async function sampleDigest(ranges: readonly ByteRange[], read: (range: ByteRange) => Promise<Buffer>): Promise<string> {
  return digestOf(ranges, await Promise.all(ranges.map(read)));
}

/**
 * The sample taken as the file streams past during its one read (at most 1.5 MiB kept), so that
 * the check before its move compares the server's bytes with what was read then, never with a
 * second read of the staged copy. The ranges are drawn when the read begins.
 */
export class SampleTaker {
  private readonly parts: Buffer[];
  private readonly filled: number[];

  constructor(readonly ranges: readonly ByteRange[]) {
    this.parts = ranges.map(([, length]) => Buffer.alloc(length));
    this.filled = ranges.map(() => 0);
  }

  /** The bytes at [offset, offset + chunk.length) of the file. */
  feed(chunk: Buffer, offset: number): void {
    const end = offset + chunk.length;
    for (const [i, [position, length]] of this.ranges.entries()) {
      const from = Math.max(position, offset);
      const to = Math.min(position + length, end);
      if (from >= to) continue;
      chunk.copy(this.parts[i]!, from - position, from - offset, to - offset);
      this.filled[i] = Math.max(this.filled[i]!, to - position);
    }
  }

  sample(): DecidedSample {
    return {
      ranges: this.ranges,
      digest: digestOf(
        this.ranges,
        this.parts.map((p, i) => p.subarray(0, this.filled[i])),
      ),
    };
  }
}

/** The digest of those ranges of a local file (the staged copy). */
export async function localSampleDigest(path: string, ranges: readonly ByteRange[]): Promise<string> {
  const file = await open(path, 'r');
  try {
    return await sampleDigest(ranges, async ([position, length]) => {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await file.read(buf, 0, length, position);
      return buf.subarray(0, bytesRead);
    });
  } finally {
    await file.close();
  }
}
