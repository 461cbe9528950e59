// A year's uploads for the transfer log audit: a CSV transfer log of N uploads into one intake and
// a SQLite ledger in which each was claimed and loaded (one run per 1,000 uploads), every 50th left
// not ready instead and still in the intake. The shapes of bench/transferLogScale.bench.test.ts.
// `outcome: 'ignored'` records each upload ignored instead (the pattern did not take it): a ledger
// of no loaded file, whose audit is the transfer log's alone (test/integration/boundedMemory.test.ts).
// Usage: node bench/scaling/transferLogFixture.mjs DIR UPLOADS   (after `npm run build`)
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import Database from 'better-sqlite3';
import { openLedger } from '../../dist/ledger/openLedger.js';

const START = Date.parse('2026-01-01T00:00:00Z');
export const name = (i) => `settle_2026_${String(i).padStart(7, '0')}.csv`;
const sha = (i) => i.toString(16).padStart(64, '0');
export const sizeOf = (i) => 1000 + (i % 997);
/** an upload every 30 s (a year is about a million of them); its run starts 10 s after the last upload of its thousand */
export const uploadAt = (i) => START + i * 30_000;
const runOf = (i) => Math.floor(i / 1000);
const runStart = (run, uploads) => uploadAt(Math.min(run * 1000 + 999, uploads - 1)) + 10_000;
export const notReady = (i) => i % 50 === 49;

export async function writeLog(path, uploads, intake = '/in') {
  const out = createWriteStream(path);
  out.write('time,path,size\n');
  for (let i = 0; i < uploads; i++) {
    if (!out.write(`${new Date(uploadAt(i)).toISOString()},${intake}/${name(i)},${sizeOf(i)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

export async function writeLedger(path, uploads, { outcome = 'loaded' } = {}) {
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
      run.run(`r-${r}`, new Date(runStart(r, uploads)).toISOString(), new Date(runStart(r, uploads) + 5000).toISOString());
    }
    for (let i = 0; i < uploads; i++) {
      const runId = `r-${runOf(i)}`;
      const at = new Date(runStart(runOf(i), uploads) + 1 + (i % 1000)).toISOString();
      if (outcome === 'ignored') {
        event.run(runId, at, 'ignored', name(i), null, JSON.stringify({ reason: 'the pattern does not take this name', size: sizeOf(i) }));
        continue;
      }
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, count] = process.argv.slice(2);
  const uploads = Number(count);
  await mkdir(dir, { recursive: true });
  await writeLog(join(dir, 'uploads.csv'), uploads);
  await writeLedger(join(dir, 'ledger.sqlite'), uploads);
  console.log(`${dir}: ${uploads} uploads`);
}
