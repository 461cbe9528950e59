import { once } from 'node:events';
import { faultPoint } from '../faults.js';

/** How much of a long answer goes to stdout in one write. */
const BATCH_CHARS = 64 * 1024;

/**
 * A long answer (an audit of a year's uploads: hundreds of megabytes) written as it is read back,
 * a batch at a time, waiting while the reader (a pipe, a pager) is behind: never one string of it
 * all. `lines` ends each piece with a line break (text); without it the pieces are joined as they
 * are (a JSON document's parts), and `end` follows the last. The fault point `audit-output` is reached at each batch, so a
 * test kills the process mid-answer.
 */
export async function writeStreamed(
  pieces: Iterable<string>,
  opts: { lines: boolean; end?: string; stream?: NodeJS.WritableStream } = { lines: true },
): Promise<void> {
  const stream = opts.stream ?? process.stdout;
  let batch = '';
  const flush = async () => {
    faultPoint('audit-output');
    const text = batch;
    batch = '';
    if (!stream.write(text)) await once(stream, 'drain');
  };
  for (const piece of pieces) {
    batch += opts.lines ? `${piece}\n` : piece;
    if (batch.length >= BATCH_CHARS) await flush();
  }
  batch += opts.end ?? '';
  if (batch.length > 0) await flush();
}
