import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TransientError, UsageError } from '../../src/errors.js';
import { ledgerGroupId, shareLedgerWithGroup } from '../../src/ledger/ledgerGroup.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';

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
