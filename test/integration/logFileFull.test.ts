import { spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN, finished } from '../support/cli.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const asRoot = process.getuid?.() === 0;

/**
 * A run whose log folder is a tmpfs of `bytes` (a private mount of its own: `unshare --mount`,
 * so nothing outside the process sees it or has to unmount it). Needs root, as the namespaces of
 * multiHost.test.ts do.
 */
function runWithLogOnTinyFs(ws: Workspace, logFolder: string, bytes: number, args: string[]) {
  const script = 'mount -t tmpfs -o size="$1" settle-log-test "$2" && shift 2 && exec "$@"';
  const child = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', String(bytes), logFolder, process.execPath, BIN, ...args],
    {
      env: { PATH: process.env.PATH!, HOME: process.env.HOME!, DATABASE_URL: ws.databaseUrl },
      cwd: ws.root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return finished(child);
}

describe('a log file whose file system fills', () => {
  it.skipIf(!asRoot)(
    'stops the run naming the log file and why, exit 1; every file it decided is where the ledger says; the next run with room takes the rest',
    async () => {
      const ws = await Workspace.create(db.url);
      const names = Array.from({ length: 30 }, (_, i) => `settle_20261102_${String(i + 1).padStart(2, '0')}.csv`);
      for (const [i, name] of names.entries()) {
        await ws.put(name, sampleSettlement({ date: '2026-11-02', rows: 2, idPrefix: `LOGFULL${i}` }).text);
      }
      const logFolder = join(ws.root, 'logs');
      await mkdir(logFolder);
      const log = join(logFolder, 'run.log');
      // two pages: a few files' lines, then the file system is full
      const r = await runWithLogOnTinyFs(ws, logFolder, 8192, [...ws.runArgs(), '--log-file', log]);
      // the file in hand is finished, then the run stops and says why, on stderr and on its summary line
      expect(r.status, r.stderr).toBe(1);
      const why = `the log file ${log} cannot be written (ENOSPC): its file system is full: make room there, or point --log-file elsewhere`;
      expect(r.stderr).toContain(`settle-ingest: ${why}\n`);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stdout).toMatch(/^run \S+ stopped: loaded=[1-9]\d* .* stale=0 /m);
      expect(r.stdout).toContain(`(stopped early: ${why}; the files not yet taken wait for the next run)`);
      const archived = await ws.files('archive');
      const waiting = await ws.files('intake');
      expect(archived.length).toBeGreaterThan(0);
      expect(waiting.length).toBeGreaterThan(0);
      expect([...archived, ...waiting].sort()).toEqual(names);
      // the ledger agrees with the folders: what it calls loaded is archived, no claim is left open
      expect(ws.ledgerFiles().filter((f) => f.state !== 'loaded')).toEqual([]);
      expect(
        ws
          .ledgerFiles()
          .map((f) => f.name)
          .sort(),
      ).toEqual(archived);
      expect(ws.runs().map((run) => run.exit_status)).toEqual([1]);
      // with room for its log, the next run takes the rest and nothing is loaded twice
      const next = await ws.run(['--log-file', join(ws.root, 'room.log')]);
      expect(next.status, next.stderr).toBe(0);
      expect(next.stdout).toMatch(/ stale=0 /);
      expect(await ws.files('intake')).toEqual([]);
      expect((await ws.files('archive')).sort()).toEqual(names);
      expect(ws.ledgerFiles().filter((f) => f.state === 'loaded')).toHaveLength(names.length);
      expect(await readdir(logFolder)).toEqual([]);
    },
  );
});
