import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../src/ledger/openLedger.js';
import { accountArrivals, type AccountedArrival } from '../src/report/arrivalAudit/accountArrivals.js';
import { arrivalsOf } from '../src/report/arrivalAudit/arrivals.js';
import { readTransferLogs } from '../src/transferLog/logFiles.js';
import { logZone } from '../src/transferLog/logTimes.js';
import { globToRegExp } from '../src/intake/names.js';
import { name, notReady, sizeOf, uploadAt, writeLedger, writeLog } from './scaling/transferLogFixture.mjs';

/**
 * How the transfer log audit grows with the uploads: a generated CSV transfer log of N uploads
 * into one intake and a SQLite ledger in which each was claimed and loaded (one run per 1,000),
 * every 50th left not ready instead and still in the intake (bench/scaling/transferLogFixture.mjs;
 * the whole audit in a heap-limited process is bench/scaling/auditRun.mjs, docs/SCALING.md). Each step is timed on its own:
 * reading the log, following the arrivals, matching them to the ledger. Not part of `npm test`:
 * `npx vitest run --config vitest.bench.config.ts bench/transferLogScale.bench.test.ts`
 * (BENCH_TRANSFER_UPLOADS=10000,100000 for fewer sizes).
 */

const SIZES = (process.env.BENCH_TRANSFER_UPLOADS ?? '10000,100000,1000000').split(',').map(Number);
// the log and the ledger of bench/scaling/transferLogFixture.mjs (an upload every 30 s, a run per 1,000)
const timed = async <T>(fn: () => Promise<T> | T): Promise<{ value: T; ms: number }> => {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
};

describe('the transfer log audit as the uploads grow', () => {
  it.each(SIZES)('%i uploads', async (uploads) => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-bench-translog-'));
    try {
      const log = join(dir, 'uploads.csv');
      const ledgerPath = join(dir, 'ledger.sqlite');
      await writeLog(log, uploads);
      await writeLedger(ledgerPath, uploads);
      const ledger = await openLedger(ledgerPath, { create: false, readOnly: true, timeoutMs: 5000 });
      try {
        const read = await timed(() => readTransferLogs([log], logZone('UTC').zone));
        const intake = {
          partner: 'default',
          folder: '/in',
          root: '/',
          user: null,
          pattern: globToRegExp('settle_*.csv'),
          ignore: [],
          readyMarker: undefined,
        };
        const followed = await timed(() => arrivalsOf(read.value.events, [intake]));
        // the not-ready ones are still in the intake as their run left them
        const waiting = new Map<string, { size: number; mtimeMs: number }>();
        for (let i = 0; i < uploads; i++) if (notReady(i)) waiting.set(name(i), { size: sizeOf(i), mtimeMs: uploadAt(i) });
        const matched = await timed(async () => {
          const accounted: AccountedArrival[] = [];
          await accountArrivals(
            ledger,
            followed.value.arrivals,
            { clockSlackMs: 2000, intakeNow: async () => ({ entries: waiting }) },
            (a) => accounted.push(a),
          );
          return accounted;
        });
        expect(matched.value).toHaveLength(uploads);
        expect(matched.value.filter((a) => a.unmatched)).toEqual([]);
        expect(matched.value.filter((a) => a.outcome === 'loaded')).toHaveLength(uploads - Math.floor(uploads / 50));
        const heap = process.memoryUsage().heapUsed / 2 ** 20;
        console.log(
          `${uploads} uploads: read the log ${(read.ms / 1000).toFixed(2)} s, follow the arrivals ${(followed.ms / 1000).toFixed(2)} s, match to the ledger ${(matched.ms / 1000).toFixed(2)} s; heap ${heap.toFixed(0)} MiB`,
        );
      } finally {
        await ledger.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
