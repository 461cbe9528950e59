/** A leading byte-order mark: some exporters write one, it is no part of the header. */
export const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Where the bytes stop forming complete UTF-8 sequences: a sequence cut by the chunk end waits for the next chunk. */
export function completePrefix(buf: Buffer): number {
  let i = buf.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return buf.length;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i < need ? i : buf.length;
}

/**
 * The offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong
 * forms, surrogates and code points past U+10FFFF included, as `isUtf8` judges them), or -1.
 * Only on the failure path: the hot path asks the native `isUtf8` once per chunk.
 */
export function firstInvalidUtf8(buf: Buffer): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    const need = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
    if (need === 0 || i + need >= buf.length) return i;
    const second = buf[i + 1]!;
    const [lo, hi] =
      b === 0xe0 ? [0xa0, 0xbf] : b === 0xed ? [0x80, 0x9f] : b === 0xf0 ? [0x90, 0xbf] : b === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    if (second < lo || second > hi) return i;
    for (let k = 2; k <= need; k++) if ((buf[i + k]! & 0xc0) !== 0x80) return i;
    i += need + 1;
  }
  return -1;
}
