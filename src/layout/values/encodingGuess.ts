import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import type { DetectionResult, DetectAllOptions } from 'jschardet';

/**
 * Which text encoding a file's bytes are in, with how sure that is: what `layout suggest`
 * drafts and what `check` says of bytes that are not UTF-8 (reader/textDecoding.ts). One place,
 * so that the two never disagree.
 *
 * The statistics are jschardet's (`chardet.detectAll`, a port of Python's chardet 7: byte
 * n-gram models of each legacy encoding's languages). It was measured against runk's `chardet`
 * (ICU's recognisers) on 1-, 2-, 3-, 5- and 10-line bank-statement samples in each encoding
 * below, 20 of each: on one or two lines ICU's placed GB18030, Big5 and EUC-KR right 0 times
 * of 20 (its multi-byte recognisers need more text), jschardet 18-20 times; both were
 * right on every 10-line sample. Neither tells Western from Central European Latin reliably
 * on short texts (jschardet called French windows-1250), so between those two the letters
 * decide, as they did before: the decoding whose accented letters stand where letters stand.
 * What the detector proposes is only kept when Node's own `TextDecoder` (the one that will
 * read the file) decodes the sample without a replacement.
 */

/** The encoding a file's bytes are most likely in, as a WHATWG label the layout's `encoding` takes. */
export interface EncodingGuess {
  /** `utf-8`, `utf-16le`, `utf-16be`, `windows-1252`, `iso-8859-1`, `windows-1250`, `windows-1251`, `koi8-r`, `gb18030`, `big5`, `shift_jis`, `euc-kr` */
  encoding: string;
  /** what the guess rests on, in a few words */
  why: string;
  /** false when another encoding would read the bytes as plausibly: the draft says so, and names `alternatives` */
  sure: boolean;
  /** the other encodings that read the bytes, most likely first (empty when none is close) */
  alternatives: string[];
}

/** A legacy encoding the guess may give: its WHATWG name, what it writes, and the names jschardet calls it by. */
interface Legacy {
  encoding: string;
  writes: string;
  detector: readonly string[];
  latin?: true;
}

/** The legacy encodings detected, the most common first (a tie goes to the first). */
const LEGACY: readonly Legacy[] = [
  { encoding: 'windows-1252', writes: 'Western European', detector: ['windows-1252', 'iso-8859-1'], latin: true },
  { encoding: 'windows-1250', writes: 'Central European', detector: ['windows-1250', 'iso-8859-2'], latin: true },
  { encoding: 'windows-1251', writes: 'Cyrillic', detector: ['windows-1251'] },
  { encoding: 'koi8-r', writes: 'Cyrillic', detector: ['koi8-r'] },
  { encoding: 'gb18030', writes: 'Simplified Chinese', detector: ['gb18030'] },
  { encoding: 'big5', writes: 'Traditional Chinese', detector: ['big5'] },
  { encoding: 'shift_jis', writes: 'Japanese', detector: ['shift_jis', 'cp932'] },
  { encoding: 'euc-kr', writes: 'Korean', detector: ['euc-kr', 'cp949'] },
];
/** Every legacy encoding's names as jschardet knows them: it is asked about these only. */
const DETECTOR_NAMES = LEGACY.flatMap((l) => l.detector);
/** A guess is sure when its score is at least this many times the next reading's. */
const CLEAR_LEAD = 3;
/** Below this score the detector has seen too little of a language to be sure (its wrong answers on one-line samples scored under 0.06). */
const SURE_SCORE = 0.06;
/** How much of a file the detector looks at (its own default is 200 kB): enough rows to tell, little enough to stay quick. */
const DETECTOR_BYTES = 64 * 1024;

type Detect = (bytes: Uint8Array, opts?: DetectAllOptions) => DetectionResult[];
let detectAll: Detect | undefined;
/** jschardet, loaded when a file is not UTF-8 (the bundle leaves it in node_modules: most runs never need it). */
function detector(): Detect {
  if (!detectAll) {
    const mod = createRequire(import.meta.url)('jschardet') as { chardet: { detectAll: Detect } };
    detectAll = mod.chardet.detectAll;
  }
  return detectAll;
}

const VOWELS = new Set('aeiouyæøœ');
const baseLetter = (ch: string) => ch.normalize('NFD').charAt(0).toLowerCase();
const isLetter = (ch: string | undefined) => ch !== undefined && /\p{L}/u.test(ch);

/**
 * How plausible a Latin decoding is as text: each character outside ASCII scores one if it is a
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

/** The bytes without a UTF-8 multi-byte sequence cut off at their end (a sample ends anywhere). */
function wholeSequences(bytes: Uint8Array): Uint8Array {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0xc0) return bytes.subarray(0, bytes.length - back); // a lead byte whose sequence was cut
    if ((b & 0xc0) !== 0x80) break;
  }
  return bytes;
}

/** The bytes as text in `encoding`, or undefined when it cannot decode them (a character cut at the end is no fault). */
function strictly(encoding: string, bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes, { stream: true });
  } catch {
    return undefined;
  }
}

/**
 * Whether a reading in a non-Latin script is really Latin text misread: most of its characters
 * outside ASCII stand glued to a lower-case ASCII letter (`Dйjа` for `Déjà` in windows-1251, a
 * Han character inside `Geb?r` for `Gebühr` in Big5), where Cyrillic, Chinese, Japanese or Korean
 * text keeps its words to its own letters.
 */
function gluedToLatin(text: string): boolean {
  let outside = 0;
  let glued = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 0x80) continue;
    outside++;
    if (/[a-z]/.test(text[i - 1] ?? '') || /[a-z]/.test(text[i + 1] ?? '')) glued++;
  }
  return outside > 0 && glued * 2 > outside;
}

/** A legacy encoding's reading of the bytes, with the detector's score and, for Latin ones, the letters' plausibility. */
export interface Reading {
  encoding: string;
  writes: string;
  text: string;
  score: number;
  latin: boolean;
  letters: number;
}

/**
 * Every legacy encoding that reads the bytes, the likeliest first: by the detector's score,
 * except that between the Latin ones the letters decide.
 */
export function legacyReadings(bytes: Uint8Array): Reading[] {
  const sample = bytes.subarray(0, DETECTOR_BYTES);
  let found: DetectionResult[] = [];
  try {
    found = detector()(sample, { includeEncodings: DETECTOR_NAMES, ignoreThreshold: true });
  } catch {
    // no verdict from the detector: the letters alone decide
  }
  const readings: Reading[] = [];
  for (const legacy of LEGACY) {
    const text = strictly(legacy.encoding, sample);
    if (text === undefined) continue;
    let score = Math.max(0, ...found.filter((f) => legacy.detector.includes((f.encoding ?? '').toLowerCase())).map((f) => f.confidence));
    // the detector's n-grams see bytes, not words: Latin text misread in another script is worth little
    if (!legacy.latin && gluedToLatin(text)) score /= 10;
    readings.push({
      encoding: legacy.encoding,
      writes: legacy.writes,
      text,
      score,
      latin: legacy.latin === true,
      letters: plausibility(text),
    });
  }
  const latin = readings.filter((r) => r.latin);
  // the Latin pair scored as one family (its best), then ordered among themselves by their letters
  const latinScore = Math.max(0, ...latin.map((r) => r.score));
  const ranked = (r: Reading) => (r.latin ? latinScore : r.score);
  return readings
    .map((r, order) => ({ r, order }))
    .sort(
      (a, b) =>
        ranked(b.r) - ranked(a.r) || (a.r.latin && b.r.latin ? b.r.letters - a.r.letters || b.r.score - a.r.score : 0) || a.order - b.order,
    )
    .map(({ r }) => r);
}

/**
 * The encoding of a file from its first bytes: a byte-order mark says it outright; zero bytes
 * at every other place are UTF-16 without one; bytes that are valid UTF-8 are UTF-8; anything
 * else is a legacy encoding, the likeliest of `legacyReadings`, sure only when it leads the next
 * reading that decodes the bytes otherwise clearly (the Latin pair: by two letters or more).
 * Windows-1252 is named `iso-8859-1` when no byte is one of its 0x80-0x9F additions, as the two
 * read the rest alike.
 */
export function guessEncoding(bytes: Buffer): EncodingGuess {
  const sureOf = (encoding: string, why: string): EncodingGuess => ({ encoding, why, sure: true, alternatives: [] });
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return sureOf('utf-16le', 'a UTF-16 little-endian byte-order mark');
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return sureOf('utf-16be', 'a UTF-16 big-endian byte-order mark');
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return sureOf('utf-8', 'a UTF-8 byte-order mark');
  const head = bytes.subarray(0, 4096);
  let evenZeros = 0;
  let oddZeros = 0;
  head.forEach((b, i) => {
    if (b === 0 && i % 2 === 0) evenZeros++;
    else if (b === 0) oddZeros++;
  });
  const half = head.length / 2;
  if (oddZeros > half * 0.3 && evenZeros < oddZeros / 4)
    return {
      encoding: 'utf-16le',
      why: 'a zero byte after most characters: UTF-16 little-endian without a byte-order mark',
      sure: false,
      alternatives: ['utf-16be'],
    };
  if (evenZeros > half * 0.3 && oddZeros < evenZeros / 4)
    return {
      encoding: 'utf-16be',
      why: 'a zero byte before most characters: UTF-16 big-endian without a byte-order mark',
      sure: false,
      alternatives: ['utf-16le'],
    };
  if (isUtf8(wholeSequences(bytes))) return sureOf('utf-8', 'its bytes are valid UTF-8');
  return guessLegacyEncoding(bytes);
}

/**
 * Of bytes that are not UTF-8, the legacy encoding they are likeliest in (`legacyReadings`),
 * sure only when it leads the next reading that decodes the bytes otherwise clearly (the Latin
 * pair: by two letters or more); `alike` names those that read the bytes the same.
 */
export function guessLegacyEncoding(bytes: Uint8Array): EncodingGuess & { alike: string[] } {
  const readings = legacyReadings(bytes);
  const best = readings[0];
  if (!best)
    return {
      encoding: 'windows-1252',
      why: 'not valid UTF-8, and no legacy encoding reads it whole',
      sure: false,
      alternatives: [],
      alike: [],
    };
  const encoding = shownLatin(best.encoding, bytes);
  const others = readings.slice(1).filter((r) => r.text !== best.text);
  const alike = readings
    .slice(1)
    .filter((r) => r.text === best.text)
    .map((r) => r.encoding);
  const next = others[0];
  const lead =
    next === undefined ||
    (best.latin && next.latin
      ? best.letters - next.letters >= 2
      : best.score >= next.score * CLEAR_LEAD && (best.latin || best.score >= SURE_SCORE));
  // an alternative is one whose reading is near: the other Latin one by the letters, any other by the detector's score
  const close = others
    .filter((r) => (best.latin && r.latin ? best.letters - r.letters < 2 : r.score * CLEAR_LEAD > best.score))
    .map((r) => shownLatin(r.encoding, bytes));
  const sure = lead && close.length === 0;
  const also = alike.length > 0 ? `; ${alike.join(' and ')} read it alike` : '';
  const why = next
    ? `not valid UTF-8; read as ${encoding} it is ${best.writes} text${detectorWords(best, next)}${also}`
    : `not valid UTF-8; only ${encoding} reads it${also}`;
  const alternatives = sure ? [] : close.length > 0 ? close : others.slice(0, 1).map((r) => shownLatin(r.encoding, bytes));
  return { encoding, why, sure, alternatives, alike };
}

/** What the detector and the letters said, for the guess's `why`. */
function detectorWords(best: Reading, next: Reading): string {
  if (best.latin && next.latin)
    return ` (${next.encoding} would make ${next.letters < best.letters ? 'fewer' : 'as many'} of its letters stand where letters stand)`;
  return ` (detector score ${best.score.toFixed(3)}; ${next.encoding}, ${next.writes}, ${next.score.toFixed(3)})`;
}

/** Windows-1252 as `iso-8859-1` when no byte is one of its 0x80-0x9F additions. */
const shownLatin = (encoding: string, bytes: Uint8Array) =>
  encoding === 'windows-1252' && !bytes.some((b) => b >= 0x80 && b <= 0x9f) ? 'iso-8859-1' : encoding;
