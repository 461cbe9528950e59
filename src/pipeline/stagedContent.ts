import { unlink } from 'node:fs/promises';
import { RejectError, errorMessage } from '../errors.js';
import type { DecodeOptions } from '../load/decode/decodeSettings.js';
import { decodeDelivery, type DecodedContent, type DeliveredFile } from '../load/decode/decodeDelivery.js';

/** What a staged delivery holds: its decoded content, content that is bad (rejected once claimed), or a failure to decode it at all. */
export type StagedContent =
  | ({ kind: 'content' } & DecodedContent)
  | { kind: 'refused'; error: RejectError }
  /** not the file's fault (no --pgp-key, disk full): the file stays in the intake */
  | { kind: 'failed'; reason: string };

/**
 * Right after staging, the content inside the delivered bytes. Without decode options (a
 * caller that predates them) the delivered bytes are the content.
 */
export async function stagedContent(delivered: DeliveredFile, decode: DecodeOptions | undefined, outBase?: string): Promise<StagedContent> {
  if (!decode) return { kind: 'content', ...delivered, layers: [] };
  try {
    return { kind: 'content', ...(await decodeDelivery(delivered, decode, outBase)) };
  } catch (err) {
    if (err instanceof RejectError) return { kind: 'refused', error: err };
    return { kind: 'failed', reason: errorMessage(err) };
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
