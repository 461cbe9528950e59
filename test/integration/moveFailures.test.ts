import { chmod, chown, mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, startCli } from '../support/cli.js';
import { TestLoggingSshd, partnerSftp } from '../support/loggingSshd.js';
import { financeDatabase, Workspace } from '../support/workspace.js';

/**
 * Nothing silent when a move fails: a file whose outcome is decided (skipped, loaded, rejected)
 * and whose move out of the intake then fails is in the ledger with its outcome and the failure,
 * on the summary line, in `--json`'s files, `history` and `report run`; `status` gives the move
 * as the reason; the next run finishes the move for the run that decided it.
 */

interface RunJson {
  run: string;
  skipped: number;
  loaded: number;
  rejected: number;
  move_failed: number;
  files: { name: string; outcome: string; move_failed?: { to: string; reason: string } }[];
  finished_moves: { name: string; decided_by: string }[];
}

const LOGIN = 'settlemoves';
/** the server as root sees it (`base`: the jails, the folders it gives the login) and as the login uses it (`server`) */
let base: TestLoggingSshd;
let server: TestLoggingSshd;
beforeAll(async () => {
  // a standard chroot: its root is root's, so the login cannot make /duplicates there
  base = await TestLoggingSshd.start({ partners: [LOGIN] });
  server = base.as(LOGIN);
  for (const folder of ['in', 'archive']) await base.partnerFolder(LOGIN, folder);
});
afterAll(async () => base?.destroy());

describe('a move that fails is never silent', () => {
  it('a renamed resend on a chrooted SFTP login that cannot make /duplicates: skipped with its failed move, named everywhere, moved once the folder exists', async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    try {
      const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
      const text = sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'MVF' }).text;
      await writeFile(join(files, 'a01'), text);
      const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
      const runArgs = ['run', '--intake', server.url('/in'), '--ledger', ws.ledger, '--stable-for', '0', ...access];

      await partnerSftp(server, [`put ${join(files, 'a01')} /in/settle_20261201_a01.csv`]);
      const first = await ws.cli([...runArgs, '--json']);
      expect(first.status, first.stderr).toBe(0);

      // the partner's uploader retries under a new name: a resend, whose move to /duplicates fails
      await partnerSftp(server, [`put ${join(files, 'a01')} /in/settle_20261201_a02.csv`]);
      const second = await ws.cli([...runArgs, '--json']);
      expect(second.status, second.stderr).toBe(1);
      const doc = JSON.parse(second.stdout) as RunJson;
      expect(doc).toMatchObject({ skipped: 1, move_failed: 1 });
      expect(doc.files).toEqual([
        expect.objectContaining({
          name: 'settle_20261201_a02.csv',
          outcome: 'skipped',
          move_failed: { to: 'duplicates', reason: expect.stringMatching(/denied/i) as unknown },
        }),
      ]);
      expect(await readdir(join(base.jailOf(LOGIN), 'in'))).toEqual(['settle_20261201_a02.csv']);
      expect(ws.ledgerFile('settle_20261201_a02.csv')).toMatchObject({ state: 'duplicate', location: null, run_id: doc.run });

      // history names the skip and the failure
      const history = await ws.cli(['history', 'settle_20261201_a02.csv', '--ledger', ws.ledger]);
      expect(history.status).toBe(0);
      expect(history.stdout).toMatch(/skipped\s+settle_20261201_a02\.csv/);
      expect(history.stdout).toMatch(/move_failed\s+settle_20261201_a02\.csv\s+\S+\s+skipped, not moved; to duplicates; .*denied/i);
      // report run lists it as a decision of that run
      const report = await ws.cli(['report', 'run', doc.run, '--ledger', ws.ledger]);
      expect(report.stdout).toMatch(/move_failed\s+settle_20261201_a02\.csv/);
      // the summary line names it
      const third = await ws.cli(runArgs);
      expect(third.status).toBe(1);
      expect(third.stdout).toMatch(
        /move_failed=1 rows=0 \(move failed: settle_20261201_a02\.csv \(decided by run \S+\) to duplicates: .*denied/i,
      );

      // status, two days on: the failed move is the reason, not "no successful run"
      const later = new Date(Date.now() + 45 * 3600_000).toISOString();
      const status = await ws.cli(['status', '--ledger', ws.ledger], { SETTLE_TEST_NOW: later });
      expect(status.status).toBe(2);
      expect(status.stdout).toMatch(
        /^SETTLE-INGEST CRITICAL - 1 move failed in run \S+: settle_20261201_a02\.csv to duplicates: .*denied.*\(no run without a failure for 4\dh/i,
      );
      expect(status.stdout).not.toMatch(/no successful run/);

      // the folder made for the login: the next run only finishes the move, for the run that decided the skip
      await base.partnerFolder(LOGIN, 'duplicates');
      const fixed = await ws.cli([...runArgs, '--json']);
      expect(fixed.status, fixed.stderr).toBe(0);
      const fixedDoc = JSON.parse(fixed.stdout) as RunJson;
      expect(fixedDoc).toMatchObject({ skipped: 0, move_failed: 0, files: [] });
      expect(fixedDoc.finished_moves).toEqual([expect.objectContaining({ name: 'settle_20261201_a02.csv', decided_by: doc.run })]);
      expect(await readdir(join(base.jailOf(LOGIN), 'duplicates'))).toEqual(['settle_20261201_a02.csv']);
      expect(await readdir(join(base.jailOf(LOGIN), 'in'))).toEqual([]);
      const skips = ws.events().filter((e) => e.event === 'skipped');
      expect(skips).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it('a local intake whose duplicates/ and rejected/ the service user cannot make: the skip and the reject recorded with their failed moves', async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    try {
      const nobody = { uid: 65534, gid: 65534 };
      // the service user owns its workspace; the folder its duplicates/ and rejected/ go in is root's
      const locked = join(ws.root, 'locked');
      await mkdir(locked, { mode: 0o755 });
      for (const path of [ws.root, ws.intake, ws.ledger]) await chown(path, nobody.uid, nobody.gid);
      await chmod(ws.root, 0o755);
      const text = sampleSettlement({ date: '2026-12-02', rows: 2, idPrefix: 'MVL' }).text;
      await ws.put('settle_20261202_a01.csv', text);
      const args = [
        ...ws.runArgs(['--duplicates', join(locked, 'duplicates'), '--rejected', join(locked, 'rejected'), '--json']),
        '--staging',
        ws.root,
      ];
      const asService = () => finished(startCli(args, { DATABASE_URL: own.url, HOME: ws.root }, { cwd: ws.root, as: nobody }));
      const first = await asService();
      expect(first.status, first.stderr).toBe(0);
      await ws.put('settle_20261202_a02.csv', text);
      await ws.put('settle_20261202_b01.csv', `${text.split('\n')[0]}\nnot,a,row\n`);
      for (const name of await readdir(ws.intake)) await chown(join(ws.intake, name), nobody.uid, nobody.gid);
      const second = await asService();
      expect(second.status, second.stderr).toBe(1);
      const doc = JSON.parse(second.stdout) as RunJson;
      expect(doc).toMatchObject({ skipped: 1, rejected: 1, move_failed: 2 });
      expect(doc.files.map((f) => [f.name, f.outcome, f.move_failed?.to, f.move_failed?.reason])).toEqual([
        ['settle_20261202_a02.csv', 'skipped', 'duplicates', expect.stringMatching(/EACCES|permission denied/i)],
        ['settle_20261202_b01.csv', 'rejected', 'rejected', expect.stringMatching(/EACCES|permission denied/i)],
      ]);
      expect((await readdir(ws.intake)).sort()).toEqual(['settle_20261202_a02.csv', 'settle_20261202_b01.csv']);
      const failures = ws.events().filter((e) => e.event === 'move_failed');
      expect(failures.map((e) => [e.name, e.details.outcome, e.details.to, e.details.decidedBy])).toEqual([
        ['settle_20261202_a02.csv', 'skipped', 'duplicates', doc.run],
        ['settle_20261202_b01.csv', 'rejected', 'rejected', doc.run],
      ]);
    } finally {
      await own.close();
    }
  });
});
