import { isUtf8 } from 'node:buffer';

/** The encoding a file's bytes are most likely in, as a WHATWG label the layout's `encoding` takes. */
export interface EncodingGuess {
  /** `utf-8`, `utf-16le`, `utf-16be`, `windows-1252`, `iso-8859-1`, `windows-1250` */
  encoding: string;
  /** what the guess rests on, in a few words */
  why: string;
  /** false when another encoding would read the bytes as plausibly: the draft says so */
  sure: boolean;
}

/** The single-byte encodings tried on bytes that are not UTF-8, the most common first (a tie goes to the first). */
const SINGLE_BYTE = ['windows-1252', 'windows-1250'] as const;

const VOWELS = new Set('aeiouyæøœ');
const baseLetter = (ch: string) => ch.normalize('NFD').charAt(0).toLowerCase();
const isLetter = (ch: string | undefined) => ch !== undefined && /\p{L}/u.test(ch);

/**
 * How plausible a decoding is as text: each character outside ASCII scores one if it is a
 * letter where a letter can stand (a consonant between vowels or beside one, a vowel beside a
 * consonant), less when it makes two vowels or three consonants meet (`zaúètování` read with
 * the wrong code page), and far less when it is no letter at all (a symbol, a control).
 */
function plausibility(text: string): number {
  let score = 0;
  const chars = [...text];
  chars.forEach((ch, i) => {
    if (ch.charCodeAt(0) < 0x80) return;
    if (!isLetter(ch)) {
      score -= /[\p{Sc}\u00a0\u00b0\u00a7\u00ab\u00bb\u2013\u2014\u2018\u2019\u201c\u201d\u2026]/u.test(ch) ? 0 : 5;
      return;
    }
    const vowel = VOWELS.has(baseLetter(ch));
    const near = [chars[i - 1], chars[i + 1]].filter(isLetter).map((c) => VOWELS.has(baseLetter(c!)));
    if (near.length === 0) score += 0.5;
    else if (vowel) score += near.some((v) => v) ? 0 : 1;
    else score += near.every((v) => !v) && near.length === 2 ? 0 : 1;
  });
  return score;
}

/** The bytes without a multi-byte sequence cut off at their end (a sample ends anywhere). */
function wholeSequences(bytes: Buffer): Buffer {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0xc0) return bytes.subarray(0, bytes.length - back); // a lead byte whose sequence was cut
    if ((b & 0xc0) !== 0x80) break;
  }
  return bytes;
}

/**
 * The encoding of a file from its first bytes: a byte-order mark says it outright; zero bytes
 * at every other place are UTF-16 without one; bytes that are valid UTF-8 are UTF-8; anything
 * else is a single-byte code page, the one whose decoding (Node's full-ICU `TextDecoder`) gives
 * the more plausible letters: Windows-1252 (Western Europe; `iso-8859-1` when no byte is one of
 * its 0x80-0x9F additions, as the two read the rest alike) or Windows-1250 (Central Europe).
 */
export function guessEncoding(bytes: Buffer): EncodingGuess {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: 'utf-16le', why: 'a UTF-16 little-endian byte-order mark', sure: true };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: 'utf-16be', why: 'a UTF-16 big-endian byte-order mark', sure: true };
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { encoding: 'utf-8', why: 'a UTF-8 byte-order mark', sure: true };
  const head = bytes.subarray(0, 4096);
  let evenZeros = 0;
  let oddZeros = 0;
  head.forEach((b, i) => {
    if (b === 0 && i % 2 === 0) evenZeros++;
    else if (b === 0) oddZeros++;
  });
  const half = head.length / 2;
  if (oddZeros > half * 0.3 && evenZeros < oddZeros / 4)
    return { encoding: 'utf-16le', why: 'a zero byte after most characters: UTF-16 little-endian without a byte-order mark', sure: false };
  if (evenZeros > half * 0.3 && oddZeros < evenZeros / 4)
    return { encoding: 'utf-16be', why: 'a zero byte before most characters: UTF-16 big-endian without a byte-order mark', sure: false };
  const whole = wholeSequences(bytes);
  if (isUtf8(whole)) return { encoding: 'utf-8', why: 'its bytes are valid UTF-8', sure: true };
  const scored = SINGLE_BYTE.map((encoding) => {
    const text = new TextDecoder(encoding).decode(bytes);
    return { encoding, text, score: plausibility(text) };
  });
  const best = scored.reduce((a, b) => (b.score > a.score ? b : a));
  const other = scored.find((s) => s !== best)!;
  const same = other.text === best.text;
  const encoding = best.encoding === 'windows-1252' && !bytes.some((b) => b >= 0x80 && b <= 0x9f) ? 'iso-8859-1' : best.encoding;
  const why = same
    ? `not valid UTF-8; its letters read alike in ${scored.map((s) => s.encoding).join(' and ')}: ${encoding} taken`
    : `not valid UTF-8; read as ${encoding} its letters are words (${other.encoding} would make ${other.score < best.score ? 'fewer' : 'as many'} of them)`;
  return { encoding, why, sure: same || best.score - other.score >= 2 };
}
