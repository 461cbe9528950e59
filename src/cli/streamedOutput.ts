import { once } from 'node:events';
import { faultPoint } from '../faults.js';
import type { AnswerPiece } from '../report/arrivalAudit/accountedList.js';

/** How much of a long answer goes to stdout in one write. */
const BATCH_CHARS = 64 * 1024;

/**
 * A long answer (an audit of a year's uploads: hundreds of megabytes) written as it is read back,
 * a batch at a time, waiting while the reader (a pipe, a pager) is behind: never one string of it
 * all. Text pieces are gathered into batches; a piece of bytes (lines already written out once as
 * UTF-8: AccountedList.joined) is written as it is, never decoded and encoded again. `lines` ends
 * each piece with a line break (text); without it the pieces are joined as they are (a JSON
 * document's parts), and `end` follows the last. The fault point `audit-output` is reached at
 * each write, so a test kills the process mid-answer.
 */
export async function writeStreamed(
  pieces: Iterable<AnswerPiece>,
  opts: { lines: boolean; end?: string; stream?: NodeJS.WritableStream } = { lines: true },
): Promise<void> {
  const stream = opts.stream ?? process.stdout;
  let batch = '';
  const write = async (data: AnswerPiece) => {
    faultPoint('audit-output');
    if (!stream.write(data)) await once(stream, 'drain');
  };
  const flush = async () => {
    const text = batch;
    batch = '';
    await write(text);
  };
  for (const piece of pieces) {
    if (typeof piece !== 'string') {
      if (batch.length > 0) await flush();
      await write(piece);
      if (opts.lines) batch += '\n';
      continue;
    }
    batch += opts.lines ? `${piece}\n` : piece;
    if (batch.length >= BATCH_CHARS) await flush();
  }
  batch += opts.end ?? '';
  if (batch.length > 0) await flush();
}
