import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * What the COPY is told when the source fails. pg-copy-streams sends the message of the error
 * that destroys it as the CopyFail message, and the server drops the connection when a
 * CopyFail is longer than 10,000 bytes (PQ_SMALL_MAX_MESSAGE_LEN): a long reject reason would
 * then read as a lost database. The reason is not the server's business anyway.
 */
export const COPY_ABORTED = 'settle-ingest: the source of this COPY failed; nothing of it is kept';

class CopyAborted extends Error {
  constructor(readonly original: unknown) {
    super(COPY_ABORTED);
  }
}

/**
 * Streams `source` into a COPY FROM STDIN stream. When the source throws, the COPY is aborted
 * with a short fixed message and the source's own error is what this rejects with.
 */
export async function feedCopy(source: AsyncIterable<string | Buffer>, copy: Writable): Promise<void> {
  async function* guarded(): AsyncGenerator<string | Buffer> {
    try {
      yield* source;
    } catch (err) {
      throw new CopyAborted(err);
    }
  }
  try {
    await pipeline(Readable.from(guarded()), copy);
  } catch (err) {
    throw err instanceof CopyAborted ? err.original : err;
  }
}
