import { readAt } from '../syncFs.js';

export type Wrapping = 'gzip' | 'zip' | 'pgp-binary' | 'pgp-armored';

/**
 * Packet tags that can open an OpenPGP message, each with the first body bytes it allows (its
 * version, algorithm or format): session keys, a signature, a one-pass signature, compressed,
 * encrypted or literal data, a marker. Checking the body as well as the tag keeps a CSV whose
 * header starts with a non-ASCII letter (`É` is C3 89, a tag 3 packet header) from being taken
 * for PGP.
 */
const MESSAGE_TAGS = new Map<number, (first: number) => boolean>([
  [1, (v) => v === 3 || v === 6],
  [2, (v) => v >= 3 && v <= 6],
  [3, (v) => v >= 4 && v <= 6],
  [4, (v) => v === 3 || v === 6],
  [8, (v) => v <= 3],
  [9, () => true],
  [10, (v) => v === 0x50], // "PGP"
  [11, (v) => 'btuml1'.includes(String.fromCharCode(v))],
  [18, (v) => v === 1 || v === 2],
  [20, (v) => v === 1],
]);

/** Whether the bytes start with a packet that can open an OpenPGP message (RFC 9580 section 4.2). */
function opensPgpMessage(head: Buffer): boolean {
  const first = head[0];
  if (first === undefined || (first & 0x80) === 0) return false;
  let tag: number;
  let body: number;
  if ((first & 0x40) !== 0) {
    tag = first & 0x3f;
    const len = head[1] ?? 0;
    body = len < 192 ? 2 : len < 224 ? 3 : len === 255 ? 6 : 2; // 224..254: a partial length, one octet
  } else {
    tag = (first >> 2) & 0x0f;
    body = [2, 3, 5, 1][first & 0x03]!;
  }
  const allows = MESSAGE_TAGS.get(tag);
  const v = head[body];
  return allows !== undefined && v !== undefined && allows(v);
}
const ARMOUR = Buffer.from('-----BEGIN PGP MESSAGE-----');

/** How many leading bytes tell a wrapping apart (armour may follow a byte-order mark and blank lines). */
export const HEAD_BYTES = 64;

/**
 * What wraps a file, from its leading bytes alone, never its name: a partner's `.csv` may be
 * gzipped and its `.pgp` may be plain. A CSV starts with text (a UTF-8 byte-order mark is
 * EF, whose packet tag would be 47, no message tag), so it is never taken for a wrapping.
 */
export function sniffHead(head: Buffer): Wrapping | null {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head[0] === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05) && head[3] === head[2] + 1) return 'zip';
  const text = head
    .toString('latin1')
    .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
    .trimStart();
  if (text.startsWith(ARMOUR.toString('latin1'))) return 'pgp-armored';
  return opensPgpMessage(head) ? 'pgp-binary' : null;
}

/** What wraps the file at `path` (its first HEAD_BYTES). */
export async function sniff(path: string): Promise<Wrapping | null> {
  return sniffHead(await readAt(path, HEAD_BYTES, 0));
}
