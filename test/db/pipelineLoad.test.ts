import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FinanceDb } from '../../src/finance/financeDb.js';
import { TransientError } from '../../src/errors.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { NO_COUNTS } from '../../src/ledger/types.js';
import { currentOwner } from '../../src/owner.js';
import { ADOPT_PROBLEMS, runAdopt, type AdoptOptions } from '../../src/pipeline/adopt.js';
import { runReprocess, type ReprocessOptions } from '../../src/pipeline/reprocess.js';
import { runIngest, type IngestOptions, type IngestResult } from '../../src/pipeline/runIngest.js';
import { closeFinanceFixture, FINANCE_SCHEMA as SCHEMA, openFinanceFixture, type FinanceFixture } from '../support/dbDatabase.js';
import { MemoryIntake } from '../support/memoryIntake.js';
import { NO_KEYS_DECODE, defaultSettlement, sha256Hex } from '../support/settlementFiles.js';

type SqliteLedger = ReturnType<typeof openSqliteLedger>;

const silent = pino({ level: 'silent' });

let database: FinanceFixture['database'];
let dir: string;
let finance: FinanceDb;
let reader: pg.Client;
let ledgers = 0;
let runs = 0;

/** the rows of the settlement table, by transaction id, with the run whose load carries them */
const tableRows = async () =>
  (
    await reader.query(
      `SELECT r.transaction_id AS id, r.gross_amount::text AS amount, l.run_id AS run
         FROM ${SCHEMA}.settlement_rows r JOIN ${SCHEMA}.loads l USING (load_id) ORDER BY r.transaction_id`,
    )
  ).rows as { id: string; amount: string; run: string }[];

beforeAll(async () => {
  ({ database, dir, finance, reader } = await openFinanceFixture('pipeline'));
  await mkdir(join(dir, 'staging'));
});
afterAll(() => closeFinanceFixture({ database, dir, finance, reader }));

/** A fresh SQLite ledger (a ledger that knows nothing the finance database may hold). */
function newLedger(): SqliteLedger {
  return openSqliteLedger(join(dir, `ledger${++ledgers}.sqlite`), { create: true });
}

async function run(ledger: SqliteLedger, intake: MemoryIntake, extra: Partial<IngestOptions> = {}): Promise<IngestResult> {
  const runId = await ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: process.pid }, () => `run-db-${++runs}`);
  return runIngest({
    runId,
    intake,
    ledger,
    finance,
    pattern: /^settle_\w+\.csv(\.gz)?$/,
    ignore: [],
    maxWaitingRuns: 3,
    stableForSeconds: 0,
    maxWaitSeconds: 10,
    claimLeaseSeconds: 3600,
    mode: 'manual',
    stagingRoot: join(dir, 'staging'),
    logger: silent,
    decode: NO_KEYS_DECODE,
    exitStatusFor: (found) => (found.counts.failed > 0 || found.counts.moveFailed > 0 || found.waitingTooLong.length > 0 ? 1 : 0),
    ...extra,
  });
}

/** A finance connection of its own whose server process was terminated: every statement on it fails as connection lost. */
async function lostConnection(): Promise<FinanceDb> {
  let lost!: () => void;
  const connectionLost = new Promise<void>((resolve) => (lost = resolve));
  const others = async () =>
    new Set(
      (await reader.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)).rows.map(
        (row: { pid: number }) => row.pid,
      ),
    );
  const before = await others();
  const lossy = await FinanceDb.connect(database.url, SCHEMA, DEFAULT_LAYOUT, { timeoutSeconds: 30, onLost: () => lost() });
  const [pid] = [...(await others())].filter((p) => !before.has(p));
  await reader.query('SELECT pg_terminate_backend($1)', [pid]);
  await connectionLost;
  return lossy;
}

/** The archive folder a run filled, as the read-only folder reprocess and adopt read. */
function archiveOf(intake: MemoryIntake): MemoryIntake {
  const archive = new MemoryIntake();
  for (const [name, bytes] of intake.folders.archive) archive.put(name, bytes);
  return archive;
}

describe('a run that loads into the finance database (SQLite ledger, in-memory intake)', () => {
  let ledger: SqliteLedger;
  const intake = new MemoryIntake();
  const first = defaultSettlement(['A1', '10.00'], ['A2', '-2.50']);
  beforeAll(() => {
    ledger = newLedger();
  });
  afterAll(() => ledger.close());

  it('loads a new file: its rows in the table under the run, loaded in the ledger, moved to the archive', async () => {
    intake.put('settle_a01.csv', first);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 1, skipped: 0, rejected: 0, failed: 0 });
    expect(result.exitStatus).toBe(0);
    expect(await tableRows()).toEqual([
      { id: 'A1', amount: '10.00', run: result.runId },
      { id: 'A2', amount: '-2.50', run: result.runId },
    ]);
    expect(await ledger.file('settle_a01.csv', sha256Hex(first))).toMatchObject({
      state: 'loaded',
      rowCount: 2,
      location: 'archive/settle_a01.csv',
    });
    expect(intake.where()).toMatchObject({ intake: [], archive: ['settle_a01.csv'] });
  });

  it('skips a gzipped resend of loaded content under another name: the ledger knows the content, no rows added', async () => {
    const gzipped = gzipSync(first);
    intake.put('settle_a02.csv.gz', gzipped);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 0, skipped: 1 });
    expect(intake.where()).toMatchObject({ intake: [], duplicates: ['settle_a02.csv.gz'] });
    expect(await ledger.file('settle_a02.csv.gz', sha256Hex(gzipped))).toMatchObject({ state: 'duplicate' });
    expect((await tableRows()).length).toBe(2);
  });

  it('rejects a file with a bad amount: nothing loaded, rejected in the ledger with line and field, moved to rejected', async () => {
    const bad = defaultSettlement(['B1', '1.00'], ['B2', 'twelve']);
    intake.put('settle_b01.csv', bad);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 0, rejected: 1 });
    expect(result.exitStatus).toBe(0);
    const row = await ledger.file('settle_b01.csv', sha256Hex(bad));
    expect(row).toMatchObject({ state: 'rejected', location: 'rejected/settle_b01.csv' });
    expect(row?.reason).toMatch(/line 3/);
    expect(row?.reason).toMatch(/gross_amount/);
    expect((await tableRows()).map((r) => r.id)).not.toContain('B1');
    expect(intake.where().rejected).toEqual(['settle_b01.csv']);
  });

  it('rejects a file whose natural key another loaded file holds, and loads none of its rows', async () => {
    const overlap = defaultSettlement(['C1', '1.00'], ['A1', '3.00']);
    intake.put('settle_c01.csv', overlap);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 0, rejected: 1 });
    expect((await ledger.file('settle_c01.csv', sha256Hex(overlap)))?.reason).toMatch(/A1/);
    expect((await tableRows()).map((r) => r.id)).toEqual(['A1', 'A2']);
  });

  it('with a ledger that lost its records, skips content the finance database holds, by its file marker', async () => {
    const lost = newLedger();
    try {
      const again = new MemoryIntake();
      again.put('settle_a01.csv', first);
      const result = await run(lost, again);
      expect(result.counts).toMatchObject({ loaded: 0, skipped: 1 });
      const row = await lost.file('settle_a01.csv', sha256Hex(first));
      expect(row).toMatchObject({ state: 'duplicate', location: 'duplicates/settle_a01.csv' });
      expect(row?.reason).toMatch(/already in the finance database: loaded from settle_a01\.csv/);
      expect(again.where()).toMatchObject({ intake: [], duplicates: ['settle_a01.csv'] });
      expect((await tableRows()).length).toBe(2);
    } finally {
      await lost.close();
    }
  });

  describe('run --reprocess over the archive', () => {
    const reprocess = (names: string[], extra: Partial<ReprocessOptions> = {}) =>
      runReprocess({
        ledger,
        finance,
        archive: archiveOf(intake),
        names,
        reason: 'fixed upstream',
        operator: 'tester',
        dryRun: false,
        stagingRoot: join(dir, 'staging'),
        logger: silent,
        decode: NO_KEYS_DECODE,
        exitStatusFor: (counts) => (counts.failed + counts.rejected > 0 ? 1 : 0),
        ...extra,
      });

    it('a dry run counts the rows it would replace and changes nothing, not even the ledger', async () => {
      const before = await tableRows();
      const result = await reprocess(['settle_a01.csv'], { dryRun: true });
      expect(result.files).toEqual([
        expect.objectContaining({ name: 'settle_a01.csv', outcome: 'would-reprocess', rows: 2, previousRows: 2 }),
      ]);
      expect(result.counts).toMatchObject({ reprocessed: 1, failed: 0 });
      expect(await tableRows()).toEqual(before);
      expect(await ledger.run(result.runId)).toBeUndefined();
    });

    it('replaces the rows of a loaded file under the reprocess run and records why and by whom', async () => {
      const result = await reprocess(['settle_a01.csv']);
      expect(result.exitStatus).toBe(0);
      expect(result.files).toEqual([expect.objectContaining({ outcome: 'reprocessed', rows: 2, previousRows: 2 })]);
      expect((await tableRows()).map((r) => r.run)).toEqual([result.runId, result.runId]);
      const events = await ledger.eventsOfRun(result.runId);
      expect(events.map((e) => e.event)).toContain('reprocessed');
      expect(await ledger.run(result.runId)).toMatchObject({ exitStatus: 0 });
    });

    it('fails a name the ledger never loaded, and an archived file whose bytes changed, leaving the rows alone', async () => {
      const before = await tableRows();
      const archive = archiveOf(intake);
      archive.put('settle_a01.csv', defaultSettlement(['A1', '99.00'], ['A2', '-2.50']));
      const result = await reprocess(['settle_never.csv', 'settle_a01.csv'], { archive });
      expect(result.exitStatus).toBe(1);
      expect(result.counts).toMatchObject({ reprocessed: 0, failed: 2 });
      expect(result.files.map((f) => [f.name, f.outcome, f.error])).toEqual([
        ['settle_never.csv', 'failed', expect.stringMatching(/no load of it/)],
        ['settle_a01.csv', 'failed', expect.stringMatching(/no longer has the content that was loaded/)],
      ]);
      expect(await tableRows()).toEqual(before);
    });

    it('fails a loaded file the archive no longer has', async () => {
      const result = await reprocess(['settle_a01.csv'], { archive: new MemoryIntake() });
      expect(result.files).toEqual([expect.objectContaining({ outcome: 'failed', error: expect.stringMatching(/is not in the archive/) })]);
    });
  });
});

describe('adopt --archive into a ledger that knows nothing', () => {
  // the finance database holds D1, D2 with a file marker (loaded by a run of another ledger)
  const loadedFile = defaultSettlement(['D1', '5.00'], ['D2', '6.00']);
  const adopt = (ledger: SqliteLedger, archive: MemoryIntake, extra: Partial<AdoptOptions> = {}) =>
    runAdopt({
      ledger,
      finance,
      archive,
      pattern: /^settle_\w+\.csv(\.gz)?$/,
      dryRun: false,
      stagingRoot: join(dir, 'staging'),
      decode: NO_KEYS_DECODE,
      logger: silent,
      exitStatusFor: (files) => (files.some((f) => ADOPT_PROBLEMS.includes(f.outcome)) ? 1 : 0),
      ...extra,
    });

  beforeAll(async () => {
    const earlier = newLedger();
    const intake = new MemoryIntake();
    intake.put('settle_d01.csv', loadedFile);
    expect((await run(earlier, intake)).counts).toMatchObject({ loaded: 1 });
    await earlier.close();
  });

  it('adopts what the database shows (marker, or every key), reports the rest, and a second adopt finds them known', async () => {
    const ledger = newLedger();
    try {
      const archive = new MemoryIntake();
      archive.put('settle_d01.csv', loadedFile); // its file marker
      archive.put('settle_d02.csv', defaultSettlement(['D1', '5.00'])); // every key in the table, no marker
      archive.put('settle_d03.csv', defaultSettlement(['E1', '1.00'])); // never loaded
      archive.put('settle_d04.csv', defaultSettlement(['D2', '6.00'], ['E2', '2.00'])); // half of it
      archive.put('settle_d05.csv.gz', gzipSync(loadedFile)); // the same content as d01
      // cannot be decoded: a gzip header, then no deflate stream
      archive.put('settle_d06.csv.gz', Buffer.concat([gzipSync(loadedFile).subarray(0, 10), Buffer.from('not gzip at all, not at all')]));
      archive.put('settle_d08.csv', 'no,header,of,this,layout\n1,2,3,4,5\n'); // cannot be read with the layout
      archive.put('notes.txt', 'not a settlement'); // not the pattern
      archive.put('settle_d07.csv.part', loadedFile); // an upload in progress

      const dry = await adopt(ledger, archive, { dryRun: true });
      expect(dry.files.find((f) => f.name === 'settle_d01.csv')).toMatchObject({ outcome: 'would-adopt', evidence: 'file-marker' });
      expect(await ledger.loadedNamed('settle_d01.csv')).toEqual([]);
      expect(await ledger.run(dry.runId)).toBeUndefined();

      const result = await adopt(ledger, archive);
      expect(result.exitStatus).toBe(1);
      expect(Object.fromEntries(result.files.map((f) => [f.name, [f.outcome, f.evidence]]))).toEqual({
        'settle_d01.csv': ['adopted', 'file-marker'],
        'settle_d02.csv': ['adopted', 'natural-keys'],
        'settle_d03.csv': ['not-loaded', undefined],
        'settle_d04.csv': ['partly-loaded', undefined],
        'settle_d05.csv.gz': ['content-duplicate', undefined],
        'settle_d06.csv.gz': ['undecodable', undefined],
        'settle_d08.csv': ['unreadable', undefined],
      });
      expect(result.files.find((f) => f.name === 'settle_d04.csv')).toMatchObject({ rows: 2, presentRows: 1 });
      expect(result.files.find((f) => f.name === 'settle_d05.csv.gz')).toMatchObject({ sameAs: 'settle_d01.csv' });
      expect(await ledger.file('settle_d01.csv', sha256Hex(loadedFile))).toMatchObject({
        state: 'loaded',
        rowCount: 2,
        location: 'memory://intake/settle_d01.csv',
      });
      expect(await ledger.loadedNamed('settle_d03.csv')).toEqual([]);
      expect(await ledger.run(result.runId)).toMatchObject({ exitStatus: 1 });

      const again = await adopt(ledger, archive);
      expect(again.files.filter((f) => f.outcome === 'known').map((f) => f.name)).toEqual(['settle_d01.csv', 'settle_d02.csv']);
    } finally {
      await ledger.close();
    }
  });

  it('ends an adopt whose finance connection is lost as transient, with its run closed, adopting nothing', async () => {
    const ledger = newLedger();
    const lossy = await lostConnection();
    try {
      const archive = new MemoryIntake();
      archive.put('settle_d01.csv', loadedFile);
      const ended = await adopt(ledger, archive, { finance: lossy }).catch((err: unknown) => err);
      expect(ended).toBeInstanceOf(TransientError);
      expect((ended as Error).message).toMatch(/finance database connection lost/);
      expect(await ledger.loadedNamed('settle_d01.csv')).toEqual([]);
      const [recorded] = await ledger.recentRuns(1);
      expect(recorded).toMatchObject({ exitStatus: 1 });
      expect(recorded?.endedAt).not.toBeNull();
    } finally {
      await lossy.close().catch(() => undefined);
      await ledger.close();
    }
  });

  it("adopts a file the database does not show on the operator's word, never a partly loaded one", async () => {
    const ledger = newLedger();
    try {
      const archive = new MemoryIntake();
      const unseen = defaultSettlement(['F1', '1.00']);
      archive.put('settle_f01.csv', unseen);
      archive.put('settle_f02.csv', defaultSettlement(['D1', '5.00'], ['F2', '2.00']));
      const result = await adopt(ledger, archive, { assumeLoaded: { reason: 'loaded by hand in May', operator: 'tester' } });
      expect(result.files.map((f) => [f.name, f.outcome, f.evidence])).toEqual([
        ['settle_f01.csv', 'adopted', 'operator'],
        ['settle_f02.csv', 'partly-loaded', undefined],
      ]);
      expect(await ledger.file('settle_f01.csv', sha256Hex(unseen))).toMatchObject({ state: 'loaded' });
      // a run then skips a resend of it as a duplicate, and loads nothing
      const intake = new MemoryIntake();
      intake.put('settle_f03.csv', unseen);
      expect((await run(ledger, intake)).counts).toMatchObject({ loaded: 0, skipped: 1 });
      expect((await tableRows()).map((r) => r.id)).not.toContain('F1');
    } finally {
      await ledger.close();
    }
  });
});

describe('what a run settles and waits for', () => {
  let ledger: SqliteLedger;
  beforeAll(() => {
    ledger = newLedger();
  });
  afterAll(() => ledger.close());

  /** a claim by an ended run whose lease ran out: stale */
  const staleClaim = async (name: string, bytes: string, arrival = '1:1') => {
    const runId = await ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: process.pid }, () => `run-db-${++runs}`);
    const file = { name, sha256: sha256Hex(bytes), size: bytes.length, runId, arrival };
    expect(await ledger.claim({ ...file, owner: currentOwner(), leaseSeconds: -60 })).toBe(true);
    return file;
  };

  it('finalizes a stale claim whose load the finance database has as loaded, and finishes its move', async () => {
    const content = defaultSettlement(['G1', '1.00']);
    const earlier = newLedger();
    const first = new MemoryIntake();
    first.put('settle_g01.csv', content);
    expect((await run(earlier, first)).counts).toMatchObject({ loaded: 1 });
    await earlier.close();
    const intake = new MemoryIntake();
    const upload = intake.put('settle_g01.csv', content);
    // the ended run had claimed this very upload (its size:mtime)
    const claimed = await staleClaim('settle_g01.csv', content, `${content.length}:${upload.mtimeMs}`);
    await run(ledger, intake);
    const row = await ledger.file('settle_g01.csv', sha256Hex(content));
    expect(row).toMatchObject({ state: 'loaded', rowCount: 1 });
    // the claiming run's load, recovered (not loaded again): one set of rows
    expect(row?.runId).toBe(claimed.runId);
    expect((await ledger.eventsFor('settle_g01.csv')).map((e) => e.event)).toContain('recovered');
    expect(intake.where()).toMatchObject({ intake: [], archive: ['settle_g01.csv'] });
    expect((await tableRows()).filter((r) => r.id === 'G1')).toHaveLength(1);
  });

  it('expires a stale claim of content never loaded, and the run then loads it', async () => {
    const content = defaultSettlement(['H1', '2.00']);
    await staleClaim('settle_h01.csv', content);
    const intake = new MemoryIntake();
    intake.put('settle_h01.csv', content);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 1 });
    expect(await ledger.file('settle_h01.csv', sha256Hex(content))).toMatchObject({ state: 'loaded', runId: result.runId });
    expect((await tableRows()).find((r) => r.id === 'H1')).toMatchObject({ run: result.runId });
  });

  it('settles at once a claim that an ended run of this very process left (its ledger gone at the finalize), not after its lease', async () => {
    const content = defaultSettlement(['OWN1', '3.00']);
    const intake = new MemoryIntake();
    intake.put('settle_own01.csv', content);
    // the ledger goes away as the load is finalized, and stays away to the end of that run
    let gone = false;
    const failing = new Proxy(ledger, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (key === 'finalizeClaim') gone = true;
          if (gone) return Promise.reject(new Error('ledger server gone'));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const ended = await run(failing, intake).catch((err: unknown) => err);
    expect(ended).toBeInstanceOf(Error);
    // its claim stays, owned by this very process, under a lease of an hour
    const left = await ledger.file('settle_own01.csv', sha256Hex(content));
    expect(left).toMatchObject({ state: 'claimed', ownerPid: process.pid });
    expect(Date.parse(left!.leaseUntil!)).toBeGreaterThan(Date.now() + 60_000);
    const next = await run(ledger, intake);
    expect(await ledger.file('settle_own01.csv', sha256Hex(content))).toMatchObject({ state: 'loaded', runId: left!.runId });
    expect((await ledger.eventsFor('settle_own01.csv')).map((e) => e.event)).toContain('recovered');
    expect(intake.where()).toMatchObject({ intake: [], archive: ['settle_own01.csv'] });
    expect((await tableRows()).filter((r) => r.id === 'OWN1')).toHaveLength(1);
    // the ended run, whose end could not be recorded, is closed by the next
    expect(await ledger.run(left!.runId)).toMatchObject({ status: 'died' });
    expect(next.counts).toMatchObject({ loaded: 0, stale: 1 });
  });

  it("closes a dead run of this host as died, and leaves another host's open run alone", async () => {
    const dead = await ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: 2 ** 22 + 1 }, () => `run-db-${++runs}`);
    const elsewhere = await ledger.startRun({ mode: 'manual', host: 'another-host.example', pid: 1 }, () => `run-db-${++runs}`);
    const result = await run(ledger, new MemoryIntake());
    expect(await ledger.run(dead)).toMatchObject({ status: 'died' });
    expect((await ledger.run(dead))?.reason).toMatch(new RegExp(`ended without closing the run; closed by run ${result.runId}`));
    expect(await ledger.run(elsewhere)).toMatchObject({ endedAt: null });
  });

  it('says a file that could not be staged failed, claims nothing, and goes on with the next', async () => {
    const broken = defaultSettlement(['V1', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_v01.csv', broken);
    intake.put('settle_v02.csv', defaultSettlement(['V2', '1.00']));
    intake.events.onPin = (name) => {
      if (name === 'settle_v01.csv') throw new Error('input/output error');
    };
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ failed: 1, loaded: 1 });
    expect(result.files.find((f) => f.name === 'settle_v01.csv')?.error).toMatch(/staging failed: input\/output error/);
    expect(await ledger.liveHolder(sha256Hex(broken))).toBeUndefined();
    expect(intake.where()).toMatchObject({ intake: ['settle_v01.csv'], archive: ['settle_v02.csv'] });
  });

  it("leaves a file the server's transfer log shows still open for writing, and goes on without a log it cannot read", async () => {
    const logFile = join(dir, 'sftp.log');
    await writeFile(
      logFile,
      [
        'Dec  1 02:00:00 host internal-sftp[7]: session opened for local user acme from [10.0.0.5]',
        'Dec  1 02:00:01 host internal-sftp[7]: open "/in/settle_w01.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
        '',
      ].join('\n'),
    );
    const intake = new MemoryIntake();
    const open = defaultSettlement(['W1', '1.00']);
    const whole = defaultSettlement(['W2', '1.00']);
    intake.put('settle_w01.csv', open);
    const held = await run(ledger, intake, { serverLog: { files: [logFile], timeZone: 'UTC', root: '/', folder: '/in' } });
    expect(held.counts).toMatchObject({ notReady: 1, loaded: 0 });
    expect(held.files.find((f) => f.name === 'settle_w01.csv')?.error).toMatch(/transfer log shows it still open/);
    expect(intake.where().intake).toEqual(['settle_w01.csv']);
    intake.files.delete('settle_w01.csv');
    intake.put('settle_w02.csv', whole);
    const unread = await run(ledger, intake, {
      serverLog: { files: [join(dir, 'no-such.log')], timeZone: 'UTC', root: '/', folder: '/in' },
    });
    expect(unread.transferLogUnread).toMatch(/cannot be read/);
    expect(unread.counts).toMatchObject({ loaded: 1 });
    expect(intake.where().archive).toEqual(['settle_w02.csv']);
  });

  it('leaves an upload paused mid-line in the intake while it waits, then rejects it as incomplete', async () => {
    const paused = defaultSettlement(['K1', '1.00']) + '2026-06-01,K2,M1,VI';
    const intake = new MemoryIntake();
    intake.put('settle_k01.csv', paused);
    for (const wait of [0, 1]) {
      const result = await run(ledger, intake, { maxWaitingRuns: 2 });
      expect(result.counts).toMatchObject({ notReady: 1, rejected: 0 });
      expect(result.files.find((f) => f.name === 'settle_k01.csv')?.error).toMatch(
        new RegExp(`stopped mid-line 3 .*unchanged for ${wait} of 2 runs`),
      );
      expect(intake.where().intake).toEqual(['settle_k01.csv']);
    }
    const last = await run(ledger, intake, { maxWaitingRuns: 2 });
    expect(last.counts).toMatchObject({ rejected: 1 });
    const row = await ledger.file('settle_k01.csv', sha256Hex(paused));
    expect(row).toMatchObject({ state: 'rejected', location: 'rejected/settle_k01.csv' });
    expect(row?.reason).toMatch(/has not changed for 2 runs .*it is incomplete/);
    expect((await tableRows()).map((r) => r.id)).not.toContain('K1');
  });

  it('names a file left waiting in more runs than --max-waiting-runs, and exits 1', async () => {
    const intake = new MemoryIntake();
    intake.put('settle_m01.csv', defaultSettlement(['M1', '1.00']));
    for (let n = 1; n <= 2; n++)
      expect((await run(ledger, intake, { maxWaitingRuns: 1, readyMarker: '.ok' })).waitingTooLong).toEqual(
        n === 1 ? [] : [expect.objectContaining({ name: 'settle_m01.csv', outcome: 'not_ready', runs: 2 })],
      );
    const result = await run(ledger, intake, { maxWaitingRuns: 1, readyMarker: '.ok' });
    expect(result.exitStatus).toBe(1);
    expect(await ledger.run(result.runId)).toMatchObject({ exitStatus: 1 });
    expect(intake.where().intake).toEqual(['settle_m01.csv']);
  });

  it('watches files still changing until the deadline, and tells one gone while watched', async () => {
    const intake = new MemoryIntake();
    const ahead = Date.now() + 3600_000; // written just now, by a clock ahead of ours: not yet quiet
    intake.put('settle_n01.csv', defaultSettlement(['N1', '1.00']), { mtimeMs: ahead });
    intake.put('settle_n02.csv', defaultSettlement(['N2', '1.00']), { mtimeMs: ahead });
    const result = await run(ledger, intake, {
      stableForSeconds: 60,
      maxWaitSeconds: 1,
      onWaiting: (waiting) => {
        if (!waiting.first) return;
        expect(waiting.files).toEqual(['settle_n01.csv', 'settle_n02.csv']);
        intake.files.delete('settle_n01.csv'); // taken by nobody while the gate watched
        intake.put('settle_n02.csv', defaultSettlement(['N2', '1.00'], ['N3', '2.00']), { mtimeMs: ahead + 1 }); // still growing
      },
    });
    expect(result.counts).toMatchObject({ failed: 1, notReady: 1, loaded: 0 });
    expect(result.files.find((f) => f.name === 'settle_n01.csv')?.error).toMatch(/listed, then gone .*no run moved it/);
    expect(result.files.find((f) => f.name === 'settle_n02.csv')?.error).toMatch(/still changing/);
    expect(intake.where().intake).toEqual(['settle_n02.csv']);
  });

  it('stops the run when the finance database connection is lost: the claim released, the files left in the intake', async () => {
    const lossy = await lostConnection();
    try {
      const intake = new MemoryIntake();
      const content = defaultSettlement(['P1', '1.00']);
      intake.put('settle_p01.csv', content);
      intake.put('settle_p02.csv', defaultSettlement(['P2', '1.00']));
      const result = await run(ledger, intake, { finance: lossy });
      expect(result.abortedBy).toMatch(/finance database connection lost/);
      expect(intake.where().intake).toEqual(['settle_p01.csv', 'settle_p02.csv']);
      expect(await ledger.liveHolder(sha256Hex(content))).toBeUndefined();
      expect(await ledger.file('settle_p01.csv', sha256Hex(content))).toMatchObject({ state: 'failed' });
      expect((await tableRows()).map((r) => r.id)).not.toContain('P1');
    } finally {
      await lossy.close().catch(() => undefined);
    }
  });
});

describe('moves that fail, vanish, or an ended run began', () => {
  let ledger: SqliteLedger;
  beforeAll(() => {
    ledger = newLedger();
  });
  afterAll(() => ledger.close());

  it('keeps a loaded file whose move failed in the intake, exit 1, and the next run finishes the move', async () => {
    const content = defaultSettlement(['Q1', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_q01.csv', content);
    intake.events.onRoute = () => {
      intake.events.onRoute = undefined;
      throw new Error('no space left on device');
    };
    const failed = await run(ledger, intake);
    expect(failed.counts).toMatchObject({ loaded: 1, moveFailed: 1 });
    expect(failed.exitStatus).toBe(1);
    expect(intake.where().intake).toEqual(['settle_q01.csv']);
    expect(await ledger.file('settle_q01.csv', sha256Hex(content))).toMatchObject({ state: 'loaded', location: null });
    const next = await run(ledger, intake);
    expect(next.counts).toMatchObject({ loaded: 0, moveFailed: 0 });
    expect(intake.where()).toMatchObject({ intake: [], archive: ['settle_q01.csv'] });
    expect(await ledger.file('settle_q01.csv', sha256Hex(content))).toMatchObject({ location: 'archive/settle_q01.csv' });
    expect((await tableRows()).filter((r) => r.id === 'Q1')).toHaveLength(1);
  });

  /** every route to `to` fails with "Permission denied" while `refused` holds (a chrooted login that cannot make duplicates/) */
  const refuseMovesTo = (intake: MemoryIntake, to: string, refused: { now: boolean }) => {
    intake.events.onRoute = (_name, destination) => {
      if (refused.now && destination === to) throw new Error(`Permission denied: /${to}`);
    };
  };
  const eventsNamed = async (name: string, run: string) =>
    (await ledger.eventsOfRun(run)).filter((e) => e.name === name).map((e) => [e.event, e.details.decidedBy ?? null]);

  it("a loaded file whose move failed is named with its failure in the run's files and its history", async () => {
    const content = defaultSettlement(['MF1', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_mf01.csv', content);
    refuseMovesTo(intake, 'archive', { now: true });
    const failed = await run(ledger, intake);
    expect(failed.counts).toMatchObject({ loaded: 1, moveFailed: 1 });
    expect(failed.files).toEqual([
      expect.objectContaining({
        name: 'settle_mf01.csv',
        outcome: 'loaded',
        moveFailed: { to: 'archive', reason: 'Permission denied: /archive' },
      }),
    ]);
    expect(await eventsNamed('settle_mf01.csv', failed.runId)).toEqual([
      ['claimed', null],
      ['loaded', null],
      ['move_failed', failed.runId],
    ]);
    // still refused: the next run loads nothing again and names the move that failed again, for the run that decided it
    const again = await run(ledger, intake);
    expect(again.counts).toMatchObject({ loaded: 0, moveFailed: 1 });
    expect(again.files).toEqual([]);
    expect(again.failedMoves).toEqual([
      { name: 'settle_mf01.csv', to: 'archive', reason: 'Permission denied: /archive', decidedBy: failed.runId },
    ]);
  });

  it('a renamed resend whose move to duplicates fails is skipped once, with the failure; later runs only finish its move', async () => {
    const content = defaultSettlement(['MF2', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_mf02_a01.csv', content);
    expect((await run(ledger, intake)).counts).toMatchObject({ loaded: 1 });
    intake.put('settle_mf02_a02.csv', content);
    const refused = { now: true };
    refuseMovesTo(intake, 'duplicates', refused);
    const first = await run(ledger, intake);
    expect(first.counts).toMatchObject({ skipped: 1, moveFailed: 1 });
    expect(first.exitStatus).toBe(1);
    expect(first.files).toEqual([
      expect.objectContaining({
        name: 'settle_mf02_a02.csv',
        outcome: 'skipped',
        duplicateOf: expect.objectContaining({ name: 'settle_mf02_a01.csv' }),
        moveFailed: { to: 'duplicates', reason: 'Permission denied: /duplicates' },
      }),
    ]);
    expect(await ledger.file('settle_mf02_a02.csv', sha256Hex(content))).toMatchObject({
      state: 'duplicate',
      location: null,
      runId: first.runId,
    });
    expect(await eventsNamed('settle_mf02_a02.csv', first.runId)).toEqual([
      ['skipped', null],
      ['move_failed', first.runId],
    ]);
    expect(intake.where().intake).toEqual(['settle_mf02_a02.csv']);

    // still refused: no second skip, the failed move named for the run that decided it
    const second = await run(ledger, intake);
    expect(second.counts).toMatchObject({ skipped: 0, moveFailed: 1 });
    expect(second.failedMoves).toEqual([expect.objectContaining({ name: 'settle_mf02_a02.csv', decidedBy: first.runId })]);

    // the folder made: the move is finished for the run that decided the skip
    refused.now = false;
    const third = await run(ledger, intake);
    expect(third.counts).toMatchObject({ skipped: 0, moveFailed: 0 });
    expect(third.finishedMoves).toEqual([expect.objectContaining({ name: 'settle_mf02_a02.csv', decidedBy: first.runId })]);
    expect(intake.where()).toMatchObject({ intake: [], duplicates: ['settle_mf02_a02.csv'] });
    expect(await ledger.file('settle_mf02_a02.csv', sha256Hex(content))).toMatchObject({ location: 'duplicates/settle_mf02_a02.csv' });
  });

  it('a same-name resend of archived bytes whose move fails is skipped once; its move, finished later, leaves the original row where it is', async () => {
    const content = defaultSettlement(['MF3', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_mf03.csv', content);
    expect((await run(ledger, intake)).counts).toMatchObject({ loaded: 1 });
    intake.put('settle_mf03.csv', content, { mtimeMs: 7_000 });
    const refused = { now: true };
    refuseMovesTo(intake, 'duplicates', refused);
    const first = await run(ledger, intake);
    expect(first.counts).toMatchObject({ skipped: 1, moveFailed: 1 });
    expect(first.files).toEqual([
      expect.objectContaining({ outcome: 'skipped', moveFailed: expect.objectContaining({ to: 'duplicates' }) }),
    ]);
    const second = await run(ledger, intake);
    expect(second.counts).toMatchObject({ skipped: 0, moveFailed: 1 });
    refused.now = false;
    const third = await run(ledger, intake);
    expect(third.counts).toMatchObject({ skipped: 0, moveFailed: 0 });
    expect(third.finishedMoves).toEqual([expect.objectContaining({ name: 'settle_mf03.csv', decidedBy: first.runId })]);
    expect(intake.where()).toMatchObject({
      intake: [],
      archive: expect.arrayContaining(['settle_mf03.csv']),
      duplicates: ['settle_mf03.csv'],
    });
    // the loaded original is still where its own move put it
    expect(await ledger.file('settle_mf03.csv', sha256Hex(content))).toMatchObject({
      state: 'loaded',
      location: 'archive/settle_mf03.csv',
    });
  });

  it('archives the staged copy of a file that vanished before its move with no run taking it, exit 1', async () => {
    const content = defaultSettlement(['R1', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_r01.csv', content);
    intake.events.onRoute = (name) => intake.files.delete(name);
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ loaded: 1, moveFailed: 1 });
    expect(result.exitStatus).toBe(1);
    expect(intake.folders.archive.get('settle_r01.csv')?.toString()).toBe(content);
    expect(await ledger.file('settle_r01.csv', sha256Hex(content))).toMatchObject({ state: 'loaded', location: 'archive/settle_r01.csv' });
  });

  it('names a file that changed where it landed after its move, once', async () => {
    const content = defaultSettlement(['S1', '1.00']);
    const intake = new MemoryIntake();
    intake.put('settle_s01.csv', content);
    expect((await run(ledger, intake)).changedAfterMove).toEqual([]);
    intake.folders.archive.set('settle_s01.csv', Buffer.from(defaultSettlement(['S1', '1.00'], ['S2', '2.00'])));
    const next = await run(ledger, intake);
    expect(next.changedAfterMove).toEqual([expect.objectContaining({ name: 'settle_s01.csv', location: 'archive/settle_s01.csv' })]);
    expect((await run(ledger, intake)).changedAfterMove).toEqual([]);
  });

  /** a content an ended run loaded and began moving (its intent recorded), never recording the move */
  const movingWhenItEnded = async (name: string, bytes: string) => {
    const runId = await ledger.startRun({ mode: 'manual', host: currentOwner().host, pid: process.pid }, () => `run-db-${++runs}`);
    const file = { name, sha256: sha256Hex(bytes), size: bytes.length, runId, arrival: `${bytes.length}:42` };
    expect(await ledger.claim({ ...file, owner: currentOwner(), leaseSeconds: 60 })).toBe(true);
    expect(await ledger.finalizeClaim(file, { state: 'loaded', event: 'loaded', rows: 1 }, { rows: 1 }, { moveTo: 'archive' })).toBe(true);
    await ledger.finishRun(runId, NO_COUNTS, 1);
    return file;
  };

  it('records the move an ended run made and never recorded, and says loudly of one found nowhere', async () => {
    const landed = defaultSettlement(['U1', '1.00']);
    const lost = defaultSettlement(['U2', '1.00']);
    await movingWhenItEnded('settle_u01.csv', landed);
    await movingWhenItEnded('settle_u02.csv', lost);
    const intake = new MemoryIntake();
    intake.folders.archive.set('settle_u01.csv', Buffer.from(landed)); // it got there; settle_u02 is nowhere
    const result = await run(ledger, intake);
    expect(result.counts).toMatchObject({ moveFailed: 1 });
    expect(result.exitStatus).toBe(1);
    expect(await ledger.file('settle_u01.csv', sha256Hex(landed))).toMatchObject({ location: 'archive/settle_u01.csv' });
    expect(await ledger.file('settle_u02.csv', sha256Hex(lost))).toMatchObject({ location: null });
    expect((await ledger.moveIntents()).map((intent) => intent.name)).not.toContain('settle_u02.csv');
    // the lost move is in the ledger, for the run that decided the load
    expect(result.failedMoves).toEqual([expect.objectContaining({ name: 'settle_u02.csv', to: 'archive' })]);
    expect((await ledger.eventsFor('settle_u02.csv')).at(-1)).toMatchObject({
      event: 'move_failed',
      details: { lost: true, outcome: 'loaded' },
    });
    // the next run has nothing left to finish
    expect((await run(ledger, intake)).counts).toMatchObject({ moveFailed: 0 });
  });
});
