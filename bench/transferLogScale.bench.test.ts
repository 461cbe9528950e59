import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../src/ledger/openLedger.js';
import { accountArrivals } from '../src/report/arrivalAudit/accountArrivals.js';
import { arrivalsOf } from '../src/report/arrivalAudit/arrivals.js';
import { readTransferLogs } from '../src/transferLog/logFiles.js';
import { logZone } from '../src/transferLog/logTimes.js';
import { globToRegExp } from '../src/intake/names.js';

/**
 * How the transfer log audit grows with the uploads: a generated CSV transfer log of N uploads
 * into one intake and a SQLite ledger in which each was claimed and loaded (one run per 1,000),
 * every 50th left not ready instead and still in the intake. Each step is timed on its own:
 * reading the log, following the arrivals, matching them to the ledger. Not part of `npm test`:
 * `npx vitest run --config vitest.bench.config.ts bench/transferLogScale.bench.test.ts`
 * (BENCH_TRANSFER_UPLOADS=10000,100000 for fewer sizes).
 */

const SIZES = (process.env.BENCH_TRANSFER_UPLOADS ?? '10000,100000,1000000').split(',').map(Number);
const START = Date.parse('2026-11-01T00:00:00Z');
const name = (i: number) => `settle_20261101_${String(i).padStart(7, '0')}.csv`;
const sha = (i: number) => i.toString(16).padStart(64, '0');
const sizeOf = (i: number) => 1000 + (i % 997);
/** an upload every 50 ms; its run starts 10 s after the last upload of its thousand */
const uploadAt = (i: number) => START + i * 50;
const runOf = (i: number) => Math.floor(i / 1000);
const runStart = (run: number) => uploadAt(run * 1000 + 999) + 10_000;
const notReady = (i: number) => i % 50 === 49;

async function writeLog(path: string, uploads: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('time,path,size\n');
  for (let i = 0; i < uploads; i++) {
    if (!out.write(`${new Date(uploadAt(i)).toISOString()},/in/${name(i)},${sizeOf(i)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function writeLedger(path: string, uploads: number): Promise<void> {
  (await openLedger(path, { create: true, timeoutMs: 5000 })).close();
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const run = db.prepare(
    `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, partner) VALUES (?, 'scheduled', 'bench', 1, ?, ?, 'finished', 'default')`,
  );
  const file = db.prepare(
    `INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, location, first_seen_at, updated_at, content_sha256, partner)
     VALUES (?, ?, 'loaded', ?, ?, ?, ?, ?, ?, ?, 'default')`,
  );
  const event = db.prepare(
    `INSERT INTO ledger_events (run_id, at, event, name, sha256, details, partner) VALUES (?, ?, ?, ?, ?, ?, 'default')`,
  );
  db.transaction(() => {
    for (let r = 0; r <= runOf(uploads - 1); r++) {
      run.run(`r-${r}`, new Date(runStart(r)).toISOString(), new Date(runStart(r) + 5000).toISOString());
    }
    for (let i = 0; i < uploads; i++) {
      const runId = `r-${runOf(i)}`;
      const at = new Date(runStart(runOf(i)) + 1 + (i % 1000)).toISOString();
      if (notReady(i)) {
        const details = JSON.stringify({ reason: 'waiting for its ready marker', size: sizeOf(i), arrival: `${sizeOf(i)}:${uploadAt(i)}` });
        event.run(runId, at, 'not_ready', name(i), null, details);
        continue;
      }
      file.run(name(i), sha(i), runId, sizeOf(i), `${sizeOf(i)}:${uploadAt(i)}`, `/archive/${name(i)}`, at, at, sha(i));
      event.run(runId, at, 'claimed', name(i), sha(i), '{}');
      event.run(runId, at, 'loaded', name(i), sha(i), '{}');
    }
  })();
  db.close();
}

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
        const matched = await timed(() =>
          accountArrivals(ledger, followed.value.arrivals, { clockSlackMs: 2000, intakeNow: async () => ({ entries: waiting }) }).then(
            (r) => r.arrivals,
          ),
        );
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
