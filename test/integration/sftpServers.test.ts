import { execFileSync, spawn } from 'node:child_process';
import { lstat, readdir, readFile, readlink, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN, finished } from '../support/cli.js';
import { HostileSftpServer } from '../support/hostileSftp.js';
import { remoteIntake, type RemoteIntake } from '../support/remoteIntake.js';
import { SFTP_SERVER_KINDS, startSftpServer, type SftpServerKind, type TestSftpServer } from '../support/sftpServers.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase } from '../support/workspace.js';

/*
 * Every case of "never through a link, never over a file, never a hang" on each server the
 * intake may be: OpenSSH, ProFTPD (whose LSTAT and RENAME follow links), rclone (whose RENAME
 * replaces and which hides links) and a hostile server for what no real one does on demand.
 */

const db = sharedFinanceDatabase();
const servers = new Map<SftpServerKind, TestSftpServer>();
beforeAll(async () => {
  for (const s of await Promise.all(SFTP_SERVER_KINDS.map(startSftpServer))) servers.set(s.kind, s);
});
afterAll(async () => {
  await Promise.all([...servers.values()].map((s) => s.destroy()));
});

/** Runs a shell command at an injection point of the run (src/faults.ts), for the file in hand. */
const hookAt = (step: string, command: string) => ({ SETTLE_TEST_FAULT: `hook:${step}`, SETTLE_TEST_HOOK: command });

/** Two settlement files of `rows` rows that differ only in their ids' prefix: the same size, other content. */
const sameShape = (date: string, rows: number, a: string, b: string) => {
  if (a.length !== b.length) throw new Error('prefixes of one length keep the size');
  const first = sampleSettlement({ date, rows, idPrefix: a }).text;
  return [first, first.replaceAll(`${a}-`, `${b}-`)] as const;
};

/** Nothing of the tool's own (a capture, a copy on its way, a probe) is left in any folder of the tree. */
async function expectNoTemporaries(r: RemoteIntake): Promise<void> {
  for (const folder of ['intake', 'archive', 'duplicates', 'rejected'] as const) {
    const entries = await readdir(join(r.root, folder)).catch(() => [] as string[]);
    expect(
      entries.filter((e) => e.startsWith('.settle-')),
      folder,
    ).toEqual([]);
  }
}

describe.each(SFTP_SERVER_KINDS)('an sftp:// intake on %s', (kind) => {
  const server = () => servers.get(kind)!;
  const hostile = () => servers.get('hostile') as HostileSftpServer;
  /** the servers whose RENAME replaces an existing target: moves there go onto names unique to the move */
  const overwrites = kind === 'rclone';
  const setup = () => remoteIntake(server(), db.url);
  afterEach(() => hostile().behave({}));

  /** An archived name: the file's own, or on a server whose RENAME replaces, one unique to its move (or to its staged copy's). */
  const archivedAs = (name: string) => {
    const [stem, ext] = [name.replace(/\.csv$/, ''), '.csv'];
    return overwrites ? new RegExp(`^${stem}\\.r-\\d{8}-\\d{4}-[0-9a-f]{4}(-staged)?${ext}$`) : new RegExp(`^${stem}${ext}$`);
  };

  it('loads a file, skips its renamed resend, and moves both on the server', async () => {
    const r = await setup();
    const a01 = sampleSettlement({ date: '2026-10-01', rows: 40, idPrefix: `BASE${kind}` }).text;
    await r.put('settle_20261001_a01.csv', a01);
    await r.put('settle_20261001_a02.csv', a01);
    const res = await r.run(['--json']);
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ loaded: 1, skipped: 1, rows: 40 });
    expect(await r.files('intake')).toEqual([]);
    const [archived] = await r.files('archive');
    expect(archived).toMatch(archivedAs('settle_20261001_a01.csv'));
    expect(await r.read('archive', archived!)).toBe(a01);
    expect(await r.files('duplicates')).toEqual([expect.stringMatching(archivedAs('settle_20261001_a02.csv'))]);
    expect(r.ws.ledgerFile('settle_20261001_a01.csv')?.location).toBe(r.location('archive', archived!));
    await expectNoTemporaries(r);
  });

  it('a file swapped after its listing for a symlink to an outside CSV (same size and mtime) is refused, one deleted is counted: both failed with what the server said, nothing of them read', async () => {
    if (kind === 'hostile') hostile().behave({ lstatFollows: true, renameFollows: true }); // as ProFTPD's
    const r = await setup();
    const [inside, outsideText] = sameShape('2026-10-02', 6, `LNKI${kind}`, `LNKO${kind}`);
    const outside = join(r.root, 'outside.csv');
    await writeFile(outside, outsideText);
    await r.put('settle_20261002_a01.csv', inside);
    const listed = await lstat(join(r.intake, 'settle_20261002_a01.csv'));
    await utimes(outside, listed.atime, listed.mtime);
    await r.put('settle_20261002_b01.csv', sampleSettlement({ date: '2026-10-02', rows: 3, idPrefix: `LNKB${kind}` }).text);
    await r.put('settle_20261002_c01.csv', sampleSettlement({ date: '2026-10-02', rows: 4, idPrefix: `GONE${kind}` }).text);
    const swap = `case "$SETTLE_TEST_HOOK_FILE" in
      *a01*) ln -sfn '${outside}' '${r.intake}/settle_20261002_a01.csv' ;;
      *c01*) rm '${r.intake}/settle_20261002_c01.csv' ;;
    esac`;
    const res = await r.run(['--json'], hookAt('before-open', swap));
    expect(res.status).toBe(1);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 1, failed: 2, rows: 3 });
    const failed = j.files.filter((f: { outcome: string }) => f.outcome === 'failed');
    expect(failed).toEqual([
      expect.objectContaining({
        name: 'settle_20261002_a01.csv',
        sha256: null,
        // what the server said: a link (its READLINK, its LSTAT), or no such file (rclone hides links)
        error: expect.stringMatching(/symbolic link|no longer there|does not exist/),
      }),
      expect.objectContaining({ name: 'settle_20261002_c01.csv', sha256: null, error: expect.stringMatching(/^listed, then gone/) }),
    ]);
    expect(await rowsWithPrefix(db, `LNKO${kind}`)).toBe(0);
    expect(await readFile(outside, 'utf8')).toBe(outsideText);
    expect(await readlink(join(r.intake, 'settle_20261002_a01.csv'))).toBe(outside);
    expect(await r.files('archive')).toEqual([expect.stringMatching(archivedAs('settle_20261002_b01.csv'))]);
    expect(r.ws.ledgerFile('settle_20261002_a01.csv')).toBeUndefined();
    await expectNoTemporaries(r);
  });

  it('a file swapped for a symlink just before its rename: the staged copy is archived, the link and what it points to stay as they were', async () => {
    if (kind === 'hostile') hostile().behave({ lstatFollows: true, renameFollows: true });
    const r = await setup();
    const name = 'settle_20261003_a01.csv';
    const text = sampleSettlement({ date: '2026-10-03', rows: 7, idPrefix: `LNKM${kind}` }).text;
    await r.put(name, text);
    const outside = join(r.root, 'outside.csv');
    await writeFile(outside, 'not a settlement file, and not ours to move\n');
    const res = await r.run(['--json'], hookAt('before-rename', `ln -sfn '${outside}' '${r.intake}/${name}'`));
    expect(res.status).toBe(1);
    expect(JSON.parse(res.stdout)).toMatchObject({ loaded: 1, rows: 7, move_failed: 1 });
    const [archived] = await r.files('archive');
    expect(archived).toMatch(archivedAs(name));
    expect(await r.read('archive', archived!)).toBe(text);
    expect(await readFile(outside, 'utf8')).toBe('not a settlement file, and not ours to move\n');
    expect(await readlink(join(r.intake, name))).toBe(outside);
    expect(r.ws.ledgerFile(name)).toMatchObject({ state: 'loaded', location: r.location('archive', archived!) });
    const moved = r.ws.events().filter((e) => e.event === 'moved');
    expect(moved).toEqual([expect.objectContaining({ details: expect.objectContaining({ bytesFrom: 'staging' }) })]);
    await expectNoTemporaries(r);
  });

  it('a file that appears at the landing name just before the rename is never overwritten', async () => {
    const r = await setup();
    const name = 'settle_20261004_a01.csv';
    const text = sampleSettlement({ date: '2026-10-04', rows: 5, idPrefix: `OVER${kind}` }).text;
    await r.put(name, text);
    const theirs = join(r.root, 'archive', name);
    const res = await r.run(['--json'], hookAt('before-rename', `printf 'an operator put this here\\n' > '${theirs}'`));
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ loaded: 1, move_failed: 0 });
    expect(await readFile(theirs, 'utf8')).toBe('an operator put this here\n');
    const ours = (await r.files('archive')).filter((f) => f !== name);
    expect(ours).toHaveLength(1);
    expect(await r.read('archive', ours[0]!)).toBe(text);
    expect(r.ws.ledgerFile(name)?.location).toBe(r.location('archive', ours[0]!));
    expect(await r.files('intake')).toEqual([]);
    await expectNoTemporaries(r);
  });

  it('a rewrite between the read and the move that keeps size and mtime: the staged bytes are archived, the new upload stays and loads next run', async () => {
    const r = await setup();
    const name = 'settle_20261005_a01.csv';
    const [v1, v2] = sameShape('2026-10-05', 30, `SHPA${kind}`, `SHPB${kind}`);
    await r.put(name, v1);
    const v2Path = join(r.ws.root, 'v2.csv');
    await writeFile(v2Path, v2);
    const path = join(r.intake, name);
    const mtime = Math.floor((await lstat(path)).mtimeMs / 1000);
    // the partner's uploader rewrites the file in place and its clock puts the same second back
    const rewrite = `cat '${v2Path}' > '${path}' && touch -d @${mtime} '${path}'`;
    const first = await r.run(['--json'], hookAt('before-move', rewrite));
    expect(first.status).toBe(1);
    expect(JSON.parse(first.stdout)).toMatchObject({ loaded: 1, rows: 30, move_failed: 1 });
    const [archived] = await r.files('archive');
    expect(await r.read('archive', archived!)).toBe(v1);
    expect(await r.files('intake')).toEqual([name]);
    expect(await r.read('intake', name)).toBe(v2);
    expect([await rowsWithPrefix(db, `SHPA${kind}`), await rowsWithPrefix(db, `SHPB${kind}`)]).toEqual([30, 0]);

    const second = await r.run();
    expect(second.status).toBe(0);
    expect(parseSummary(second.stdout)).toMatchObject({ loaded: 1, rows: 30 });
    expect([await rowsWithPrefix(db, `SHPA${kind}`), await rowsWithPrefix(db, `SHPB${kind}`)]).toEqual([30, 30]);
    expect(await r.files('intake')).toEqual([]);
    expect(await r.files('archive')).toHaveLength(2);
    await expectNoTemporaries(r);
  });

  /** One file and a run (deadlines of 2 s) during which the server stops answering at `step`, thawed once it ended. */
  const frozenAt = async (step: string, name: string, rows: number, idPrefix: string) => {
    const r = await setup();
    await r.put(name, sampleSettlement({ date: '2026-10-07', rows, idPrefix }).text);
    const res = await r.run(['--json', '--sftp-timeout', '2'], hookAt(step, server().freezeCommand()));
    await server().thaw();
    expect(res.status).toBe(1);
    return { r, name, res };
  };

  it('a download the server stops answering fails within --sftp-timeout: nothing claimed, the file left, the next run loads it', async () => {
    const { r, name, res } = await frozenAt('before-open', 'settle_20261007_a01.csv', 8, `HANG${kind}`);
    // the file failed and the run went on, or the server stayed away and the run ended: said either way
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 0, exit_status: 1 });
    expect(JSON.stringify(j)).toMatch(/did not answer|unreachable/);
    expect(r.ws.ledgerFiles()).toEqual([]);
    expect(await r.files('intake')).toEqual([name]);
    const next = await r.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 8 });
  });

  it('a move the server stops answering after the COMMIT fails within --sftp-timeout; the next run finishes it and says so', async () => {
    const { r, name, res } = await frozenAt('before-move', 'settle_20261008_a01.csv', 9, `HANGM${kind}`);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 1, rows: 9 });
    expect(r.ws.ledgerFile(name)).toMatchObject({ state: 'loaded', location: null });
    expect(await r.files('intake')).toEqual([name]);

    const next = await r.run(['--json']);
    expect(next.status).toBe(0);
    const k = JSON.parse(next.stdout);
    expect(k).toMatchObject({ loaded: 0, skipped: 0 });
    const [archived] = await r.files('archive');
    expect(k.finished_moves).toEqual([{ name, location: r.location('archive', archived!), decided_by: j.run }]);
    expect(await rowsWithPrefix(db, `HANGM${kind}`)).toBe(9);
    expect(await r.files('duplicates')).toEqual([]);
    await expectNoTemporaries(r);
  });

  it('SIGTERM stops a run stuck in an SFTP wait within seconds (exit 1, stopped); the next run loads the file', async () => {
    const r = await setup();
    const name = 'settle_20261009_a01.csv';
    await r.put(name, sampleSettlement({ date: '2026-10-09', rows: 3, idPrefix: `TERM${kind}` }).text);
    const stuck = join(r.ws.root, 'stuck');
    const child = r.ws.startRunWith(r.args(), hookAt('before-open', `${server().freezeCommand()}\ntouch '${stuck}'`));
    const done = finished(child);
    while (!(await lstat(stuck).catch(() => null)) && child.exitCode === null) await new Promise((w) => setTimeout(w, 20));
    const asked = Date.now();
    child.kill('SIGTERM');
    const res = await done;
    const tookMs = Date.now() - asked;
    await server().thaw();
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/^run \S+ stopped: .*\(stopped early: asked to stop \(SIGTERM\)/m);
    expect(tookMs).toBeLessThan(15_000);
    expect(r.ws.ledgerFiles()).toEqual([]);
    expect(parseSummary((await r.run()).stdout)).toMatchObject({ loaded: 1, rows: 3 });
  });

  it('--json prints its object when the run ends on a server gone away after a load', async () => {
    const r = await setup();
    await r.put('settle_20261010_a01.csv', sampleSettlement({ date: '2026-10-10', rows: 2, idPrefix: `JSNA${kind}` }).text);
    await r.put('settle_20261010_b01.csv', sampleSettlement({ date: '2026-10-10', rows: 2, idPrefix: `JSNB${kind}` }).text);
    const cut = server().cutCommand({ cut: 'server', once: join(r.ws.root, 'cut-once') });
    const res = await r.run(
      ['--json', '--log-file', join(r.ws.root, 'run.log')],
      hookAt('before-open', `case "$SETTLE_TEST_HOOK_FILE" in *b01*) ${cut} ;; esac`),
    );
    await server().resume();
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(/SFTP server .* is unreachable after \d attempts/)]);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ version: 1, loaded: 1, rows: 2, exit_status: 1, stopped_early: expect.stringMatching(/unreachable/) });
    expect(j.files).toEqual([
      expect.objectContaining({ name: 'settle_20261010_a01.csv', outcome: 'loaded' }),
      expect.objectContaining({ name: 'settle_20261010_b01.csv', outcome: 'failed', error: expect.stringMatching(/unreachable/) }),
    ]);
  });

  it('a move finished for an earlier run is counted and listed', async () => {
    const r = await setup();
    const name = 'settle_20261011_a01.csv';
    await r.put(name, sampleSettlement({ date: '2026-10-11', rows: 5, idPrefix: `FIN${kind}` }).text);
    const killed = await r.run([], { SETTLE_TEST_FAULT: 'after-move' });
    expect(killed.signal).toBe('SIGKILL');
    const again = await r.run(['--json']);
    expect(again.status).toBe(0);
    const j = JSON.parse(again.stdout);
    const [archived] = await r.files('archive');
    const first = r.ws.runs()[0]!.run_id;
    expect(j.finished_moves).toEqual([{ name, location: r.location('archive', archived!), decided_by: first }]);
  });
});

describe('what only the hostile server does', () => {
  const hostile = () => servers.get('hostile') as HostileSftpServer;
  const setup = () => remoteIntake(hostile(), db.url);
  afterEach(() => hostile().behave({}));

  it('a download that trickles below --sftp-min-rate fails; the next run loads it', async () => {
    const r = await setup();
    const name = 'settle_20261012_a01.csv';
    await r.put(name, sampleSettlement({ date: '2026-10-12', rows: 50, idPrefix: 'TRICKLE' }).text);
    hostile().behave({ trickle: { bytes: 16, everyMs: 200 } });
    const res = await r.run(['--json', '--sftp-timeout', '2', '--sftp-min-rate', '1024']);
    hostile().behave({});
    expect(res.status).toBe(1);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 0, failed: 1 });
    expect(j.files[0].error).toMatch(/--sftp-min-rate/);
    expect(r.ws.ledgerFiles()).toEqual([]);
    expect(parseSummary((await r.run()).stdout)).toMatchObject({ loaded: 1, rows: 50 });
  });

  it.each([
    ['answers done and does nothing', { renameNoop: true }, 'NOOP'],
    ['copies instead of moving', { renameCopies: true }, 'COPYMV'],
  ] as const)(
    'a RENAME that %s is no move: nothing recorded, no copy or temporary left, the next run moves the file',
    async (_what, wrong, idPrefix) => {
      const r = await setup();
      const name = `settle_20261013_${idPrefix.toLowerCase()}.csv`;
      const text = sampleSettlement({ date: '2026-10-13', rows: 6, idPrefix }).text;
      await r.put(name, text);
      const first = await r.run(['--json'], hookAt('before-move', hostile().behaveCommand(wrong)));
      hostile().behave({});
      expect(first.status).toBe(1);
      expect(JSON.parse(first.stdout)).toMatchObject({ loaded: 1, move_failed: 1 });
      expect(r.ws.ledgerFile(name)).toMatchObject({ state: 'loaded', location: null });
      expect(await r.files('intake')).toEqual([name]);
      expect(await r.files('archive')).toEqual([]);
      await expectNoTemporaries(r);

      const second = await r.run(['--json']);
      expect(second.status).toBe(0);
      expect(JSON.parse(second.stdout)).toMatchObject({ loaded: 0, skipped: 0, finished_moves: [expect.objectContaining({ name })] });
      expect(await r.files('archive')).toEqual([name]);
      expect(await r.read('archive', name)).toBe(text);
      expect(await r.files('duplicates')).toEqual([]);
    },
  );

  it('the look for a final folder that is the intake (a folder of its own made there) leaves nothing behind when the connection drops before its RMDIR', async () => {
    const r = await setup();
    const name = 'settle_20261019_a01.csv';
    await r.put(name, sampleSettlement({ date: '2026-10-19', rows: 3, idPrefix: 'PROBEDROP' }).text);
    hostile().behave({ dropAfterMkdir: '/archive/.settle-moving-' });
    const res = await r.run(['--json']);
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    expect(hostile().now().dropAfterMkdir).toBeUndefined(); // the connection was dropped there
    expect(await r.files('archive')).toEqual([name]);
    expect(await r.files('intake')).toEqual([]);
    await expectNoTemporaries(r);
  });

  it('a listing whose attributes describe what a link points to is caught by its own ls -l line: the link is left alone', async () => {
    const r = await setup();
    const outside = join(r.root, 'outside.csv');
    await writeFile(outside, sampleSettlement({ date: '2026-10-18', rows: 3, idPrefix: 'LISTLIE' }).text);
    await symlink(outside, join(r.intake, 'settle_20261018_a01.csv'));
    hostile().behave({ listFollows: true, lstatFollows: true });
    const res = await r.run(['--json']);
    expect(res.status).toBe(0);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 0, ignored: 1 });
    expect(j.files).toEqual([expect.objectContaining({ name: 'settle_20261018_a01.csv', error: expect.stringMatching(/symbolic link/) })]);
    expect(await rowsWithPrefix(db, 'LISTLIE')).toBe(0);
    expect(await readlink(join(r.intake, 'settle_20261018_a01.csv'))).toBe(outside);
  });
});

describe('DSA host keys, refused as a host key problem', () => {
  it('a known_hosts that has only a DSA key for the server refuses it (exit 2): nothing listed, nothing downloaded', async () => {
    const server = servers.get('openssh')!;
    const r = await remoteIntake(server, db.url);
    await r.put('settle_20261014_a01.csv', sampleSettlement({ date: '2026-10-14', rows: 2, idPrefix: 'DSAKH' }).text);
    const dsa = join(r.ws.root, 'dsa');
    execFileSync('ssh-keygen', ['-q', '-t', 'dsa', '-N', '', '-f', dsa]);
    const knownHosts = join(r.ws.root, 'known_hosts');
    await writeFile(knownHosts, `[127.0.0.1]:${server.port} ${(await readFile(`${dsa}.pub`, 'utf8')).split(' ').slice(0, 2).join(' ')}\n`);
    const res = await r.run(['--known-hosts', knownHosts]);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/has only a ssh-dss key for \[127\.0\.0\.1\]:\d+ \(DSA \(ssh-dss\) host keys are refused/);
    expect(r.ws.runs()).toEqual([expect.objectContaining({ status: 'not_started', exit_status: 2 })]);
    expect(await r.files('intake')).toEqual(['settle_20261014_a01.csv']);
  });

  it('a server that offers only a DSA host key is refused (exit 2), even with that key in known_hosts, and what it offers is named', async () => {
    const dsaOnly = await HostileSftpServer.start({ hostKeyType: 'dsa' });
    try {
      const r = await remoteIntake(dsaOnly, db.url);
      await r.put('settle_20261015_a01.csv', sampleSettlement({ date: '2026-10-15', rows: 2, idPrefix: 'DSAONLY' }).text);
      const res = await r.run();
      expect(res.status).toBe(2);
      expect(res.stderr).toMatch(/offers no host key this tool accepts \(it offers ssh-dss\).*DSA \(ssh-dss\) keys are refused/);
      expect(r.ws.ledgerFiles()).toEqual([]);
      expect(await r.files('intake')).toEqual(['settle_20261015_a01.csv']);
    } finally {
      await dsaOnly.destroy();
    }
  });
});

describe('on a terminal', () => {
  it('shows a long download’s progress, then clears it for the summary', async () => {
    const server = servers.get('openssh')!;
    const r = await remoteIntake(server, db.url);
    await r.put('settle_20261016_a01.csv', sampleSettlement({ date: '2026-10-16', rows: 40_000, idPrefix: 'TTY' }).text);
    // script(1) gives the run a terminal of its own, as an operator's shell does
    const command = [process.execPath, BIN, ...r.args(['--log-file', join(r.ws.root, 'run.log')])].map((a) => `'${a}'`).join(' ');
    const res = await finished(
      spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, DATABASE_URL: db.url }, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/\r\x1b\[Ksettle_20261016_a01\.csv: \d+% read · [\d.]+ of [\d.]+ MB/);
    expect(res.stdout).toMatch(/\r\x1b\[Krun \S+ done: loaded=1 /);
  });
});
