import { createHash } from 'node:crypto';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { faultPoint } from '../faults.js';
import { isPinned, type FilePin, type FolderReader, type IntakeEntry, type PinnedFile } from '../intake/intake.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { HEAD_BYTES, sniffHead } from '../delivery/sniff.js';
import { DecodingTee, removeContent, stagedContent, type StagedContent } from '../delivery/stagedContent.js';

export type Staged =
  /**
   * `pin`: the very file the bytes were read from, checked again before its name leaves the
   * intake; `content`: what the delivered bytes hold (the staged copy itself for a plain file)
   */
  | { kind: 'staged'; path: string; sha256: string; size: number; pin: FilePin; content: StagedContent }
  /** the file changed while it was copied: it was not complete after all */
  | { kind: 'changed'; reason: string }
  | { kind: 'gone' };

async function writeAll(out: FileHandle, chunk: Buffer): Promise<void> {
  for (let done = 0; done < chunk.length;) done += (await out.write(chunk, done)).bytesWritten;
}

/**
 * 4 MiB reads and writes: on a 1 GiB file, 1 MiB ones cost the kernel half again as much time
 * (docs/BENCHMARKS.md), and larger ones gained nothing more.
 */
const CHUNK_BYTES = 4 * 1024 * 1024;
/** how many buffers positional reads take turns in: one being read, one hashed, one written */
const TURNS = 3;

/**
 * The pinned file's bytes in chunks. Where the source has positional reads, they are read ahead
 * into three buffers in turn (a small file's the size of the file): a chunk stays good until
 * two more have been asked for, long enough for it to be written while the next one is hashed,
 * and no buffer is allocated and collected per chunk. Elsewhere (SFTP) the stream's chunks.
 */
async function* chunksOf(file: PinnedFile): AsyncGenerator<Buffer> {
  if (!file.readAt) {
    yield* file.stream as AsyncIterable<Buffer>;
    return;
  }
  const size = Math.min(CHUNK_BYTES, file.pin.size + 1);
  const buffers = Array.from({ length: TURNS }, () => Buffer.allocUnsafeSlow(size));
  let position = 0;
  let turn = 0;
  let reading = file.readAt(buffers[0]!, 0);
  try {
    for (;;) {
      const bytes = await reading;
      if (bytes === 0) return;
      const chunk = buffers[turn % TURNS]!.subarray(0, bytes);
      position += bytes;
      turn++;
      reading = file.readAt(buffers[turn % TURNS]!, position);
      yield chunk;
    }
  } finally {
    await reading.catch(() => undefined); // the read ahead ends before the file is closed
  }
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
): Promise<Staged> {
  faultPoint('before-open', entry.name);
  const file = await intake.pin(entry.name);
  const path = join(stagingDir, String(seq));
  let kept = false;
  // the first bytes, until they say whether the file is wrapped
  let head: Buffer[] | undefined = decode ? [] : undefined;
  let tee: DecodingTee | undefined;
  let content: StagedContent | undefined;
  try {
    const hash = createHash('sha256');
    let size = 0;
    const wrapped = () => {
      const bytes = Buffer.concat(head!);
      head = undefined;
      const outermost = sniffHead(bytes);
      if (outermost === 'gzip' || outermost?.startsWith('pgp')) tee = new DecodingTee(outermost, file.pin.size, decode!, path);
      return tee?.feed(bytes);
    };
    // a plain loop over the pinned file's chunks, read one ahead: each chunk is hashed while the
    // one before it is still being written, and at most one write is in flight
    const out = await open(path, 'wx', 0o600);
    let writing: Promise<void> = Promise.resolve();
    // a chunk of a buffer that is read into again is copied for what keeps it (the head, the decoder)
    const ownCopy = file.readAt ? (chunk: Buffer) => Buffer.from(chunk) : (chunk: Buffer) => chunk;
    try {
      for await (const chunk of chunksOf(file)) {
        hash.update(chunk);
        size += chunk.length;
        await writing;
        writing = writeAll(out, chunk);
        if (head) {
          head.push(ownCopy(chunk));
          if (size >= HEAD_BYTES) await wrapped();
        } else if (tee) await tee.feed(ownCopy(chunk));
      }
      if (head) await wrapped();
      await writing;
    } finally {
      await writing.catch(() => undefined);
      await out.close();
    }
    if (tee) content = await tee.end();
    tee = undefined;
    faultPoint('after-download', entry.name);
    const after = await file.current();
    if (!(await intake.stat(entry.name))) return { kind: 'gone' };
    const asListed = file.pin.size === entry.size && file.pin.mtimeMs === entry.mtimeMs;
    if (!asListed || !isPinned(after, file.pin) || size !== file.pin.size) {
      return { kind: 'changed', reason: `changed while being read (${entry.size} bytes listed, ${size} read, ${after.size} now)` };
    }
    const delivered = { path, sha256: hash.digest('hex'), size };
    // not decoded while read (a plain file, a zip): from the staged copy, which for a plain file is the content
    content ??= await stagedContent(delivered, decode, path);
    kept = true;
    return { kind: 'staged', ...delivered, pin: file.pin, content };
  } finally {
    await tee?.abort();
    await file.close();
    if (!kept) {
      if (content) await removeContent(content, path);
      await unlink(path).catch(() => undefined);
    }
  }
}
