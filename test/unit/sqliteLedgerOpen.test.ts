import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TransientError, UsageError } from '../../src/errors.js';
import { ledgerGroupId, shareLedgerWithGroup } from '../../src/ledger/ledgerGroup.js';
import { openSqliteLedger, sqliteAddonFrom } from '../../src/ledger/sqliteLedger.js';
import { NO_COUNTS } from '../../src/ledger/types.js';
import { currentOwner } from '../../src/owner.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'settle-ledger-open-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const RUN = { mode: 'manual' as const, host: 'h', pid: 1 };

describe('opening the SQLite ledger', () => {
  it('refuses a ledger that does not exist unless asked to create it, and names migrate', () => {
    const path = join(dir, 'ledger.sqlite');
    expect(() => openSqliteLedger(path, { create: false })).toThrow(UsageError);
    expect(() => openSqliteLedger(path, { create: false })).toThrow(/does not exist: run `settle-ingest migrate` first/);
    expect(existsSync(path)).toBe(false);
  });

  it('refuses a file that is not a SQLite ledger, naming it', () => {
    const path = join(dir, 'ledger.sqlite');
    writeFileSync(path, 'this is not a database, only some words in a file of more than a hundred bytes '.repeat(4));
    expect(() => openSqliteLedger(path, { create: false })).toThrow(/ledger .*ledger\.sqlite is not a SQLite ledger/);
  });

  it('refuses a ledger in a folder every user may write to', () => {
    chmodSync(dir, 0o777);
    expect(() => openSqliteLedger(join(dir, 'ledger.sqlite'), { create: true })).toThrow(/which every user may write to/);
  });

  it('refuses a ledger at an older version (migrate first) and at a newer one (upgrade)', async () => {
    const path = join(dir, 'ledger.sqlite');
    await openSqliteLedger(path, { create: true }).close();
    const raw = new Database(path);
    const latest = (raw.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v;
    raw.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(latest + 1, 'later', 'now');
    raw.close();
    expect(() => openSqliteLedger(path, { create: false })).toThrow(/newer than this release knows .*upgrade settle-ingest/);
    expect(() => openSqliteLedger(path, { create: true })).toThrow(/newer than this release knows/);
    const older = new Database(path);
    older.prepare('DELETE FROM schema_migrations WHERE version >= ?').run(latest);
    older.close();
    expect(() => openSqliteLedger(path, { create: false })).toThrow(/at version \d+, this release needs \d+: run `settle-ingest migrate`/);
  });

  it('reads a closed ledger read-only, seeing what was written, and writes nothing to it', async () => {
    const path = join(dir, 'ledger.sqlite');
    const writer = openSqliteLedger(path, { create: true });
    const runId = await writer.startRun(RUN, () => 'r1');
    await writer.close();
    const before = statSync(path).mtimeMs;
    const reader = openSqliteLedger(path, { create: false, readOnly: true });
    try {
      expect(await reader.run(runId)).toMatchObject({ runId: 'r1', mode: 'manual' });
      await expect(reader.startRun(RUN, () => 'r2')).rejects.toThrow();
    } finally {
      await reader.close();
    }
    expect(statSync(path).mtimeMs).toBe(before);
    const again = openSqliteLedger(path, { create: false });
    expect(await again.run('r2')).toBeUndefined();
    await again.close();
  });

  it('says the ledger is locked by another process when a write waits past the busy timeout', async () => {
    const path = join(dir, 'ledger.sqlite');
    await openSqliteLedger(path, { create: true }).close();
    const ledger = openSqliteLedger(path, { create: false, busyTimeoutMs: 1 });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const refused = await ledger.startRun(RUN, () => 'r1').catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(TransientError);
      expect((refused as Error).message).toMatch(/is locked by another process/);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    // the lock gone, the same ledger writes again
    expect(await ledger.startRun(RUN, () => 'r2')).toBe('r2');
    await ledger.close();
  });

  it('ends with exit 1 and the cause when a statement fails once the ledger is open', async () => {
    const path = join(dir, 'ledger.sqlite');
    const ledger = openSqliteLedger(path, { create: true });
    const raw = new Database(path);
    raw.exec('DROP TABLE runs');
    raw.close();
    const failed = await ledger.run('r1').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(TransientError);
    expect((failed as Error).message).toMatch(/a statement failed \(no such table: runs\)/);
    await ledger.close();
  });
});

describe('migrate --ledger-group', () => {
  it("takes a group's id as a number or by name, and refuses a group the host does not know", () => {
    expect(ledgerGroupId('4321')).toBe(4321);
    expect(ledgerGroupId('root')).toBe(0);
    expect(() => ledgerGroupId('no-such-group-here')).toThrow(/--ledger-group: no group "no-such-group-here" on this host/);
  });

  it('gives the ledger, its -wal and -shm to the group, mode 0640, and its folder g+rx and setgid', async () => {
    const folder = join(dir, 'ledger');
    const path = join(folder, 'ledger.sqlite');
    mkdirSync(folder, { mode: 0o700 });
    const ledger = openSqliteLedger(path, { create: true }); // open: its -wal and -shm exist
    const gid = process.getgid!();
    try {
      shareLedgerWithGroup(path, String(gid), gid);
      for (const file of [path, `${path}-wal`, `${path}-shm`]) {
        expect(statSync(file).mode & 0o777).toBe(0o640);
        expect(statSync(file).gid).toBe(gid);
      }
      expect(statSync(folder).mode & 0o7777).toBe(0o2750);
    } finally {
      await ledger.close();
    }
  });
});

describe("the SQLite ledger's run and report queries, per partner", () => {
  const SHA = (letter: string) => letter.repeat(64);

  it('keeps each partner to its own runs and events, and answers the reports from them', async () => {
    const all = openSqliteLedger(join(dir, 'ledger.sqlite'), { create: true });
    try {
      const acme = all.forPartner('acme');
      const bolt = all.forPartner('bolt');
      expect(acme.forPartner('acme')).toBe(acme);
      const first = await acme.startRun(RUN, () => 'r-acme-1');
      const second = await bolt.startRun(RUN, () => 'r-bolt-1');
      const dead = await acme.startRun(RUN, () => 'r-acme-dead');
      await acme.finishRun(first, NO_COUNTS, 0);
      await bolt.finishRun(second, NO_COUNTS, 1);
      await all.recordProcessExit([], 9); // nothing to record
      await all.recordProcessExit([first, second], 1);
      expect(await all.run(first)).toMatchObject({ exitStatus: 0, processExitStatus: 1 });
      expect(await all.closeDeadRun(dead, first, 'its process is gone')).toBe(true);
      expect(await all.closeDeadRun(dead, first, 'again')).toBe(false);
      expect((await all.run(dead))?.reason).toMatch(/its process is gone; closed by run r-acme-1/);

      expect(await all.partnersSeen()).toEqual(['acme', 'bolt']);
      expect(await all.firstRunAt('acme')).toBe((await all.run(first))?.startedAt);
      expect(await all.firstRunAt('nobody')).toBeUndefined();
      expect((await all.latestIngestRun({ successful: true }))?.runId).toBe(first);
      expect((await all.latestIngestRun({ successful: false, partner: 'bolt' }))?.runId).toBe(second);
      expect(await all.latestIngestRun({ successful: true, partner: 'bolt' })).toBeUndefined();
      expect((await all.recentRuns(10, [])).length).toBe(0);
      expect((await all.recentRuns(10, ['bolt'])).map((r) => r.runId)).toEqual([second]);

      const loaded = async (ledger: typeof acme, runId: string, name: string, sha256: string) => {
        const file = { name, sha256, size: 1, runId, arrival: '1:1' };
        expect(await ledger.claim({ ...file, owner: currentOwner(), leaseSeconds: 60 })).toBe(true);
        expect(await ledger.finalizeClaim(file, { state: 'loaded', event: 'loaded', rows: 1 }, { rows: 1 })).toBe(true);
      };
      const later = await acme.startRun(RUN, () => 'r-acme-2');
      await loaded(acme, later, 'settle_a01.csv', SHA('a'));
      const boltLater = await bolt.startRun(RUN, () => 'r-bolt-2');
      await loaded(bolt, boltLater, 'settle_b01.csv', SHA('b'));
      expect((await all.latestEvent(['loaded'], 'acme'))?.name).toBe('settle_a01.csv');
      expect(await all.latestEvent(['rejected'], 'acme')).toBeUndefined();
      const since = new Date(Date.now() - 3600_000).toISOString();
      expect((await all.eventsSince(['loaded'], since, ['bolt'])).map((e) => e.name)).toEqual(['settle_b01.csv']);
      expect((await all.eventsSince(['loaded'], since)).length).toBe(2);
      expect(await all.contentsWithPrefix('aaaa', 5)).toEqual([SHA('a')]);
      expect(await all.contentsLoadedTwice()).toEqual([]);
    } finally {
      await all.close();
    }
  });
});

describe("better-sqlite3's addon, given to it by the ledger (its JavaScript is in the bundle)", () => {
  const installed = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));

  it('is where npm builds or fetches it', () => {
    expect(sqliteAddonFrom(import.meta.url)).toBe(join(installed, 'build', 'Release', 'better_sqlite3.node'));
  });

  it("is found the way `bindings` finds it, from better-sqlite3's own folder, when npm did not put it there", () => {
    // an install whose addon was built elsewhere (a debug build): only build/Debug has it
    const pkg = join(dir, 'node_modules', 'better-sqlite3');
    mkdirSync(join(pkg, 'build', 'Debug'), { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'better-sqlite3', main: 'lib/index.js' }));
    symlinkSync(
      realpathSync(join(installed, 'build', 'Release', 'better_sqlite3.node')),
      join(pkg, 'build', 'Debug', 'better_sqlite3.node'),
    );
    mkdirSync(join(pkg, 'node_modules'));
    symlinkSync(
      dirname(createRequire(join(installed, 'package.json')).resolve('bindings/package.json')),
      join(pkg, 'node_modules', 'bindings'),
    );
    const addon = sqliteAddonFrom(join(dir, 'x.js'));
    expect(typeof addon).toBe('object');
    const db = new Database(':memory:', { nativeBinding: addon as string });
    expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
    db.close();
  });
});
