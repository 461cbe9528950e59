import { open } from 'node:fs/promises';

export type Wrapping = 'gzip' | 'zip' | 'pgp-binary' | 'pgp-armored';

/** Packet tags that can open an OpenPGP message: session keys, signatures, compressed, literal or encrypted data, a marker. */
const MESSAGE_TAGS = new Set([1, 2, 3, 4, 8, 9, 10, 11, 18, 20]);
const ARMOUR = Buffer.from('-----BEGIN PGP MESSAGE-----');

/**
 * What wraps a file, from its leading bytes alone, never its name: a partner's `.csv` may be
 * gzipped and its `.pgp` may be plain. A CSV starts with text (a UTF-8 byte-order mark is
 * EF, whose packet tag would be 47, no message tag), so it is never taken for a wrapping.
 */
export async function sniff(path: string): Promise<Wrapping | null> {
  const file = await open(path, 'r');
  let head: Buffer;
  try {
    const buf = Buffer.alloc(64);
    const { bytesRead } = await file.read(buf, 0, buf.length, 0);
    head = buf.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head[0] === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05) && head[3] === head[2] + 1) return 'zip';
  const text = head
    .toString('latin1')
    .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
    .trimStart();
  if (text.startsWith(ARMOUR.toString('latin1'))) return 'pgp-armored';
  const first = head[0];
  if (first !== undefined && (first & 0x80) !== 0) {
    const tag = (first & 0x40) !== 0 ? first & 0x3f : (first >> 2) & 0x0f;
    if (MESSAGE_TAGS.has(tag)) return 'pgp-binary';
  }
  return null;
}
