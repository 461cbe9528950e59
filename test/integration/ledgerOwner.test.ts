import { spawnSync } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const NOBODY = 65534;
/** root, and a `nobody` to be: the service user of these cases */
const asRoot = process.getuid?.() === 0 && spawnSync('getent', ['passwd', String(NOBODY)]).status === 0;

describe('a SQLite ledger and the user who runs', () => {
  it.runIf(asRoot)(
    'migrate as root refuses to make a ledger only root could open in a folder the service user owns, touching nothing',
    async () => {
      const ws = await Workspace.create(db.url, { migrate: false });
      const srv = join(ws.root, 'srv');
      await mkdir(srv);
      await chown(srv, NOBODY, NOBODY);
      const ledger = join(srv, 'ledger.sqlite');
      const r = await ws.cli(['migrate', '--ledger', ledger]);
      expect(r.status).toBe(2);
      expect(r.stderr.trim()).toBe(
        `settle-ingest: ledger ${ledger} would be created by root, readable by root alone, in ${srv}, which belongs to nobody: run migrate as that user (sudo -u nobody settle-ingest migrate …)`,
      );
      expect(existsSync(ledger)).toBe(false);
      // a folder of root's own is root's choice
      const own = await ws.cli(['migrate', '--ledger', ws.ledger]);
      expect(own.status, own.stderr).toBe(0);
      expect((await stat(ws.ledger)).uid).toBe(0);
    },
  );

  it.runIf(asRoot)("status as the service user on a ledger root made says whose it is and the fix, not 'for writing'", async () => {
    const folder = await mkdtemp(join(tmpdir(), 'settle-owner-'));
    await chmod(folder, 0o755);
    const ws = await Workspace.create(db.url, { migrate: false });
    const ledger = join(folder, 'ledger.sqlite');
    expect((await ws.cli(['migrate', '--ledger', ledger])).status).toBe(0);
    const r = spawnSync(
      'setpriv',
      [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, BIN, 'status', '--ledger', ledger],
      {
        encoding: 'utf8',
        cwd: folder,
        env: { PATH: process.env.PATH, HOME: folder, SETTLE_CODE_CACHE: 'off' },
      },
    );
    expect(r.status).toBe(3); // status: UNKNOWN, it cannot tell
    expect(r.stdout + r.stderr).toContain(
      `ledger ${ledger} cannot be opened for reading (unable to open database file): it belongs to root (mode 0600) and this command runs as nobody: chown nobody ${ledger}, or run as root`,
    );
  });
});
