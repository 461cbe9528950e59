import { describe, expect, it } from 'vitest';
import { jsonDocument, snakeKeys } from '../../src/cli/jsonOutput.js';

describe('the JSON convention', () => {
  it('puts "version": 1 first and turns camelCase keys into snake_case at every depth, values untouched', () => {
    const doc = JSON.parse(
      jsonDocument({
        runId: 'r-1',
        files: [{ duplicateOf: { name: 'settle_aB.csv', originalRun: 'r-0' }, heldFor: null }],
        details: { leaseUntil: '2026-01-01T00:00:00.000Z', owner: { startedAt: '12' } },
        not_ready: 1,
      }),
    );
    expect(Object.keys(doc)).toEqual(['version', 'run_id', 'files', 'details', 'not_ready']);
    expect(doc).toEqual({
      version: 1,
      run_id: 'r-1',
      files: [{ duplicate_of: { name: 'settle_aB.csv', original_run: 'r-0' }, held_for: null }],
      details: { lease_until: '2026-01-01T00:00:00.000Z', owner: { started_at: '12' } },
      not_ready: 1,
    });
  });

  it('leaves arrays of plain values and nulls alone', () => {
    expect(snakeKeys([1, 'aB', null, [{ xY: 2 }]])).toEqual([1, 'aB', null, [{ x_y: 2 }]]);
  });
});
