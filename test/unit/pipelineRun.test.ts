import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { currentOwner } from '../../src/owner.js';
import { ChangingFiles } from '../../src/pipeline/completenessGate.js';
import { RunEndedError, runIngest, type IngestOptions, type IngestResult } from '../../src/pipeline/runIngest.js';
import { MemoryIntake } from '../support/memoryIntake.js';
import { NO_KEYS_DECODE, sha256Hex } from '../support/settlementFiles.js';

const CSV = 'transaction_id,settlement_date,amount,currency\nT1,2026-06-01,10.00,EUR\n';

/**
 * No finance database: every outcome these tests reach (ignored, not ready, gone, changed,
 * skipped as a duplicate, held, rejected for its wrapping, a move finished) is decided by the
 * ledger alone. Anything but the layout's name throws, so a path that would touch the database
 * fails the test instead of passing against a stand-in.
 */
const NO_FINANCE = new Proxy({ layout: DEFAULT_LAYOUT } as object, {
  get(target, key) {
    if (key === 'layout' || key === 'then') return (target as Record<string | symbol, unknown>)[key];
    throw new Error(`the finance database was asked for ${String(key)}`);
  },
}) as FinanceDb;

let dir: string;
let ledger: Ledger;
let intake: MemoryIntake;
let runs = 0;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'settle-pipeline-'));
  await mkdir(join(dir, 'staging'));
  ledger = openSqliteLedger(join(dir, 'ledger.sqlite'), { create: true });
  intake = new MemoryIntake();
});
afterEach(async () => {
  await ledger.close();
  await rm(dir, { recursive: true, force: true });
});

async function newRun(): Promise<string> {
  return ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: process.pid }, () => `run${++runs}`);
}

async function run(extra: Partial<IngestOptions> = {}): Promise<IngestResult> {
  return runIngest({
    runId: await newRun(),
    intake,
    ledger,
    finance: NO_FINANCE,
    pattern: /^settle_\w+\.csv(\.gz)?$/,
    ignore: [/^README$/],
    maxWaitingRuns: 3,
    stableForSeconds: 0,
    maxWaitSeconds: 10,
    claimLeaseSeconds: 3600,
    mode: 'manual',
    stagingRoot: join(dir, 'staging'),
    logger: pino({ level: 'silent' }),
    decode: NO_KEYS_DECODE,
    exitStatusFor: (found) => (found.counts.failed > 0 || found.counts.moveFailed > 0 ? 1 : 0),
    ...extra,
  });
}

/** A content loaded by an earlier run and moved to the archive: what the ledger then holds. */
async function loadedEarlier(name: string, bytes: string, opts: { moved: boolean; arrival?: string } = { moved: true }) {
  const runId = await newRun();
  const file = { name, sha256: sha256Hex(bytes), size: bytes.length, runId, arrival: opts.arrival ?? '1:1' };
  expect(await ledger.claim({ ...file, owner: currentOwner(), leaseSeconds: 60 })).toBe(true);
  expect(await ledger.finalizeClaim(file, { state: 'loaded', event: 'loaded', rows: 1 }, { rows: 1 }, { moveTo: 'archive' })).toBe(true);
  if (opts.moved) expect(await ledger.markMoved(file, `archive/${name}`)).toBe(true);
  return file;
}

describe('a run over the intake (the pipeline, with the SQLite ledger)', () => {
  it('leaves every name the pattern does not take in the intake, counted, and known neighbours uncounted', async () => {
    intake.put('README', 'about this folder');
    intake.put('report.pdf', 'x');
    intake.put('settle_a01.csv.part', CSV);
    intake.put('settle_a02.csv', CSV, { notRegular: 'a symbolic link, not a regular file' });
    intake.put('.hidden', 'x');
    const result = await run();
    expect(result.counts).toMatchObject({ ignored: 3, notReady: 1, loaded: 0, skipped: 0 });
    expect(result.exitStatus).toBe(0);
    expect(intake.where().intake).toHaveLength(5);
    expect((await ledger.filesInState('loaded')).length).toBe(0);
    // the next run counts them again; the ledger does not record them twice
    expect((await run()).counts).toMatchObject({ ignored: 3, notReady: 1 });
  });

  it('skips a resend of loaded bytes under another name into duplicates, without the finance database', async () => {
    await loadedEarlier('settle_a01.csv', CSV);
    intake.put('settle_a02.csv', CSV);
    const result = await run();
    expect(result.counts).toMatchObject({ skipped: 1, loaded: 0 });
    expect(intake.where()).toMatchObject({ intake: [], duplicates: ['settle_a02.csv'] });
    expect(await ledger.file('settle_a02.csv', sha256Hex(CSV))).toMatchObject({
      state: 'duplicate',
      location: 'duplicates/settle_a02.csv',
    });
  });

  it('holds a twin of content another live run has claimed, and leaves it in the intake', async () => {
    const other = await newRun();
    const leaseSeconds = 3600;
    const claimed = { name: 'settle_a01.csv', sha256: sha256Hex(CSV), size: CSV.length, runId: other, arrival: '1:1' };
    expect(await ledger.claim({ ...claimed, owner: currentOwner(), leaseSeconds })).toBe(true);
    intake.put('settle_a02.csv', CSV);
    const result = await run();
    expect(result.counts).toMatchObject({ held: 1, skipped: 0 });
    expect(intake.where().intake).toEqual(['settle_a02.csv']);
    expect(await ledger.liveHolder(sha256Hex(CSV))).toMatchObject({ name: 'settle_a01.csv', state: 'claimed', runId: other });
  });

  it('rejects a delivery whose wrapping is broken: claimed, rejected with the reason, moved to rejected', async () => {
    const broken = Buffer.concat([gzipSync(CSV).subarray(0, 10), Buffer.from('not gzip at all, not at all')]);
    intake.put('settle_a01.csv.gz', broken);
    const result = await run();
    expect(result.counts).toMatchObject({ rejected: 1 });
    expect(intake.where()).toMatchObject({ intake: [], rejected: ['settle_a01.csv.gz'] });
    const row = await ledger.file('settle_a01.csv.gz', sha256Hex(broken));
    expect(row).toMatchObject({ state: 'rejected', location: 'rejected/settle_a01.csv.gz' });
    expect(row?.reason).toMatch(/gzip/);
    // the next run has nothing left to do
    expect((await run()).counts).toMatchObject({ rejected: 0, loaded: 0 });
  });

  it('leaves a file that changed while it was read for the next run, claiming nothing', async () => {
    intake.put('settle_a01.csv', CSV);
    intake.events.onPin = (name, folder) => folder.put(name, CSV + 'T2,2026-06-01,11.00,EUR\n');
    const result = await run();
    expect(result.counts).toMatchObject({ notReady: 1 });
    expect(intake.where().intake).toEqual(['settle_a01.csv']);
    expect(await ledger.liveHolder(sha256Hex(CSV))).toBeUndefined();
    expect(await readdir(join(dir, 'staging'))).toEqual([]);
  });

  it('says a file listed and then gone before its read (nobody moved it) failed, and goes on with the rest', async () => {
    await loadedEarlier('settle_a00.csv', CSV);
    intake.put('settle_a01.csv', CSV);
    intake.put('settle_a02.csv', CSV);
    intake.put('settle_a03.csv', CSV);
    // settle_a02 goes while settle_a01 is read: listed, never opened, and no run moved it
    intake.events.onPin = (name, folder) => name === 'settle_a01.csv' && folder.files.delete('settle_a02.csv');
    const result = await run();
    expect(result.counts).toMatchObject({ failed: 1, skipped: 2 });
    expect(result.exitStatus).toBe(1);
    expect(intake.where()).toMatchObject({ intake: [], duplicates: ['settle_a01.csv', 'settle_a03.csv'] });
  });

  it("finishes the move of an upload an earlier run decided and never moved, to that outcome's folder", async () => {
    const entry = intake.put('settle_a01.csv', CSV);
    await loadedEarlier('settle_a01.csv', CSV, { moved: false, arrival: `${CSV.length}:${entry.mtimeMs}` });
    const result = await run();
    expect(result.counts).toMatchObject({ loaded: 0, skipped: 0 });
    expect(intake.where()).toMatchObject({ intake: [], archive: ['settle_a01.csv'] });
    expect(await ledger.file('settle_a01.csv', sha256Hex(CSV))).toMatchObject({ state: 'loaded', location: 'archive/settle_a01.csv' });
  });

  it('moves the staged copy when the name was re-uploaded before the move, and leaves the new upload in the intake', async () => {
    await loadedEarlier('settle_a01.csv', CSV);
    intake.put('settle_a02.csv', CSV);
    const reupload = `${CSV}T9,2026-06-09,99.00,EUR\n`;
    intake.events.onRoute = (name, _to, folder) => {
      intake.events.onRoute = undefined;
      folder.put(name, reupload);
    };
    const result = await run({ maxWaitSeconds: 0 });
    expect(result.counts).toMatchObject({ skipped: 1, moveFailed: 1 });
    expect(result.exitStatus).toBe(1);
    expect(intake.where()).toMatchObject({ intake: ['settle_a02.csv'], duplicates: ['settle_a02.csv'] });
    expect(intake.folders.duplicates.get('settle_a02.csv')?.toString()).toBe(CSV);
    expect(intake.files.get('settle_a02.csv')?.bytes.toString()).toBe(reupload);
  });

  it('ends with the run recorded when the intake cannot be listed', async () => {
    intake.unreachable = 'connection refused';
    const ended = await run().catch((err: unknown) => err);
    expect(ended).toBeInstanceOf(RunEndedError);
    expect((ended as RunEndedError).message).toMatch(/cannot list the intake memory:\/\/intake: connection refused/);
    expect((ended as RunEndedError).result.exitStatus).toBe(1);
    const recorded = await ledger.run((ended as RunEndedError).result.runId);
    expect(recorded).toMatchObject({ exitStatus: 1 });
  });

  it('takes nothing once a stop was asked for, and says so', async () => {
    intake.put('settle_a01.csv', CSV);
    const stop = new AbortController();
    stop.abort('SIGTERM');
    const result = await run({ stop: stop.signal });
    expect(result.abortedBy).toMatch(/asked to stop \(SIGTERM\)/);
    expect(intake.where().intake).toEqual(['settle_a01.csv']);
  });

  it('takes a file quiet for --stable-for at once, and leaves one still changing at the deadline', async () => {
    await loadedEarlier('settle_a00.csv', CSV);
    intake.put('settle_a01.csv', CSV); // its mtime is long past: quiet for longer than asked
    intake.put('settle_a02.csv', CSV, { mtimeMs: Date.now() + 3600_000 }); // just written, by a clock ahead of ours
    const result = await run({ stableForSeconds: 60, maxWaitSeconds: 0 });
    expect(result.counts).toMatchObject({ skipped: 1, notReady: 1 });
    expect(intake.where()).toMatchObject({ intake: ['settle_a02.csv'], duplicates: ['settle_a01.csv'] });
  });

  /** A file whose upload never pauses: every look at it finds it grown; `looks` counts them. */
  const stillUploading = (name: string) => {
    let looks = 0;
    const stat = intake.stat.bind(intake);
    intake.stat = async (asked) => {
      if (asked === name) {
        looks++;
        intake.put(name, `${CSV}T${looks},2026-06-01,1.00,EUR\n`, { mtimeMs: Date.now() });
      }
      return stat(asked);
    };
    intake.put(name, CSV, { mtimeMs: Date.now() });
    return { looks: () => looks };
  };

  it('a slow upload holds back only its own file: the quiet one is taken while the gate still watches the upload', async () => {
    await loadedEarlier('settle_a00.csv', CSV);
    intake.put('settle_a01.csv', CSV, { mtimeMs: Date.now() - 3600_000 });
    const upload = stillUploading('settle_a02.csv');
    let looksWhenMoved = -1;
    intake.events.onRoute = (name) => {
      if (name === 'settle_a01.csv') looksWhenMoved = upload.looks();
    };
    const result = await run({ stableForSeconds: 0.3, maxWaitSeconds: 1 });
    expect(result.counts).toMatchObject({ skipped: 1, notReady: 1 });
    expect(intake.where()).toMatchObject({ intake: ['settle_a02.csv'], duplicates: ['settle_a01.csv'] });
    // the quiet file moved before the gate gave up on the upload, which it went on watching after
    expect(looksWhenMoved).toBeGreaterThanOrEqual(0);
    expect(upload.looks()).toBeGreaterThan(looksWhenMoved);
  });

  it('under watch, a file still being written is left unrecorded for a later cycle, until it has changed for --max-wait since first seen', async () => {
    stillUploading('settle_a02.csv');
    const changingFiles = new ChangingFiles();
    // --max-wait an hour: a cycle waits one --stable-for window for it, records nothing, and ends
    const first = await run({ stableForSeconds: 0.3, maxWaitSeconds: 3600, changingFiles });
    expect(first.counts).toMatchObject({ notReady: 0 });
    expect(await ledger.eventsFor('settle_a02.csv')).toEqual([]);
    expect(intake.where().intake).toEqual(['settle_a02.csv']);
    // seen changing for longer than --max-wait: recorded not ready, as a run of cron records it
    const watched = new ChangingFiles();
    watched.firstSeen('settle_a02.csv', Date.now() - 7200_000);
    const later = await run({ stableForSeconds: 0.3, maxWaitSeconds: 3600, changingFiles: watched });
    expect(later.counts).toMatchObject({ notReady: 1 });
    expect((await ledger.eventsFor('settle_a02.csv')).map((e) => e.event)).toEqual(['not_ready']);
  });

  it('a file held for a twin a live run is loading is in hand, never waiting too long, however many runs find it held', async () => {
    const other = await newRun();
    const claimed = { name: 'settle_a01.csv', sha256: sha256Hex(CSV), size: CSV.length, runId: other, arrival: '1:1' };
    expect(await ledger.claim({ ...claimed, owner: currentOwner(), leaseSeconds: 3600 })).toBe(true);
    intake.put('settle_a02.csv', CSV);
    for (let night = 0; night < 4; night++) {
      const result = await run({ maxWaitingRuns: 2 });
      expect(result.counts).toMatchObject({ held: 1 });
      expect(result.waitingTooLong).toEqual([]);
    }
  });

  it("removes a dead run's staging folder on this host, and leaves a live run's alone", async () => {
    const staging = join(dir, 'staging');
    const dead = join(staging, 'settle-r-20260601-0100-dead-x');
    const live = join(staging, 'settle-r-20260601-0100-11fe-x');
    for (const folder of [dead, live]) await mkdir(folder);
    const owner = currentOwner();
    await writeFile(join(dead, 'owner.json'), JSON.stringify({ host: hostname(), pid: 2 ** 22 + 1, startedAt: owner.startedAt }));
    await writeFile(join(live, 'owner.json'), JSON.stringify(owner));
    await run();
    expect(await readdir(staging)).toEqual(['settle-r-20260601-0100-11fe-x']);
  });

  it('waits for a ready marker, then moves it with its file', async () => {
    await loadedEarlier('settle_a01.csv', CSV);
    intake.put('settle_a02.csv', CSV);
    const first = await run({ readyMarker: '.ok' });
    expect(first.counts).toMatchObject({ notReady: 1, skipped: 0 });
    intake.put('settle_a02.csv.ok', '');
    const second = await run({ readyMarker: '.ok' });
    expect(second.counts).toMatchObject({ skipped: 1 });
    expect(intake.where()).toMatchObject({ intake: [], duplicates: ['settle_a02.csv', 'settle_a02.csv.ok'] });
  });
});
