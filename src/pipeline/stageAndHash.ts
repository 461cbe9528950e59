import { closeSync, openSync, write, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { setImmediate } from 'node:timers/promises';
import { join } from 'node:path';
import { faultPoint } from '../faults.js';
import { isPinned, type FilePin, type FolderReader, type IntakeEntry, type PinnedFile } from '../intake/intake.js';
import { SampleTaker, sampleRanges, type DecidedSample } from '../intake/sampleCheck.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { HEAD_BYTES, sniffHead } from '../delivery/sniff.js';
import { DecodingTee, removeContent, stagedContent, type StagedContent } from '../delivery/stagedContent.js';
import { unlink } from '../syncFs.js';
import { HASH_WORKER_FROM_BYTES, ThisThreadHash, killHashWorker, localFileHash, type ChunkHash } from './hashWorker.js';

export type Staged =
  /**
   * `pin`: the very file the bytes were read from, checked again before its name leaves the
   * intake; `content`: what the delivered bytes hold (the staged copy itself for a plain file)
   */
  | { kind: 'staged'; path: string; sha256: string; size: number; pin: FilePin; content: StagedContent; sample?: DecidedSample }
  /** the file changed while it was copied: it was not complete after all */
  | { kind: 'changed'; reason: string }
  /** the name was gone by the end of the read: `answer` says how */
  | { kind: 'gone'; answer: string };

const writeAt = promisify(write);

/** All of `chunk` into the staging file at the current position, in the thread pool (beside the download). */
async function writeAll(fd: number, chunk: Buffer): Promise<void> {
  for (let done = 0; done < chunk.length;) done += (await writeAt(fd, chunk, done, chunk.length - done, null)).bytesWritten;
}

/**
 * A local file under HASH_WORKER_FROM_BYTES is read, hashed and written 64 KiB at a time, one
 * step after the other on this thread, from one buffer: the chunk stays in this core's cache
 * from the read through the hash to the write, and writes this size take small page-cache
 * folios. Measured on a 1 GiB file (docs/BENCHMARKS.md), this costs the kernel a fraction of
 * what 1 to 4 MiB reads and writes overlapped in the thread pool cost (their buffer crossing
 * between cores, their large folios). A larger file is read and written on this thread, 64 KiB
 * at a time too, in the slots of the hash worker's ring (src/pipeline/hashWorker.ts), and hashed
 * on another core meanwhile.
 */
const LOCAL_CHUNK_BYTES = 64 * 1024;
/** between chunks read without waiting, the event loop gets a turn (signals, timers) this often */
const YIELD_EVERY_BYTES = 16 * 1024 * 1024;

/** All of `chunk` into the staging file at the current position, on this thread. */
function writeAllSync(fd: number, chunk: Buffer): void {
  for (let done = 0; done < chunk.length;) done += writeSync(fd, chunk, done, chunk.length - done);
}

/**
 * One read of the file, pinned (opened once, never through a link, only a regular file): its
 * bytes go to a private staging file while they are hashed and, when their leading bytes show
 * a gzip or OpenPGP wrapping, decoded (DecodingTee): download, decoding and both hashes in one
 * pass, so the content that is loaded is exactly the content that was claimed. A zip is
 * decoded from the staged copy once it is complete (its directory is at its end). The staging
 * name is the sequence number alone, so any file name fits. Whatever happens short of a
 * complete copy, the partial copy and content are removed: a full staging disk stops this
 * file, not the ones after it. Without `decode`, the delivered bytes are the content.
 */
export async function stageAndHash(
  intake: FolderReader,
  entry: IntakeEntry,
  stagingDir: string,
  seq: number | string,
  decode?: DecodeOptions,
  /** the bytes read so far, after each read block: a progress line for a long download */
  onRead?: (bytes: number) => void,
  /** a local file from this size on is hashed on the worker thread (a test's small file too) */
  hashWorkerFromBytes: number = HASH_WORKER_FROM_BYTES,
): Promise<Staged> {
  faultPoint('before-open', entry.name);
  const file = await intake.pin(entry.name);
  const path = join(stagingDir, String(seq));
  let kept = false;
  // the first bytes, until they say whether the file is wrapped
  let head: Buffer[] | undefined = decode ? [] : undefined;
  let tee: DecodingTee | undefined;
  let content: StagedContent | undefined;
  // a local file is read into the hash's buffer (the worker's ring for a large one); a stream brings its own chunks
  const hash: ChunkHash = file.readSyncAt ? localFileHash(file.pin.size, LOCAL_CHUNK_BYTES, hashWorkerFromBytes) : new ThisThreadHash();
  try {
    // without inodes (SFTP) the name is later checked against a sample of these very bytes
    const sampler = file.pin.ino === undefined ? new SampleTaker(sampleRanges(file.pin.size)) : undefined;
    let size = 0;
    const wrapped = () => {
      const bytes = Buffer.concat(head!);
      head = undefined;
      const outermost = sniffHead(bytes);
      if (outermost === 'gzip' || outermost?.startsWith('pgp')) tee = new DecodingTee(outermost, file.pin.size, decode!, path);
      return tee?.feed(bytes);
    };
    // opened, written (a local file) and closed on this thread (src/syncFs.ts)
    const out = openSync(path, 'wx', 0o600);
    // what every chunk read gets, whichever loop read it: the hash, the sample, the count, and the
    // decoder while the head is read or a wrapping decoded (`owned`: the chunk's buffer is not read into again)
    const chunks: ChunkSink = {
      took: (chunk) => {
        hash.update(chunk);
        sampler?.feed(chunk, size);
        size += chunk.length;
        onRead?.(size);
      },
      decoding: () => head !== undefined || tee !== undefined,
      decodeAlong: async (chunk, owned) => {
        if (head) {
          head.push(owned ? chunk : Buffer.from(chunk));
          if (size >= HEAD_BYTES) await wrapped();
        } else if (tee) await (owned ? tee.feed(chunk) : tee.feedCopy(chunk));
      },
    };
    let writing: Promise<void> = Promise.resolve();
    try {
      if (file.readSyncAt) {
        await copyLocal((buffer, position) => file.readSyncAt!(buffer, position), hash, out, entry.name, chunks);
      } else {
        // a stream (SFTP) reads the next chunk ahead: each chunk is hashed while the one before
        // it is still being written, and at most one write is in flight
        for await (const chunk of file.stream as AsyncIterable<Buffer>) {
          chunks.took(chunk);
          await writing;
          writing = writeAll(out, chunk);
          await chunks.decodeAlong(chunk, true);
        }
      }
      if (head) await wrapped();
      await writing;
    } finally {
      await writing.catch(() => undefined);
      closeSync(out);
    }
    if (tee) content = await tee.end();
    tee = undefined;
    faultPoint('after-download', entry.name);
    const changed = await changedWhileRead(intake, entry, file, size);
    if (changed) return changed;
    const delivered = { path, sha256: await hash.digest(), size };
    // not decoded while read (a plain file, a zip): from the staged copy, which for a plain file is the content
    content ??= await stagedContent(delivered, decode, path);
    kept = true;
    return { kind: 'staged', ...delivered, pin: file.pin, content, ...(sampler ? { sample: sampler.sample() } : {}) };
  } finally {
    hash.release();
    await tee?.abort();
    await file.close();
    if (!kept) {
      if (content) await removeContent(content, path);
      await unlink(path).catch(() => undefined);
    }
  }
}

/** After the read: the name gone, or the file no longer as listed and pinned (still being written); undefined when the bytes read are the file's. */
async function changedWhileRead(intake: FolderReader, entry: IntakeEntry, file: PinnedFile, size: number): Promise<Staged | undefined> {
  const after = await file.current();
  if (!(await intake.stat(entry.name))) return { kind: 'gone', answer: 'gone by the end of its read' };
  const asListed = file.pin.size === entry.size && file.pin.mtimeMs === entry.mtimeMs;
  if (!asListed || !isPinned(after, file.pin) || size !== file.pin.size) {
    return { kind: 'changed', reason: `changed while being read (${entry.size} bytes listed, ${size} read, ${after.size} now)` };
  }
  return undefined;
}

/** What each chunk of a file's one read goes to besides the staging file. */
interface ChunkSink {
  /** the hash, the sample, the count of bytes read */
  took(chunk: Buffer): void;
  /** whether the decoder still wants chunks: the head is being read, or a wrapping is decoded */
  decoding(): boolean;
  decodeAlong(chunk: Buffer, owned: boolean): Promise<void>;
}

/**
 * A local file read on this thread, LOCAL_CHUNK_BYTES at a time into the hash's buffers (the
 * worker's ring for a large file), each chunk hashed, written to the staging file (`out`) and
 * decoded while the decoder wants it; reading never waits, so the event loop gets a turn every
 * YIELD_EVERY_BYTES.
 */
async function copyLocal(
  readSyncAt: (buffer: Buffer, position: number) => number,
  hash: ChunkHash,
  out: number,
  name: string,
  chunks: ChunkSink,
): Promise<void> {
  for (let position = 0, sinceTurn = 0; ;) {
    // a slot of the ring is free once its bytes are hashed and written (a wait lets the event loop turn)
    const free = hash.nextBuffer();
    const buffer = free instanceof Promise ? await free : free;
    const bytes = readSyncAt(buffer, position);
    if (bytes === 0) break;
    const chunk = buffer.subarray(0, bytes);
    chunks.took(chunk);
    if (position === 0) faultPoint('mid-hash', name, killHashWorker);
    position += bytes;
    writeAllSync(out, chunk);
    if (chunks.decoding()) await chunks.decodeAlong(chunk, false);
    if ((sinceTurn += bytes) >= YIELD_EVERY_BYTES) {
      sinceTurn = 0;
      await setImmediate();
    }
  }
}
