import { createHash } from 'node:crypto';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { faultPoint } from '../faults.js';
import { isPinned, type FilePin, type FolderReader, type IntakeEntry } from '../intake/intake.js';
import { SampleTaker, sampleRanges, type DecidedSample } from '../intake/sampleCheck.js';
import type { DecodeOptions } from '../delivery/decodeSettings.js';
import { HEAD_BYTES, sniffHead } from '../delivery/sniff.js';
import { DecodingTee, removeContent, stagedContent, type StagedContent } from '../delivery/stagedContent.js';

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

async function writeAll(out: FileHandle, chunk: Buffer): Promise<void> {
  for (let done = 0; done < chunk.length;) done += (await out.write(chunk, done)).bytesWritten;
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
    // a plain loop over the pinned stream, which reads the next chunk ahead: each chunk is hashed
    // while the one before it is still being written, and at most one write is in flight
    const out = await open(path, 'wx', 0o600);
    let writing: Promise<void> = Promise.resolve();
    try {
      for await (const chunk of file.stream as AsyncIterable<Buffer>) {
        hash.update(chunk);
        sampler?.feed(chunk, size);
        size += chunk.length;
        onRead?.(size);
        await writing;
        writing = writeAll(out, chunk);
        if (head) {
          head.push(chunk);
          if (size >= HEAD_BYTES) await wrapped();
        } else await tee?.feed(chunk);
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
    if (!(await intake.stat(entry.name))) return { kind: 'gone', answer: 'gone by the end of its read' };
    const asListed = file.pin.size === entry.size && file.pin.mtimeMs === entry.mtimeMs;
    if (!asListed || !isPinned(after, file.pin) || size !== file.pin.size) {
      return { kind: 'changed', reason: `changed while being read (${entry.size} bytes listed, ${size} read, ${after.size} now)` };
    }
    const delivered = { path, sha256: hash.digest('hex'), size };
    // not decoded while read (a plain file, a zip): from the staged copy, which for a plain file is the content
    content ??= await stagedContent(delivered, decode, path);
    kept = true;
    return { kind: 'staged', ...delivered, pin: file.pin, content, ...(sampler ? { sample: sampler.sample() } : {}) };
  } finally {
    await tee?.abort();
    await file.close();
    if (!kept) {
      if (content) await removeContent(content, path);
      await unlink(path).catch(() => undefined);
    }
  }
}
