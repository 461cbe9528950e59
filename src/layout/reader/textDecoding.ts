import { isUtf8 } from 'node:buffer';
import { readAt, stat } from '../../syncFs.js';
import { quoteValue } from '../values/quoteValue.js';
import { completePrefix, firstInvalidUtf8, UTF8_BOM } from '../values/utf8Bytes.js';
import { DEFAULT_ENCODING, encodingName, UTF16_BY_BOM } from '../values/encodings.js';
import { guessLegacyEncoding } from '../values/encodingGuess.js';

/**
 * How a settlement file's bytes become text: the one place that decodes them. UTF-8 (the
 * default) is checked natively chunk by chunk and never has a byte replaced; any other
 * encoding is decoded in the stream by Node's full-ICU `TextDecoder`. A UTF-8 or UTF-16
 * byte-order mark is dropped. Hashes are no business of this module: they stay on the bytes.
 */

const UTF16LE_BOM = Buffer.from([0xff, 0xfe]);
const UTF16BE_BOM = Buffer.from([0xfe, 0xff]);
/** the text of a byte `TextDecoder` could not decode, and of a BOM of the other byte order */
const REPLACEMENT = '\uFFFD';
const SWAPPED_BOM = '\uFFFE';

/**
 * Bytes decoded whole. Always through the streaming call: Node's one-shot `decode` (since
 * 20.18.3, nodejs/node#56542 and #60888) takes a Latin-1 fast path for windows-1252 and its
 * labels iso-8859-1 and latin1, reading 0x80 as U+0080 instead of €; the streaming call does not.
 */
function decodeWhole(encoding: string, bytes: Uint8Array): string {
  const decoder = new TextDecoder(encoding);
  return decoder.decode(bytes, { stream: true }) + decoder.decode();
}

/** How a problem names an encoding: `UTF-8`, `UTF-16LE`, `windows-1250`. */
const shownName = (encoding: string) => (encoding.startsWith('utf-') ? encoding.toUpperCase() : encoding);

/** The bytes one code unit of an encoding takes: 2 for UTF-16, else 1 (a multi-byte encoding's line end is one byte). */
const codeUnitBytes = (encoding: string): number => (encoding.startsWith('utf-16') ? 2 : 1);

/** Bytes that are not text in the file's encoding: where the text stops, and what to say of them. */
export interface Undecodable {
  /** `not valid UTF-8`, `not valid UTF-16LE`: what the reader's messages match */
  problem: string;
  /** what the bytes are and what to do, for a person: the bad byte, the encodings it may be */
  detail: string;
  /** the file ends inside a character (an upload cut mid-character), rather than holding a bad byte */
  cut: boolean;
}

export interface Decoded {
  text: string;
  /** the bytes after `text` could not be decoded: the reading stops there */
  undecodable?: Undecodable;
}

/**
 * A file's bytes, decoded chunk by chunk in the encoding its layout names: a character cut by a
 * chunk's end waits for the next chunk. `write` each read, then `end()`.
 */
export class TextChunks {
  private readonly encoding: string;
  private decoder: TextDecoder | undefined;
  /** UTF-8: bytes of a character the last chunk cut, or of a BOM not yet whole */
  private carry: Buffer | null = null;
  private atStart = true;
  /** the bytes written so far: where in the file a chunk begins */
  private written = 0;

  constructor(encoding: string = DEFAULT_ENCODING) {
    const name = encodingName(encoding);
    if (name === undefined) throw new Error(`unknown encoding ${JSON.stringify(encoding)}`);
    this.encoding = name;
    if (name !== DEFAULT_ENCODING && name !== UTF16_BY_BOM) this.decoder = new TextDecoder(name);
  }

  write(chunk: Buffer): Decoded {
    if (this.encoding === DEFAULT_ENCODING) return this.utf8(chunk, false);
    return this.decoded(chunk, false);
  }

  end(): Decoded {
    if (this.encoding === DEFAULT_ENCODING) return this.utf8(Buffer.alloc(0), true);
    return this.decoded(Buffer.alloc(0), true);
  }

  /** UTF-8 on the native path: the whole chunk checked by `isUtf8`, then decoded without a replacement. */
  private utf8(chunk: Buffer, final: boolean): Decoded {
    let buf: Buffer = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    let offset = this.written - (this.carry?.length ?? 0);
    this.written += chunk.length;
    this.carry = null;
    if (this.atStart) {
      if (UTF8_BOM.subarray(0, buf.length).equals(buf) && buf.length < UTF8_BOM.length) {
        if (!final) this.carry = Buffer.from(buf);
        return { text: '' };
      }
      this.atStart = false;
      if (buf.subarray(0, 3).equals(UTF8_BOM)) {
        buf = buf.subarray(3);
        offset += 3;
      }
    }
    if (final && buf.length > 0) return { text: '', undecodable: notUtf8(buf, 0, { cut: true, offset }) };
    const whole = completePrefix(buf);
    if (whole < buf.length) this.carry = Buffer.from(buf.subarray(whole));
    const ready = whole < buf.length ? buf.subarray(0, whole) : buf;
    if (isUtf8(ready)) return { text: ready.toString('utf8') };
    const at = firstInvalidUtf8(ready);
    return { text: ready.toString('utf8', 0, at), undecodable: notUtf8(ready, at, { cut: false, offset }) };
  }

  /**
   * Any other encoding through `TextDecoder`, in the stream. It replaces what it cannot decode
   * by U+FFFD, which no single-byte encoding can write: the text stops there. (A UTF-16 file
   * that writes U+FFFD itself is refused the same way; it has lost a character already.)
   */
  private decoded(chunk: Buffer, final: boolean): Decoded {
    if (!this.decoder) {
      // `utf-16`: the byte order is the BOM's, so wait for its two bytes
      const buf: Buffer = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
      this.carry = null;
      if (buf.length < 2 && !final) {
        this.carry = Buffer.from(buf);
        return { text: '' };
      }
      const order = buf.subarray(0, 2);
      if (!order.equals(UTF16LE_BOM) && !order.equals(UTF16BE_BOM)) {
        if (buf.length === 0) return { text: '' };
        const detail = ` (the file does not begin with a byte-order mark: set the layout's "encoding" to "utf-16le" or "utf-16be")`;
        return { text: '', undecodable: { problem: 'not valid UTF-16', detail, cut: false } };
      }
      this.decoder = new TextDecoder(order.equals(UTF16LE_BOM) ? 'utf-16le' : 'utf-16be');
      chunk = buf;
    }
    // the streaming call even for the last bytes, then the flush (see decodeWhole)
    let text = this.decoder.decode(chunk, { stream: true });
    if (final) text += this.decoder.decode();
    const name = shownName(this.decoder.encoding);
    if (this.atStart && text.length > 0) {
      this.atStart = false;
      if (text.startsWith(SWAPPED_BOM)) {
        const other = this.decoder.encoding === 'utf-16le' ? 'utf-16be' : 'utf-16le';
        const detail = ` (its byte-order mark says ${shownName(other)}: set the layout's "encoding" to "${other}" or "utf-16")`;
        return { text: '', undecodable: { problem: `not valid ${name}`, detail, cut: false } };
      }
    }
    const bad = text.indexOf(REPLACEMENT);
    if (bad === -1) return { text };
    // a replacement that the end of the file alone produced: the bytes of a character cut off
    const cut = final && bad === text.length - 1;
    const detail = cut ? ' (the file ends inside a character)' : ` (bytes that ${name} cannot read: is the layout's "encoding" right?)`;
    return { text: text.slice(0, bad), undecodable: { problem: `not valid ${name}`, detail, cut } };
  }
}

/** How much of a bad byte's line a message shows, each side. */
const AROUND = 12;

/**
 * What a UTF-8 layout says of bytes at `at` that are not UTF-8: the byte, its line around it,
 * and the encodings it may be in. `offset`: where in the file `buf` begins.
 */
function notUtf8(buf: Buffer, at: number, { cut, offset }: { cut: boolean; offset: number }): Undecodable {
  const lineStart = lastLineEnd(buf, at) + 1;
  const from = Math.max(lineStart, at - AROUND);
  let to = Math.min(buf.length, at + AROUND);
  for (let i = at; i < to; i++) if (buf[i] === 0x0a || buf[i] === 0x0d) to = i;
  const sample = buf.subarray(from, to);
  const bytes = `0x${buf[at]!.toString(16).toUpperCase().padStart(2, '0')}`;
  const where = cut ? `the file ends inside a character: ${bytes}` : `${bytes} in ${asWritten(sample)}`;
  return { problem: 'not valid UTF-8', detail: ` (${where}); ${likelyEncoding(buf, at, from, to, offset)}`, cut };
}

function lastLineEnd(buf: Buffer, before: number): number {
  for (let i = before - 1; i >= 0; i--) if (buf[i] === 0x0a || buf[i] === 0x0d) return i;
  return -1;
}

/** Bytes as a message shows them: ASCII as it is, any other byte as `\xE9`. */
function asWritten(bytes: Buffer): string {
  let out = '';
  for (const b of bytes) out += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return `"${out.replace(/"/g, '\\"')}"`;
}

/** How a hint names an encoding: Windows-1252 with the label that reads its letters alike. */
const hinted = (encoding: string) => (encoding === 'windows-1252' || encoding === 'iso-8859-1' ? 'windows-1252 or iso-8859-1' : encoding);

/**
 * Which encoding a file that is not UTF-8 seems to be in, said as what to set: a UTF-16
 * byte-order mark or a NUL byte beside each character says UTF-16; otherwise the guess that
 * `layout suggest` makes (values/encodingGuess.ts), over the bytes read so far, with how it reads
 * the bad byte's line: one encoding when the guess is sure, else the likeliest first and its
 * alternatives, so that a person sees which is right.
 */
function likelyEncoding(buf: Buffer, at: number, from: number, to: number, offset: number): string {
  const start = buf.subarray(0, 2);
  if (offset + at === 0 && (start.equals(UTF16LE_BOM) || start.equals(UTF16BE_BOM)))
    return `the file begins with a UTF-16 byte-order mark: set the layout's "encoding" to "utf-16"`;
  const sample = buf.subarray(from, to);
  const nuls = sample.filter((b) => b === 0).length;
  if (nuls * 3 >= sample.length && sample.length >= 4) {
    // the bad byte is a Latin-1 letter's low byte: a character's first (at an even offset) in little-endian order
    const order = (offset + at) % 2 === 0 ? 'utf-16le' : 'utf-16be';
    return `the file looks like UTF-16 without a byte-order mark: set the layout's "encoding" to "${order}"`;
  }
  const guess = guessLegacyEncoding(buf);
  // the line as each reads it, from its start when near, so that a character of two bytes is read whole
  const lineStart = lastLineEnd(buf, at) + 1;
  const shownLine = buf.subarray(at - lineStart <= 60 ? lineStart : from, to);
  const readAs = (encoding: string) => new TextDecoder(encoding).decode(shownLine, { stream: true });
  const set = `set the layout's "encoding"`;
  if (guess.sure && guess.alike.length === 0)
    return `the file looks like ${guess.encoding} (it reads ${quoteValue(readAs(guess.encoding))}): ${set} to "${guess.encoding}"`;
  const shown = [...new Set([guess.encoding, ...guess.alike, ...guess.alternatives].map(hinted))];
  const readings = shown.map((name) => ({ shown: name, text: readAs(name.split(' ')[0]!) }));
  if (readings.every((r) => r.text === readings[0]!.text))
    return `the file looks like ${readings.map((r) => r.shown).join(', or ')} (each reads it ${quoteValue(readings[0]!.text)}): ${set}`;
  return `the file looks like ${readings.map((r) => `${r.shown} (it reads ${quoteValue(r.text)})`).join(', else ')}: ${set}`;
}

/**
 * A file's last `length` bytes (fewer in a smaller file) as text in its encoding, read without
 * the rest, and whether they end inside a character (an upload stopped mid-character). UTF-16
 * is read from an even offset; `utf-16` takes its byte order from the file's first two bytes.
 */
export async function decodeTail(path: string, encoding: string | undefined, length: number): Promise<{ text: string; cut: boolean }> {
  const name = encodingName(encoding ?? DEFAULT_ENCODING);
  if (name === undefined) throw new Error(`unknown encoding ${JSON.stringify(encoding)}`);
  const { size } = await stat(path);
  const units = codeUnitBytes(name);
  let start = Math.max(0, size - length);
  if (units === 2 && start % 2 === 1) start--;
  const tail = await readAt(path, size - start, start);
  if (name === DEFAULT_ENCODING) return { text: tail.toString('utf8'), cut: completePrefix(tail) < tail.length };
  let order = name;
  if (name === UTF16_BY_BOM) order = (await readAt(path, Math.min(2, size), 0)).equals(UTF16BE_BOM) ? 'utf-16be' : 'utf-16le';
  const text = decodeWhole(order, tail);
  if (units === 1) return { text, cut: false };
  const last = tail.length >= 2 ? (order === 'utf-16le' ? tail.readUInt16LE(tail.length - 2) : tail.readUInt16BE(tail.length - 2)) : 0;
  return { text, cut: tail.length % 2 === 1 || (last >= 0xd800 && last <= 0xdbff) };
}

/**
 * The first `length` bytes of a file as text, in its encoding (its byte-order mark dropped):
 * what looks at a file's first records before it is read whole (a summary record above the
 * header). `whole` says whether the text reaches the file's end; a last line that is not
 * whole may be cut short.
 */
export async function decodeHead(path: string, encoding: string | undefined, length: number): Promise<{ text: string; whole: boolean }> {
  const name = encodingName(encoding ?? DEFAULT_ENCODING);
  if (name === undefined) throw new Error(`unknown encoding ${JSON.stringify(encoding)}`);
  const { size } = await stat(path);
  const units = codeUnitBytes(name);
  let take = Math.min(size, length);
  if (units === 2 && take % 2 === 1) take--;
  const head = await readAt(path, take, 0);
  let text: string;
  if (name === DEFAULT_ENCODING) text = head.subarray(0, completePrefix(head)).toString('utf8');
  else {
    const order = name === UTF16_BY_BOM ? (head.subarray(0, 2).equals(UTF16BE_BOM) ? 'utf-16be' : 'utf-16le') : name;
    text = decodeWhole(order, head);
  }
  return { text: text.replace(/^\uFEFF/, ''), whole: take === size };
}
