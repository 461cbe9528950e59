import { spawnSync } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN } from '../support/cli.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
// a real system user and group, as the README's monitoring user is: only root may make them
const isRoot = process.getuid?.() === 0;
const MONITOR = 'settle-monitor';

/** The shell words of `status` as the monitoring user (its own uid, gid and groups), never root. */
function statusAsMonitor(ledger: string): string[] {
  return ['setpriv', `--reuid=${MONITOR}`, `--regid=${MONITOR}`, '--init-groups', process.execPath, BIN, 'status', '--ledger', ledger];
}

describe.skipIf(!isRoot)('a monitoring user who may only read the SQLite ledger', () => {
  beforeAll(() => {
    if (spawnSync('id', [MONITOR], { stdio: 'ignore' }).status !== 0) {
      const made = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', MONITOR], {
        encoding: 'utf8',
      });
      expect(made.status, made.stderr).toBe(0);
    }
  });

  it('runs status after migrate --ledger-group, also while a run holds the ledger open (its -wal and -shm in place)', async () => {
    const ws = await Workspace.create(db.url);
    const status = () => spawnSync(statusAsMonitor(ws.ledger)[0]!, statusAsMonitor(ws.ledger).slice(1), { cwd: '/', encoding: 'utf8' });
    await ws.put('settle_20261211_a01.csv', sampleSettlement({ date: '2026-12-11', rows: 2, idPrefix: 'MON1' }).text);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 1 });
    // created private (0600, in a folder of mode 0700): the monitor cannot read it, and says so (UNKNOWN)
    expect(status().status).toBe(3);

    const migrate = await ws.cli(['migrate', '--ledger', ws.ledger, '--ledger-group', MONITOR]);
    expect(migrate.status, migrate.stderr).toBe(0);
    const gid = Number(spawnSync('getent', ['group', MONITOR], { encoding: 'utf8' }).stdout.split(':')[2]);
    const file = await stat(ws.ledger);
    expect({ gid: file.gid, mode: file.mode & 0o777 }).toEqual({ gid, mode: 0o640 });
    const folder = await stat(ws.root);
    expect({ gid: folder.gid, groupMayEnter: (folder.mode & 0o050) === 0o050, setgid: (folder.mode & 0o2000) !== 0 }).toEqual({
      gid,
      groupMayEnter: true,
      setgid: true,
    });
    const after = status();
    expect(after.status, after.stdout + after.stderr).toBe(0);

    // the monitor's check in the middle of the next run, while the run has the ledger open
    await ws.put('settle_20261212_a01.csv', sampleSettlement({ date: '2026-12-12', rows: 2, idPrefix: 'MON2' }).text);
    const during = join(ws.root, 'status-during-run');
    const quoted = statusAsMonitor(ws.ledger)
      .map((a) => `'${a}'`)
      .join(' ');
    const sidecars = join(ws.root, 'sidecars-during-run');
    const hook = `${quoted} >/dev/null 2>&1; echo $? > '${during}'; stat -c '%g %a' '${ws.ledger}-wal' '${ws.ledger}-shm' > '${sidecars}'`;
    const run = await ws.run([], { SETTLE_TEST_FAULT: 'hook:before-claim', SETTLE_TEST_HOOK: hook });
    expect(parseSummary(run.stdout)).toMatchObject({ loaded: 1 });
    expect((await readFile(during, 'utf8')).trim()).toBe('0');
    // the run's own -wal and -shm: the folder's group (setgid), the file's mode
    expect((await readFile(sidecars, 'utf8')).trim().split('\n')).toEqual([`${gid} 640`, `${gid} 640`]);
  });

  it('--ledger-group with an unknown group is exit 2 naming it, the ledger left as it was', async () => {
    const ws = await Workspace.create(db.url);
    const before = await stat(ws.ledger);
    const r = await ws.cli(['migrate', '--ledger', ws.ledger, '--ledger-group', 'no-such-group-here']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no group "no-such-group-here"');
    const after = await stat(ws.ledger);
    expect({ gid: after.gid, mode: after.mode }).toEqual({ gid: before.gid, mode: before.mode });
  });
});
