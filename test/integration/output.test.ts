import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/postgresServer.js';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, startCli } from '../support/cli.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const SECRET = 'Tr0ub4dor-SECRET';

/** Every byte of a SQLite ledger, its write-ahead log included. */
async function ledgerBytes(path: string): Promise<string> {
  const parts = await Promise.all([path, `${path}-wal`].filter((p) => existsSync(p)).map((p) => readFile(p, 'latin1')));
  return parts.join('');
}

describe('secrets in database URLs', () => {
  it('are printed, logged and stored nowhere when the finance database or a PostgreSQL ledger is unreachable', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261101_a01.csv', sampleSettlement({ date: '2026-11-01', rows: 3, idPrefix: 'SECRET' }).text);
    const port = await freePort();
    const log = join(ws.root, 'settle.log');
    const attempts: { args: string[]; env: Record<string, string> }[] = [
      { args: [], env: { DATABASE_URL: `postgres://ingest@127.0.0.1:${port}/finance?sslmode=disable&password=${SECRET}` } },
      { args: [], env: { DATABASE_URL: `postgresql://ingest:${SECRET}@127.0.0.1:${port}/finance` } },
      { args: ['--database-url', `postgres://ingest@127.0.0.1:${port}/finance?sslpassword=${SECRET}&password=${SECRET}`], env: {} },
      { args: ['--ledger', `postgres://ingest:${SECRET}@127.0.0.1:${port}/ledger`], env: {} },
    ];
    for (const { args, env } of attempts) {
      const r = await ws.run(['--log-file', log, ...args], env);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/is unreachable: connect ECONNREFUSED/);
      expect(r.stderr).toContain('***');
      for (const text of [r.stdout, r.stderr, await readFile(log, 'utf8').catch(() => ''), await ledgerBytes(ws.ledger)]) {
        expect(text).not.toContain(SECRET);
      }
    }
    expect(await ws.files('intake')).toEqual(['settle_20261101_a01.csv']);
  });
});

/** The CLI with its stdout into an OS pipe, whose buffer holds 64 KiB. */
const throughPipe = (ws: Workspace, args: string[]) =>
  finished(startCli(args, { DATABASE_URL: ws.databaseUrl }, { cwd: ws.root, throughPipe: true }));

describe('long --json output read from a pipe', () => {
  // long names (a partner's merchant account in each) make the output large with fewer files to load
  const account = 'MerchantAccountEuropeWest'.repeat(6);

  it('is whole for a run of 800 files (over 200 KiB of JSON) and for adopting their archive', { timeout: 300_000 }, async () => {
    const ws = await Workspace.create(db.url);
    const names: string[] = [];
    for (let i = 1; i <= 800; i++) {
      const name = `settle_20261102_${account}_${String(i).padStart(4, '0')}.csv`;
      names.push(name);
      await ws.put(name, sampleSettlement({ date: '2026-11-02', rows: 1, idPrefix: `JSON${i}` }).text);
    }

    const r = await throughPipe(ws, ws.runArgs(['--json']));
    expect(r.status).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(200 * 1024);
    const summary = JSON.parse(r.stdout) as { loaded: number; files: { name: string; outcome: string }[] };
    expect(summary.loaded).toBe(800);
    expect(summary.files.map((f) => f.name).sort()).toEqual(names);

    // another command's --json goes out through the same exit
    const fresh = join(ws.root, 'fresh-ledger.sqlite');
    expect((await ws.cli(['migrate', '--ledger', fresh])).status).toBe(0);
    const adopted = await throughPipe(ws, ['adopt', '--archive', ws.archive, '--ledger', fresh, '--json']);
    expect(adopted.status).toBe(0);
    expect(adopted.stdout.length).toBeGreaterThan(200 * 1024);
    const adoptJson = JSON.parse(adopted.stdout) as { adopted: number; files: unknown[] };
    expect(adoptJson.adopted).toBe(800);
    expect(adoptJson.files).toHaveLength(800);
  });
});
