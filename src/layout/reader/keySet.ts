import { closeSync, readSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { unlinkedTemporaryFile } from '../../privateFiles.js';

/** The keys' bytes held in memory before they go to a temporary file: a file of this many key bytes never touches the disk. */
const SPILL_AFTER = 16 * 1024 * 1024;
/** The table grows (doubles) when more than this share of its slots is taken. */
const MAX_LOAD = 0.7;
const FIRST_SLOTS = 1 << 12;

/**
 * The keys of one file with the line each was first seen in, in a fixed number of bytes a key
 * whatever its length: the table holds a 32-bit hash of each key and where its record is (12
 * bytes a slot, at most 70% of them taken), and the records (the line and the key's UTF-8 bytes)
 * are appended to a buffer that goes to a temporary file, already unlinked, once it passes 16
 * MiB. A key is known only when an earlier key of the same hash has the very same bytes: a hash
 * that matches is checked against the record, read back, so two keys whose hashes collide are
 * never taken for one. A Map of the keys as strings took about 100 bytes a key (a
 * 10,000,000-row file: 1 GB); this takes 17 to 34 bytes of memory a key.
 */
export class KeyFirstLines {
  private hashes = new Uint32Array(FIRST_SLOTS);
  /** where each slot's record starts, plus one (0: the slot is free) */
  private places = new Float64Array(FIRST_SLOTS);
  private taken = 0;
  private readonly hash: (bytes: Buffer) => number;
  private readonly spillAfter: number;
  private buffer = Buffer.allocUnsafe(4 * 1024);
  private used = 0;
  /** the bytes before `buffer`'s first, in the temporary file */
  private spilled = 0;
  private spillFile: number | null = null;
  private readonly header = Buffer.alloc(8);

  /**
   * `hash` and `spillAfter` are for the tests (keys that all collide; a file after a few keys); by
   * default MurmurHash3 with a random seed (no file can be written to make its keys collide on
   * purpose) and 16 MiB.
   */
  constructor(opts: { hash?: (bytes: Buffer) => number; spillAfter?: number } = {}) {
    const seed = randomBytes(4).readUInt32LE(0);
    this.hash = opts.hash ?? ((bytes) => murmurHash3(bytes, seed));
    this.spillAfter = opts.spillAfter ?? SPILL_AFTER;
  }

  /** Whether the keys' bytes went to a temporary file. */
  get spilledToDisk(): boolean {
    return this.spilled > 0;
  }

  /** The line of the first key with these exact characters, when one was added before; else the key is added with this line. */
  firstLineOf(key: string, line: number): number | undefined {
    const bytes = Buffer.from(key, 'utf8');
    const hash = this.hash(bytes) >>> 0;
    const mask = this.places.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const place = this.places[slot]!;
      if (place === 0) break;
      if (this.hashes[slot] !== hash) continue;
      const earlier = this.record(place - 1, bytes.length);
      if (earlier && earlier.key.equals(bytes)) return earlier.line;
    }
    this.insert(hash, this.append(bytes, line) + 1);
    return undefined;
  }

  /** Lets the temporary file go (a file under 16 MiB of keys never made one). */
  close(): void {
    if (this.spillFile === null) return;
    closeSync(this.spillFile);
    this.spillFile = null;
  }

  private insert(hash: number, place: number): void {
    if (this.taken + 1 > this.places.length * MAX_LOAD) this.grow();
    const mask = this.places.length - 1;
    let slot = hash & mask;
    while (this.places[slot] !== 0) slot = (slot + 1) & mask;
    this.hashes[slot] = hash;
    this.places[slot] = place;
    this.taken++;
  }

  private grow(): void {
    const { hashes, places } = this;
    this.hashes = new Uint32Array(places.length * 2);
    this.places = new Float64Array(places.length * 2);
    this.taken = 0;
    for (let slot = 0; slot < places.length; slot++) if (places[slot] !== 0) this.insert(hashes[slot]!, places[slot]!);
  }

  /** The record's start: the line (4 bytes), the key's length (4 bytes), the key. */
  private append(bytes: Buffer, line: number): number {
    const size = 8 + bytes.length;
    if (this.used + size > this.buffer.length) this.makeRoom(size);
    const at = this.spilled + this.used;
    this.buffer.writeUInt32LE(line >>> 0, this.used);
    this.buffer.writeUInt32LE(bytes.length, this.used + 4);
    bytes.copy(this.buffer, this.used + 8);
    this.used += size;
    return at;
  }

  /** Keeps the buffer under `SPILL_AFTER`: grown while it is small, written to the file (and emptied) past it. */
  private makeRoom(size: number): void {
    if (this.spillFile === null && this.buffer.length * 2 <= this.spillAfter) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.used + size));
      this.buffer.copy(bigger, 0, 0, this.used);
      this.buffer = bigger;
      return;
    }
    this.spillFile ??= unlinkedTemporaryFile('keys');
    for (let written = 0; written < this.used;) written += writeSync(this.spillFile, this.buffer, written, this.used - written);
    this.spilled += this.used;
    this.used = 0;
    if (size > this.buffer.length) this.buffer = Buffer.allocUnsafe(size);
  }

  /** A record read back (from the buffer, or from the file where it went there); null when its key is not `length` bytes long. */
  private record(at: number, length: number): { line: number; key: Buffer } | null {
    if (at >= this.spilled) {
      const start = at - this.spilled;
      if (this.buffer.readUInt32LE(start + 4) !== length) return null;
      return { line: this.buffer.readUInt32LE(start), key: this.buffer.subarray(start + 8, start + 8 + length) };
    }
    readExactly(this.spillFile!, this.header, at);
    if (this.header.readUInt32LE(4) !== length) return null;
    const key = Buffer.allocUnsafe(length);
    readExactly(this.spillFile!, key, at + 8);
    return { line: this.header.readUInt32LE(0), key };
  }
}

function readExactly(fd: number, into: Buffer, position: number): void {
  for (let read = 0; read < into.length;) {
    const got = readSync(fd, into, read, into.length - read, position + read);
    if (got === 0) throw new Error('the temporary file of keys ended early');
    read += got;
  }
}

/**
 * 32-bit MurmurHash3 of the bytes (x86_32), as the reference gives it (test/unit/keySet.test.ts
 * holds it to the published vectors). Written here, not taken from a package: the npm ones were
 * slower on a check's keys (10 M keys of 44 bytes, CPU time: this 0.47 s; murmurhash 2.0.1
 * 0.98 s and murmurhash3js-revisited 1.4 s, both multiplying in 16-bit halves where Math.imul is
 * one instruction; xxhash-wasm's h32Raw 0.64 s; @node-rs/xxhash's native xxh32 1.2 s, a call into
 * the addon per key); the two MurmurHash3 packages have had no release since 2024. In a whole
 * key set the hash is a few per cent of the CPU time (5 M keys: about 6 s with any of them).
 */
export function murmurHash3(bytes: Buffer, seed: number): number {
  let hash = seed >>> 0;
  const blocks = bytes.length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let block = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    block = Math.imul(block, 0xcc9e2d51);
    block = (block << 15) | (block >>> 17);
    block = Math.imul(block, 0x1b873593);
    hash ^= block;
    hash = (hash << 13) | (hash >>> 19);
    hash = (Math.imul(hash, 5) + 0xe6546b64) | 0;
  }
  const tail = bytes.length & 3;
  if (tail > 0) {
    let block = bytes[blocks]!;
    if (tail > 1) block ^= bytes[blocks + 1]! << 8;
    if (tail > 2) block ^= bytes[blocks + 2]! << 16;
    block = Math.imul(block, 0xcc9e2d51);
    block = (block << 15) | (block >>> 17);
    block = Math.imul(block, 0x1b873593);
    hash ^= block;
  }
  hash ^= bytes.length;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
