import { execFileSync } from 'node:child_process';
import { chmod, mkdir, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

describe('names and files a run does not take', () => {
  it('counts names that are not UTF-8, hold a backslash, or are not regular files as ignored, by name, and touches none', async () => {
    const ws = await Workspace.create(db.url);
    const f = sampleSettlement({ date: '2026-10-05', rows: 4, idPrefix: 'ODD' }).text;
    await ws.put('settle_20261005_a01.csv', f);
    await ws.put('settle_2026\\1005_a02.csv', f);
    // a Latin-1 byte in the name: only the shell can make it, node's strings are UTF-8
    execFileSync('/bin/sh', ['-c', `printf 'x' > "$1"/"$(printf 'settle_20261005_\\351.csv')"`, 'sh', ws.intake]);
    await symlink('/etc/hostname', join(ws.intake, 'settle_20261005_a03.csv'));
    execFileSync('mkfifo', [join(ws.intake, 'settle_20261005_a04.csv')]);

    const r = await ws.run(['--json']);
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout) as Record<string, number> & { files: { name: string; outcome: string; error?: string }[] };
    expect(summary).toMatchObject({ loaded: 1, ignored: 4, failed: 0 });
    const ignored = summary.files.filter((x) => x.outcome === 'ignored');
    expect(ignored.map((x) => x.error)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/escape its folder/),
        expect.stringMatching(/not valid UTF-8/),
        expect.stringMatching(/symbolic link/),
        expect.stringMatching(/FIFO/),
      ]),
    );
    expect((await ws.files('intake')).length).toBe(4); // all four left as they were
    expect(await ws.files('archive')).toEqual(['settle_20261005_a01.csv']);
  });
});

describe('names a run takes as they are', () => {
  it('stores a name with quotes, semicolons, comment marks and dollar quotes on the file marker exactly as it is', async () => {
    // the load's statements carry their values as quoted literals (copyRows.ts): a name must stay a value
    const ws = await Workspace.create(db.url);
    const name = "settle_20261006_it's'; DROP TABLE settle.file_loads; -- $$ $x$ “ü” .csv";
    await ws.put(name, sampleSettlement({ date: '2026-10-06', rows: 3, idPrefix: 'QUOTED' }).text);
    const r = await ws.run(['--json']);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 1, failed: 0 });
    expect(await ws.files('archive')).toEqual([name]);
    const sha256 = ws.ledgerFile(name)!.sha256;
    const marker = await db.client.query<{ file_name: string; row_count: number; rows: string }>(
      `SELECT f.file_name, f.row_count, (SELECT count(*) FROM settle.settlement_rows r WHERE r.load_id = f.load_id) AS rows
         FROM settle.file_loads f WHERE f.sha256 = $1`,
      [sha256],
    );
    expect(marker.rows).toEqual([{ file_name: name, row_count: 3, rows: '3' }]);
  });
});

describe('files that quote partners’ data', () => {
  it('creates the ledger and the log file readable by their owner only', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261006_a01.csv', sampleSettlement({ date: '2026-10-06', rows: 2, idPrefix: 'MODE' }).text);
    const log = join(ws.root, 'logs', 'run.log');
    expect((await ws.run(['--log-file', log])).status).toBe(0);
    expect((await stat(ws.ledger)).mode & 0o777).toBe(0o600);
    expect((await stat(log)).mode & 0o777).toBe(0o600);
  });

  it('refuses a ledger in a folder every user may write to (exit 2)', async () => {
    const ws = await Workspace.create(db.url);
    const open = join(ws.root, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    const r = await ws.cli(['migrate', '--ledger', join(open, 'ledger.sqlite')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/every user may write to/);
    const run = await ws.cli(['run', '--intake', ws.intake, '--ledger', join(open, 'ledger.sqlite'), '--stable-for', '0']);
    expect(run.status).toBe(2);
  });
});
