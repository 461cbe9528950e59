import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DecidedOutcomes, type Decided } from '../../src/report/arrivalAudit/decidedOutcomes.js';

const SHA = createHash('sha256').update('x').digest('hex');

const decided = (sha256: string | null, recordedAt = '2026-03-01T02:03:04.005Z'): Decided => ({
  outcome: 'loaded',
  size: 12,
  runId: 'run-1',
  recordedAt,
  sha256,
  duplicateOf: null,
  reason: null,
  leftAs: null,
});

describe('DecidedOutcomes', () => {
  it('gives back each hash as the ledger wrote it: lower-case hex as bytes, anything else as its text', () => {
    const hashes = [
      SHA,
      SHA.toUpperCase(),
      `${SHA.slice(0, 63)}A`,
      SHA.slice(0, 62),
      `${SHA}00`,
      `${SHA.slice(0, 10)}g${SHA.slice(11)}`,
      `${SHA.slice(0, 10)}\u00e9${SHA.slice(11)}`,
      `${SHA.slice(0, 10)}\u0130${SHA.slice(11)}`,
      'not a hash',
      '',
      null,
    ];
    const outcomes = new DecidedOutcomes(hashes.length);
    hashes.forEach((sha, index) => outcomes.set(index, decided(sha)));
    hashes.forEach((sha, index) => expect(outcomes.get(index)).toEqual(decided(sha)));
  });

  it('a record set over another keeps the later hash and time, in the arrays or aside', () => {
    const outcomes = new DecidedOutcomes(2);
    outcomes.set(0, decided(SHA.toUpperCase(), '2026-03-01 02:03:04'));
    outcomes.set(0, decided(SHA));
    outcomes.set(1, decided(SHA));
    outcomes.set(1, decided('f'.repeat(63) + 'F', '2026-03-01T02:03:04Z'));
    expect(outcomes.get(0)).toEqual(decided(SHA));
    expect(outcomes.get(1)).toEqual(decided('f'.repeat(63) + 'F', '2026-03-01T02:03:04Z'));
  });
});
