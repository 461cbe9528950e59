import { basename } from 'node:path';
import { finished, type Readable } from 'node:stream';
import { promisify } from 'node:util';
import yauzl from 'yauzl';
import { RejectError, errorMessage } from '../errors.js';
import { guarded, type OpenLayer } from './layers.js';

/** A member's name as the partner wrote it, quoted (its control characters escaped by JSON). */
const named = (e: yauzl.Entry) => JSON.stringify(e.fileName);

/** A settlement zip holds one file; listing more than this many members is not worth the memory. */
const MAX_MEMBERS = 1000;

const openZip = promisify<string, yauzl.Options, yauzl.ZipFile>(yauzl.open);

async function members(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  const found: yauzl.Entry[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      if (!entry.fileName.endsWith('/')) found.push(entry); // folders are not members
      if (found.length > MAX_MEMBERS) reject(new RejectError(`a zip with more than ${MAX_MEMBERS} members is not a settlement file`));
      else zip.readEntry();
    });
    zip.on('end', resolve);
    zip.on('error', reject);
    zip.readEntry();
  });
  return found;
}

/**
 * The one member of a zip: the only one, or the only one whose name the pattern takes. Any
 * other shape is rejected naming the members, so the partner knows what was found.
 */
function pickMember(found: yauzl.Entry[], pattern: RegExp | undefined): yauzl.Entry {
  if (found.length === 1) return found[0]!;
  const names = found.map(named).join(', ');
  if (found.length === 0) throw new RejectError('the zip has no member');
  const matching = pattern ? found.filter((e) => pattern.test(basename(e.fileName))) : [];
  if (matching.length === 1) return matching[0]!;
  throw new RejectError(`the zip has ${found.length} members (${names}); exactly one must match the pattern`);
}

/**
 * The one member of a zip, as a stream. yauzl reads the central directory, at the end of the
 * file, so a zip is read from a file (random access), never while it downloads; it checks the
 * member's sizes and CRC against what the zip declares. The zip stays open until the member
 * has been read.
 */
export async function unzipLayer(input: string, maxDecodedBytes: number, pattern: RegExp | undefined): Promise<OpenLayer> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(input, { lazyEntries: true, autoClose: false });
  } catch (err) {
    throw new RejectError(`not a readable zip: ${errorMessage(err)}`, {}, { cause: err });
  }
  const damaged = (err: unknown) =>
    err instanceof RejectError ? err : new RejectError(`not a readable zip: ${errorMessage(err)}`, {}, { cause: err });
  try {
    const member = pickMember(await members(zip).catch((err) => Promise.reject(damaged(err))), pattern);
    if (member.uncompressedSize > maxDecodedBytes) {
      throw new RejectError(`its member ${named(member)} declares ${member.uncompressedSize} bytes, over --max-decoded-bytes`);
    }
    const openMember: (entry: yauzl.Entry) => Promise<Readable> = promisify(zip.openReadStream.bind(zip));
    const stream = await openMember(member).catch((err) => Promise.reject(damaged(err)));
    finished(stream, () => zip.close());
    // the member's compressed size is known up front: the ratio is judged against it from the first byte
    return { output: guarded(stream, damaged), consumed: () => member.compressedSize };
  } catch (err) {
    zip.close();
    throw err;
  }
}
