import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openLedger } from '../../src/ledger/openLedger.js';
import { openPgLedger } from '../../src/ledger/pgLedger.js';
import { currentOwner } from '../../src/owner.js';
import { newDatabase } from '../support/dbDatabase.js';

let database: { url: string; drop: () => Promise<void> };
let runs = 0;

beforeAll(async () => {
  database = await newDatabase('ledger');
});
afterAll(async () => {
  await database.drop();
});

const newRun = (ledger: Ledger) => ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: process.pid }, () => `pgrun${++runs}`);
const claimOf = (runId: string) => ({
  name: 'a.csv',
  sha256: 'a'.repeat(64),
  size: 10,
  runId,
  arrival: '10:1',
  owner: currentOwner(),
  leaseSeconds: 3600,
});

describe('the PostgreSQL ledger', () => {
  it('refuses a database whose ledger schema was never made, unless asked to create it', async () => {
    await expect(openPgLedger(database.url, { create: false })).rejects.toThrow(/schema/);
    const ledger = await openPgLedger(database.url, { create: true });
    await ledger.close();
    const again = await openPgLedger(database.url, { create: false });
    await again.close();
  });

  it('gives a content to one run: the second claim loses, and the load is what the row then says', async () => {
    const first = await openPgLedger(database.url, { create: false });
    const second = await openPgLedger(database.url, { create: false });
    try {
      const run1 = await newRun(first);
      const run2 = await newRun(second);
      expect(await first.claim(claimOf(run1))).toBe(true);
      expect(await second.claim(claimOf(run2))).toBe(false);
      const finalized = await first.finalizeClaim(
        { name: 'a.csv', sha256: 'a'.repeat(64), runId: run1 },
        { state: 'loaded', event: 'loaded', rows: 1 },
        {},
      );
      expect(finalized).toBe(true);
      const rows = await second.knowsContent('a'.repeat(64));
      expect(rows.map((row) => [row.state, row.runId])).toEqual([['loaded', run1]]);
      // a run that does not own the claim cannot finalize it
      expect(
        await second.finalizeClaim({ name: 'a.csv', sha256: 'a'.repeat(64), runId: run2 }, { state: 'failed', event: 'failed' }, {}),
      ).toBe(false);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('is what openLedger opens for a postgres:// location', async () => {
    const ledger = await openLedger(database.url, { create: false, timeoutMs: 2000 });
    try {
      const runId = await newRun(ledger);
      expect(await ledger.knowsContent('b'.repeat(64))).toEqual([]);
      expect(runId).toMatch(/^pgrun/);
    } finally {
      await ledger.close();
    }
  });

  it('opened read-only, refuses every write', async () => {
    const reader = await openPgLedger(database.url, { create: false, readOnly: true });
    try {
      await expect(newRun(reader)).rejects.toThrow(/read-only/);
    } finally {
      await reader.close();
    }
  });
});
