import { unlink } from '../syncFs.js';
import { PassThrough } from 'node:stream';
import { RejectError, errorMessage } from '../errors.js';
import type { DecodeOptions } from './decodeSettings.js';
import { decodeDelivery, decodeStream, type DecodedContent, type DeliveredFile } from './decodeDelivery.js';
import type { Wrapping } from './sniff.js';

/** What a staged delivery holds: its decoded content, content that is bad (rejected once claimed), or a failure to decode it at all. */
export type StagedContent =
  | ({ kind: 'content' } & DecodedContent)
  | { kind: 'refused'; error: RejectError }
  /** not the file's fault (no --pgp-key, disk full): the file stays in the intake */
  | { kind: 'failed'; reason: string };

async function asStagedContent(decoding: Promise<DecodedContent>): Promise<StagedContent> {
  try {
    return { kind: 'content', ...(await decoding) };
  } catch (err) {
    if (err instanceof RejectError) return { kind: 'refused', error: err };
    return { kind: 'failed', reason: errorMessage(err) };
  }
}

/**
 * The content inside a staged delivery, decoded from the staged file. Without decode options
 * (a caller that predates them) the delivered bytes are the content.
 */
export async function stagedContent(delivered: DeliveredFile, decode: DecodeOptions | undefined, outBase?: string): Promise<StagedContent> {
  if (!decode) return { kind: 'content', ...delivered, layers: [] };
  return asStagedContent(decodeDelivery(delivered, decode, outBase));
}

/** what the decoder is handed at a time, and what its input holds before the reader waits */
const PIECE_BYTES = 1024 * 1024;

/**
 * Decodes a delivery while it is read: each byte the download reads is handed here too, so the
 * download, the decoding and both hashes take one pass over the source. The decoder sets the
 * pace (a slow decryption slows the read, memory stays flat); one that has finished or given
 * up early takes nothing more, and the download still reads the file to its end (its delivered
 * hash and staged copy are needed whatever the content turns out to be).
 */
export class DecodingTee {
  private readonly input = new PassThrough({ highWaterMark: PIECE_BYTES });
  private readonly result: Promise<StagedContent>;
  private settled = false;
  /** copied bytes not yet handed on (feedCopy) */
  private pending: Buffer | undefined;
  private pendingBytes = 0;

  constructor(outermost: Wrapping, size: number, decode: DecodeOptions, outBase: string) {
    // the decoder's own failure arrives through `result`; this only keeps a second report of it quiet
    this.input.on('error', () => undefined);
    this.result = asStagedContent(decodeStream(outermost, { stream: this.input, size }, decode, outBase)).finally(() => {
      this.settled = true;
      this.input.destroy(); // wakes a feed waiting for room the decoder will never make
    });
  }

  /** A chunk the decoder may keep: the caller never writes into its buffer again. */
  async feed(chunk: Buffer): Promise<void> {
    await this.handOn();
    await this.write(chunk);
  }

  /**
   * A chunk of a buffer the caller reads into again: its bytes are copied, and handed on a
   * piece of 1 MiB at a time, so that the decoder takes a turn per MiB, not per small read.
   */
  async feedCopy(chunk: Buffer): Promise<void> {
    for (let at = 0; at < chunk.length;) {
      this.pending ??= Buffer.allocUnsafe(PIECE_BYTES);
      const copied = chunk.copy(this.pending, this.pendingBytes, at);
      at += copied;
      this.pendingBytes += copied;
      if (this.pendingBytes === this.pending.length) await this.handOn();
    }
  }

  private async handOn(): Promise<void> {
    if (!this.pending || this.pendingBytes === 0) return;
    const piece = this.pending.subarray(0, this.pendingBytes);
    this.pending = undefined;
    this.pendingBytes = 0;
    await this.write(piece);
  }

  private async write(chunk: Buffer): Promise<void> {
    if (this.settled || this.input.destroyed) return;
    if (this.input.write(chunk)) return;
    await new Promise<void>((resolve) => {
      const room = () => {
        this.input.off('drain', room).off('close', room);
        resolve();
      };
      this.input.on('drain', room).on('close', room);
    });
  }

  /** The whole delivery was fed: its content, once the decoder has finished with it. */
  async end(): Promise<StagedContent> {
    await this.handOn();
    this.input.end();
    return this.result;
  }

  /** The delivery will not be used (it changed while read, or the read failed): nothing is kept. */
  async abort(): Promise<void> {
    this.input.destroy();
    const content = await this.result;
    if (content.kind === 'content') await unlink(content.path).catch(() => undefined);
  }
}

/** The content's own staging file, when it has one (a plain delivery shares the delivered copy). */
export async function removeContent(content: StagedContent, deliveredPath: string): Promise<void> {
  if (content.kind === 'content' && content.path !== deliveredPath) await unlink(content.path).catch(() => undefined);
}

/** The decoded content's hash for the ledger when it differs from the delivered one (null: the wrapping could not be undone). */
export function contentDetails(content: StagedContent, deliveredSha256: string): Record<string, unknown> {
  if (content.kind !== 'content') return { contentSha256: null };
  if (content.sha256 === deliveredSha256) return {};
  return { contentSha256: content.sha256, layers: content.layers };
}
