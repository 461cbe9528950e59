import { createHash } from 'node:crypto';
import type { DecodeOptions } from '../../src/delivery/decodeSettings.js';

/**
 * What the in-process tests of a run and a load (test/unit/pipelineRun.test.ts,
 * test/db/pipelineLoad.test.ts, test/db/financeLoad.test.ts) share: files in the default
 * layout's shape, their content hash, and delivery decoding with no keys.
 */

/** No OpenPGP keys, no zip member pattern, the default bounds on inflating. */
export const NO_KEYS_DECODE: DecodeOptions = {
  decryptionKey: undefined,
  verificationKey: undefined,
  maxInflateRatio: 100,
  maxDecodedBytes: 1024 ** 3,
  memberPattern: undefined,
};

/** The content's SHA-256 in hex, as the ledger and the file markers key it. */
export const sha256Hex = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

export const DEFAULT_HEADER =
  'settlement_date,transaction_id,merchant_id,card_brand,transaction_type,gross_amount,fee_amount,net_amount,currency\n';

/** A file in the default layout's shape, one sale per [transaction id, gross amount]. */
export const defaultSettlement = (...sales: [string, string][]) =>
  DEFAULT_HEADER + sales.map(([id, gross]) => `2026-06-01,${id},M1,VISA,sale,${gross},0.00,${gross},EUR\n`).join('');
