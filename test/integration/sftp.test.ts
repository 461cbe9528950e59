import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, startCli } from '../support/cli.js';
import { remoteIntake } from '../support/remoteIntake.js';
import { TestSshd } from '../support/sshd.js';
import { financeDatabase, parseSummary, sharedFinanceDatabase, ROWS_WITH_SOURCE } from '../support/workspace.js';

const db = sharedFinanceDatabase();
let sshd: TestSshd;
beforeAll(async () => {
  sshd = await TestSshd.start();
});
afterAll(async () => sshd?.destroy());

/** A folder tree on the SFTP server (this machine) plus a local workspace for the ledger. */
const remoteSetup = (databaseUrl = db.url) => remoteIntake(sshd, databaseUrl);

/** One 20-row file in a remote intake, and a run whose connection is cut (once) just before it lists the intake. */
async function runCutAtListing(cut: 'sftp-channel' | 'server', name: string, date: string) {
  const r = await remoteSetup();
  await r.put(name, sampleSettlement({ date, rows: 20, idPrefix: `S${date.replaceAll('-', '')}` }).text);
  const hook = sshd.cutCommand({ cut, once: join(r.ws.root, 'cut-once') });
  const res = await r.ws.cli(r.args(['--log-file', join(r.ws.root, 'run.log')]), {
    SETTLE_TEST_FAULT: 'hook:before-list',
    SETTLE_TEST_HOOK: hook,
  });
  return { r, res };
}

async function rowsFrom(name: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ROWS_WITH_SOURCE} WHERE source_name = $1`, [name]);
  return Number(r.rows[0]!.n);
}

describe('an sftp:// intake on a real OpenSSH server', () => {
  it('replays the incident night: a01 loaded, a02 with the same bytes skipped, both moved on the server', async () => {
    const r = await remoteSetup();
    const a01 = sampleSettlement({ date: '2026-08-01', rows: 1240, idPrefix: 'SFTP1' }).text;
    await r.put('settle_20260801_a01.csv', a01);
    const first = await r.run();
    expect(first.status).toBe(0);
    const s1 = parseSummary(first.stdout);
    expect(s1).toMatchObject({ loaded: 1, rows: 1240 });

    await r.put('settle_20260801_a02.csv', a01);
    const second = await r.run(['--json']);
    expect(second.status).toBe(0);
    const j = JSON.parse(second.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 1 });
    expect(j.files[0].duplicate_of).toMatchObject({ name: 'settle_20260801_a01.csv', run: s1.run });

    expect(await r.files('intake')).toEqual([]);
    expect(await r.files('archive')).toEqual(['settle_20260801_a01.csv']);
    expect(await r.files('duplicates')).toEqual(['settle_20260801_a02.csv']);
    expect(await rowsFrom('settle_20260801_a01.csv')).toBe(1240);
    expect(r.ws.ledgerFile('settle_20260801_a01.csv')?.location).toBe(
      `sftp://127.0.0.1:${sshd.port}${r.root}/archive/settle_20260801_a01.csv`,
    );
  });

  it('audits and reprocesses against the archive on the server', async () => {
    // audit compares every load in the database with this ledger: give it a database of its own
    const own = await financeDatabase();
    try {
      const r = await remoteSetup(own.url);
      await r.put('settle_20260808_a01.csv', sampleSettlement({ date: '2026-08-08', rows: 30, idPrefix: 'SAUD' }).text);
      expect((await r.run()).status).toBe(0);
      const remote = [
        '--intake',
        sshd.url(r.intake),
        '--ledger',
        r.ws.ledger,
        '--sftp-key',
        sshd.clientKey,
        '--known-hosts',
        sshd.knownHosts,
      ];
      const audit = await r.ws.cli(['audit', ...remote]);
      expect(audit.stdout).toMatch(/audit clean: 6 checks, 0 discrepancies/);
      expect(audit.status).toBe(0);
      const re = await r.ws.cli(['run', '--reprocess', '--reason', 'check over sftp', '--files', 'settle_20260808_a01.csv', ...remote]);
      expect(re.stdout).toMatch(/reprocess done: reprocessed=1 rejected=0 failed=0 rows=30/);
      expect(re.status).toBe(0);
      expect(await r.files('archive')).toEqual(['settle_20260808_a01.csv']);
    } finally {
      await own.close();
    }
  });

  it('accepts a pinned host key fingerprint instead of known_hosts', async () => {
    const r = await remoteSetup();
    await r.put('settle_20260802_a01.csv', sampleSettlement({ date: '2026-08-02', rows: 5, idPrefix: 'SFTP2' }).text);
    const fp = execFileSync('ssh-keygen', ['-lf', join(sshd.dir, 'host_ed25519.pub')], { encoding: 'utf8' }).split(' ')[1]!;
    const args = r.args(['--host-key-fingerprint', fp]).filter((a, i, all) => a !== '--known-hosts' && all[i - 1] !== '--known-hosts');
    const res = await r.ws.cli(args);
    expect(res.status).toBe(0);
    expect(parseSummary(res.stdout)).toMatchObject({ loaded: 1 });
  });

  it.each([
    ['a changed key', 'other', /has CHANGED: .* the server offered ssh-ed25519 key SHA256:/],
    ['an unknown host', 'none', /is not in .*known_hosts.*: the server offered ssh-ed25519 key SHA256:/],
  ])('refuses %s, showing the offered fingerprint, with nothing downloaded or loaded', async (_what, kind, message) => {
    const r = await remoteSetup();
    await r.put('settle_20260803_a01.csv', sampleSettlement({ date: '2026-08-03', rows: 5, idPrefix: 'MITM' }).text);
    const known = join(r.ws.root, 'known_hosts');
    if (kind === 'other') {
      const other = join(r.ws.root, 'other_key');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
      const pub = (await readFile(`${other}.pub`, 'utf8')).split(' ').slice(0, 2).join(' ');
      await writeFile(known, `[127.0.0.1]:${sshd.port} ${pub}\n`);
    } else {
      await writeFile(known, `[127.0.0.1]:1 ${sshd.hostKeyPub}\n`);
    }
    const staging = await mkdtemp(join(tmpdir(), 'settle-staging-'));
    const res = await r.ws.cli([...r.args(['--known-hosts', known, '--staging', staging])]);
    expect(res.status).toBe(2);
    const realFp = execFileSync('ssh-keygen', ['-lf', join(sshd.dir, 'host_ed25519.pub')], { encoding: 'utf8' }).split(' ')[1]!;
    expect(res.stderr).toMatch(message);
    expect(res.stderr).toContain(realFp);
    expect(await readdir(staging)).toEqual([]);
    expect(await r.files('intake')).toEqual(['settle_20260803_a01.csv']);
    // the run is kept as one that could not start, with its reason and exit status
    expect(r.ws.runs()).toEqual([
      expect.objectContaining({ status: 'not_started', exit_status: 2, reason: expect.stringMatching(message) }),
    ]);
    expect(r.ws.events()).toEqual([]);
    expect(await rowsFrom('settle_20260803_a01.csv')).toBe(0);
  });

  it('does not load half of a remote file that is still growing', async () => {
    const r = await remoteSetup();
    const full = sampleSettlement({ date: '2026-08-04', rows: 300, idPrefix: 'SGROW' }).text.split('\n');
    const path = join(r.intake, 'settle_20260804_a01.csv');
    await writeFile(path, '');
    let growing = true;
    const grower = (async () => {
      // a slow upload: a line every 200 ms, so the whole-second remote mtime keeps moving
      for (let i = 0; growing && i < full.length; i++) {
        await writeFile(path, `${full[i]}\n`, { flag: 'a' });
        await sleep(200);
      }
    })();
    try {
      const res = await r.run(['--stable-for', '2', '--max-wait', '4']);
      expect(res.status).toBe(0);
      expect(parseSummary(res.stdout)).toMatchObject({ loaded: 0, not_ready: 1 });
    } finally {
      growing = false;
      await grower;
    }
    expect(await rowsFrom('settle_20260804_a01.csv')).toBe(0);
    expect(await r.files('intake')).toEqual(['settle_20260804_a01.csv']);
  });

  it('survives the server going away mid-download: one line, exit 1, nothing claimed; the next run completes', async () => {
    const r = await remoteSetup();
    // large enough (about 70 MiB) that the download is surely still running when the server is stopped
    const big = sampleSettlement({ date: '2026-08-05', rows: 1_000_000, idPrefix: 'SCUT' }).text;
    await r.put('settle_20260805_a01.csv', big);
    const staging = await mkdtemp(join(tmpdir(), 'settle-staging-'));
    const child = startCli(r.args(['--staging', staging, '--log-file', join(r.ws.root, 'run.log')]), { DATABASE_URL: db.url });
    const done = finished(child);
    // cut the connection once the download has started
    let downloading = false;
    for (let i = 0; i < 2000 && !downloading && child.exitCode === null; i++) {
      for (const d of await readdir(staging).catch(() => [])) {
        for (const f of await readdir(join(staging, d)).catch(() => [])) {
          if (f === 'owner.json') continue; // the run's own note of who owns the folder, not a download
          if ((await stat(join(staging, d, f)).catch(() => null))?.size) downloading = true;
        }
      }
      if (!downloading) await sleep(5);
    }
    expect(downloading).toBe(true);
    await sshd.stop();
    const res = await done;
    await sshd.resume();
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(/SFTP server .* is unreachable after \d attempts/)]);
    expect(r.ws.ledgerFiles()).toEqual([]); // nothing claimed for an incomplete download
    expect(await r.files('intake')).toEqual(['settle_20260805_a01.csv']);
    expect((await stat(join(r.intake, 'settle_20260805_a01.csv'))).size).toBe(Buffer.byteLength(big));
    expect(await rowsFrom('settle_20260805_a01.csv')).toBe(0);

    const next = await r.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 1_000_000 });
    expect(await r.files('archive')).toEqual(['settle_20260805_a01.csv']);
  });

  it('reconnects when the server ends the SFTP channel during a listing, and the run completes (exit 0)', async () => {
    const { r, res } = await runCutAtListing('sftp-channel', 'settle_20260820_a01.csv', '2026-08-20');
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    expect(parseSummary(res.stdout)).toMatchObject({ loaded: 1, failed: 0, rows: 20 });
    expect(await r.files('intake')).toEqual([]);
    expect(await r.files('archive')).toEqual(['settle_20260820_a01.csv']);
    expect(await rowsFrom('settle_20260820_a01.csv')).toBe(20);
  });

  it('a server gone during a listing is a transient failure: exit 1 with the reason, the file stays, the next run loads it', async () => {
    const { r, res } = await runCutAtListing('server', 'settle_20260821_a01.csv', '2026-08-21');
    await sshd.resume();
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(/SFTP server .* is unreachable after \d attempts/)]);
    expect(r.ws.ledgerFiles()).toEqual([]);
    expect(await r.files('intake')).toEqual(['settle_20260821_a01.csv']);
    expect(await rowsFrom('settle_20260821_a01.csv')).toBe(0);

    const next = await r.run();
    expect(next.status).toBe(0);
    expect(parseSummary(next.stdout)).toMatchObject({ loaded: 1, rows: 20 });
    expect(await r.files('archive')).toEqual(['settle_20260821_a01.csv']);
  });

  it('finishes the move on the server when a run was killed between load and move', async () => {
    const r = await remoteSetup();
    const f = sampleSettlement({ date: '2026-08-07', rows: 9, idPrefix: 'SMOVE' }).text;
    await r.put('settle_20260807_a01.csv', f);
    const killed = await r.ws.cli(r.args(), { SETTLE_TEST_FAULT: 'after-finalize' });
    expect(killed.signal).toBe('SIGKILL');
    expect(await r.files('intake')).toEqual(['settle_20260807_a01.csv']);
    const again = await r.run();
    expect(again.status).toBe(0);
    expect(await r.files('intake')).toEqual([]);
    expect(await r.files('archive')).toEqual(['settle_20260807_a01.csv']);
    expect(await r.files('duplicates')).toEqual([]);
    expect(await rowsFrom('settle_20260807_a01.csv')).toBe(9);
  });

  it('keeps both files when the remote archive already has the name', async () => {
    const r = await remoteSetup();
    await mkdir(join(r.root, 'archive'));
    await writeFile(join(r.root, 'archive', 'settle_20260806_a01.csv'), 'an older file with this name\n');
    const f = sampleSettlement({ date: '2026-08-06', rows: 7, idPrefix: 'SCLASH' }).text;
    await r.put('settle_20260806_a01.csv', f);
    const res = await r.run();
    expect(res.status).toBe(0);
    expect(await r.files('archive')).toEqual(['settle_20260806_a01.1.csv', 'settle_20260806_a01.csv']);
    expect(await readFile(join(r.root, 'archive', 'settle_20260806_a01.csv'), 'utf8')).toBe('an older file with this name\n');
    expect(await readFile(join(r.root, 'archive', 'settle_20260806_a01.1.csv'), 'utf8')).toBe(f);
  });
});

describe('the bytes decided are the bytes kept, on an SFTP server', () => {
  /** Runs a shell command on the server's folders at an injection point of the run (src/faults.ts). */
  const hookAt = (step: string, command: string) => ({ SETTLE_TEST_FAULT: `hook:${step}`, SETTLE_TEST_HOOK: command });

  it('refuses a symlink in the remote intake, listed as one or swapped in after listing, leaving both as they are', async () => {
    const r = await remoteSetup();
    const outside = join(r.root, 'elsewhere.csv');
    await writeFile(outside, sampleSettlement({ date: '2026-08-10', rows: 6, idPrefix: 'SOUT' }).text);
    await symlink(outside, join(r.intake, 'settle_20260810_a01.csv'));
    await r.put('settle_20260810_b01.csv', 'settlement_date\n');
    await r.put('settle_20260810_c01.csv', sampleSettlement({ date: '2026-08-10', rows: 4, idPrefix: 'SLINKOK' }).text);
    const swap = `case "$SETTLE_TEST_HOOK_FILE" in *b01*) ln -sfn "${outside}" "${r.intake}/$SETTLE_TEST_HOOK_FILE" ;; esac`;
    const res = await r.ws.cli(r.args(['--json']), hookAt('before-open', swap));
    expect(res.status).toBe(1);
    const j = JSON.parse(res.stdout);
    expect(j).toMatchObject({ loaded: 1, failed: 1, rows: 4 });
    expect(j.files.find((f: { outcome: string }) => f.outcome === 'failed')).toMatchObject({
      name: 'settle_20260810_b01.csv',
      error: expect.stringMatching(/symbolic link.*refused/),
    });
    const rows = await db.client.query<{ n: string }>(
      `SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'SOUT-%'`,
    );
    expect(Number(rows.rows[0]!.n)).toBe(0);
    expect(await r.files('intake')).toEqual(['settle_20260810_a01.csv', 'settle_20260810_b01.csv']);
    for (const n of ['settle_20260810_a01.csv', 'settle_20260810_b01.csv']) expect(await readlink(join(r.intake, n))).toBe(outside);
    expect(await r.files('archive')).toEqual(['settle_20260810_c01.csv']);
  });

  it('a remote re-upload between staging and the move: the staged bytes are archived, the new upload stays and loads next run', async () => {
    const r = await remoteSetup();
    const name = 'settle_20260811_a01.csv';
    const v1 = sampleSettlement({ date: '2026-08-11', rows: 11, idPrefix: 'SREUP1' }).text;
    const v2 = sampleSettlement({ date: '2026-08-11', rows: 12, idPrefix: 'SREUP2' }).text;
    await r.put(name, v1);
    const v2Path = join(r.ws.root, 'v2.csv');
    await writeFile(v2Path, v2);
    // the partner rewrites the file on the server while the run is between its load and its move
    const first = await r.ws.cli(r.args(), hookAt('before-move', `cat "${v2Path}" > "${r.intake}/$SETTLE_TEST_HOOK_FILE"`));
    expect(first.status).toBe(1);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, rows: 11 });
    expect(await r.files('archive')).toEqual([name]);
    expect(await readFile(join(r.root, 'archive', name), 'utf8')).toBe(v1);
    expect(await r.files('intake')).toEqual([name]);
    expect(await readFile(join(r.intake, name), 'utf8')).toBe(v2);
    expect(await rowsFrom(name)).toBe(11);
    const fromStaging = r.ws.events().filter((e) => e.event === 'moved' && e.details.bytesFrom === 'staging');
    expect(fromStaging).toEqual([expect.objectContaining({ name, details: expect.objectContaining({ intakeNameReplaced: true }) })]);

    const second = await r.run();
    expect(second.status).toBe(0);
    expect(parseSummary(second.stdout)).toMatchObject({ loaded: 1, rows: 12 });
    expect(await rowsFrom(name)).toBe(23);
    expect(await r.files('archive')).toEqual(['settle_20260811_a01.1.csv', name]);
    expect(await readFile(join(r.root, 'archive', 'settle_20260811_a01.1.csv'), 'utf8')).toBe(v2);
    expect(await r.files('intake')).toEqual([]);
  });
});
