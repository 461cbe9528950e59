import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openLedger } from '../../src/ledger/openLedger.js';
import { openPgLedger } from '../../src/ledger/pgLedger.js';
import { OPEN_RUNS_SQL } from '../../src/ledger/sqlLedger.js';
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

describe('the PostgreSQL ledger’s look at the runs without an end', () => {
  it('is made by the partial index of them (runs_open), whose condition is the statement’s own', async () => {
    const ledger = await openPgLedger(database.url, { create: false });
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const open = await newRun(ledger);
      expect((await ledger.openRuns()).map((run) => run.runId)).toContain(open);
      // a table this small is read whole by the planner's choice; without that choice, the index must serve
      await client.query('SET search_path = settle_ledger');
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${OPEN_RUNS_SQL}`);
      expect(rows.map((row) => row['QUERY PLAN']).join('\n')).toMatch(/Index Scan using runs_open on runs/);
    } finally {
      await client.end();
      await ledger.close();
    }
  });
});

describe('the PostgreSQL ledger, a transaction begun in its first statement’s round trip', () => {
  it("reads the audit's events as arrays: each the event the row form gives, with its file's size and its run's start; the file's arrival apart", async () => {
    const ledger = await openPgLedger(database.url, { create: false });
    try {
      const runId = await newRun(ledger);
      const name = "arrays' \\ é\u202e.csv";
      const sha256 = 'c'.repeat(64);
      expect(await ledger.claim({ ...claimOf(runId), name, sha256 })).toBe(true);
      expect(
        await ledger.finalizeClaim({ name, sha256, runId }, { state: 'rejected', event: 'rejected', reason: 'bad' }, { note: "o'k" }),
      ).toBe(true);
      const since = '2000-01-01T00:00:00.000Z';
      const rowForm = (await ledger.eventsSince(['claimed', 'rejected'], since)).filter((e) => e.name === name);
      const arrays = await ledger.eventsInContextSince(['claimed', 'rejected'], since, undefined, { afterId: 0, limit: 10_000 });
      const [run] = await ledger.recentRuns(1);
      expect(arrays.filter((e) => e.name === name)).toEqual(rowForm.map((e) => ({ ...e, fileSize: 10, runStartedAt: run!.startedAt })));
      expect(rowForm.map((e) => e.event)).toEqual(['claimed', 'rejected']);
      // by name (the audit's claims of uploads without an outcome): this name's claim, none of another's
      const byName = await ledger.eventsInContextSince(['claimed'], since, undefined, { afterId: 0, limit: 10_000 }, [name, 'other.csv']);
      expect(byName).toEqual([{ ...rowForm[0]!, fileSize: 10, runStartedAt: run!.startedAt }]);
      expect(await ledger.eventsInContextSince(['claimed'], since, ['default'], { afterId: byName[0]!.id, limit: 10 }, [name])).toEqual([]);
      expect(
        await ledger.fileArrivals([
          { name, sha256 },
          { name: 'not there.csv', sha256 },
        ]),
      ).toEqual([{ name, sha256, arrival: '10:1' }]);
    } finally {
      await ledger.close();
    }
  });

  it('writes names and reasons with quotes, backslashes, semicolons and question marks as they are', async () => {
    const ledger = await openPgLedger(database.url, { create: false });
    try {
      const runId = await newRun(ledger);
      const name = "it's a \\ path; DROP TABLE runs; -- ? $1 é.csv";
      const sha256 = 'b'.repeat(64);
      expect(await ledger.claim({ ...claimOf(runId), name, sha256 })).toBe(true);
      const reason = "line 2, field 'gross_amount': \\N; ? é";
      expect(await ledger.finalizeClaim({ name, sha256, runId }, { state: 'rejected', event: 'rejected', reason }, { note: "o'k" })).toBe(
        true,
      );
      const [row] = await ledger.knowsContent(sha256);
      expect([row!.name, row!.state, row!.reason, row!.runId, row!.size]).toEqual([name, 'rejected', reason, runId, 10]);
      const events = (await ledger.eventsOfRun(runId)).filter((e) => e.name === name).map((e) => [e.event, e.details]);
      expect(events).toEqual([
        ['claimed', expect.anything()],
        ['rejected', { note: "o'k" }],
      ]);
    } finally {
      await ledger.close();
    }
  });

  it('rolls back a transaction whose first statement fails, and the next one begins afresh', async () => {
    const first = await openPgLedger(database.url, { create: false });
    const second = await openPgLedger(database.url, { create: false });
    try {
      const run1 = await newRun(first);
      const run2 = await newRun(second);
      const sha256 = 'f'.repeat(64);
      // c2.csv failed; then c1.csv, the same bytes, is claimed (a failed row holds nothing)
      expect(await second.claim({ ...claimOf(run2), name: 'c2.csv', sha256 })).toBe(true);
      expect(await second.finalizeClaim({ name: 'c2.csv', sha256, runId: run2 }, { state: 'failed', event: 'failed' }, {})).toBe(true);
      expect(await first.claim({ ...claimOf(run1), name: 'c1.csv', sha256 })).toBe(true);
      // c2.csv's load found committed: its update to loaded fails on the live content's unique index, in the batch that began the transaction
      const eventsBefore = (await second.eventsOfRun(run2)).length;
      expect(await second.finalizeCommittedLoad({ name: 'c2.csv', sha256, runId: run2, arrival: '10:1' }, { rows: 1 }, {})).toBe(false);
      expect((await second.knowsContent(sha256)).map((r) => [r.name, r.state])).toEqual([
        ['c2.csv', 'failed'],
        ['c1.csv', 'claimed'],
      ]);
      expect((await second.eventsOfRun(run2)).length).toBe(eventsBefore);
      expect(await second.moveIntents()).toEqual([]);
      // the connection is out of that transaction: the next claim commits, its event with it
      expect(await second.claim({ ...claimOf(run2), name: 'd.csv', sha256: 'd'.repeat(64) })).toBe(true);
      expect((await first.knowsContent('d'.repeat(64))).map((r) => [r.state, r.runId])).toEqual([['claimed', run2]]);
      expect((await first.eventsOfRun(run2)).map((e) => [e.event, e.name]).slice(eventsBefore)).toEqual([['claimed', 'd.csv']]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
