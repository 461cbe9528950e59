import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

async function rowsWith(prefix: string): Promise<number> {
  const r = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE $1', [
    `${prefix}-%`,
  ]);
  return Number(r.rows[0]!.n);
}

/** Runs a shell command at an injection point of the run (src/faults.ts), for the file in hand. */
const hookAt = (step: string, command: string) => ({ SETTLE_TEST_FAULT: `hook:${step}`, SETTLE_TEST_HOOK: command });

/** The partner's uploader putting `from` under the name in hand: by rename over it, or by rewriting it in place. */
const reupload = (ws: Workspace, from: string, how: 'rename' | 'in-place') =>
  how === 'rename'
    ? `cp "${from}" "${ws.intake}/.upload.tmp" && mv -f "${ws.intake}/.upload.tmp" "${ws.intake}/$SETTLE_TEST_HOOK_FILE"`
    : `cat "${from}" > "${ws.intake}/$SETTLE_TEST_HOOK_FILE"`;

describe('the bytes decided are the bytes kept', () => {
  it.each(['rename', 'in-place'] as const)(
    'a re-upload (%s) between staging and the move: the staged bytes are archived, the new upload stays and loads next run',
    async (how) => {
      const ws = await Workspace.create(db.url);
      const prefix = how === 'rename' ? 'REUPR' : 'REUPI';
      const name = `settle_20260901_${how === 'rename' ? 'r' : 'i'}01.csv`;
      const v1 = sampleSettlement({ date: '2026-09-01', rows: 20, idPrefix: `${prefix}1` }).text;
      const v2 = sampleSettlement({ date: '2026-09-01', rows: 25, idPrefix: `${prefix}2` }).text;
      await ws.put(name, v1);
      const v2Path = join(ws.root, 'v2.csv');
      await writeFile(v2Path, v2);

      const first = await ws.run([], hookAt('before-move', reupload(ws, v2Path, how)));
      expect(first.status).toBe(1);
      expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, rows: 20 });
      expect(await ws.files('archive')).toEqual([name]);
      expect(sha256(await ws.read('archive', name))).toBe(sha256(v1));
      expect(await ws.files('intake')).toEqual([name]); // no leftovers of the move either
      expect((await ws.read('intake', name)).toString()).toBe(v2);
      expect([await rowsWith(`${prefix}1`), await rowsWith(`${prefix}2`)]).toEqual([20, 0]);
      expect(ws.ledgerFile(name)).toMatchObject({ state: 'loaded', sha256: sha256(v1), location: join(ws.archive, name) });
      const fromStaging = ws.events().filter((e) => e.event === 'moved' && e.details.bytesFrom === 'staging');
      expect(fromStaging).toEqual([expect.objectContaining({ name, details: expect.objectContaining({ intakeNameReplaced: true }) })]);

      const second = await ws.run();
      expect(second.status).toBe(0);
      expect(parseSummary(second.stdout)).toMatchObject({ loaded: 1, rows: 25 });
      expect([await rowsWith(`${prefix}1`), await rowsWith(`${prefix}2`)]).toEqual([20, 25]);
      const v2Archived = name.replace(/\.csv$/, '.1.csv');
      expect(await ws.files('archive')).toEqual([v2Archived, name].sort());
      expect((await ws.read('archive', v2Archived)).toString()).toBe(v2);
      expect(await ws.files('intake')).toEqual([]);
    },
  );

  it('a re-upload landing between the move’s link and its removal of the name stays in the intake, byte for byte', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20260902_a01.csv';
    const v1 = sampleSettlement({ date: '2026-09-02', rows: 15, idPrefix: 'MIDM1' }).text;
    const v2 = sampleSettlement({ date: '2026-09-02', rows: 16, idPrefix: 'MIDM2' }).text;
    await ws.put(name, v1);
    const v2Path = join(ws.root, 'v2.csv');
    await writeFile(v2Path, v2);

    const first = await ws.run([], hookAt('mid-move', reupload(ws, v2Path, 'rename')));
    expect(first.status).toBe(0);
    expect((await ws.read('archive', name)).toString()).toBe(v1);
    expect(await ws.files('intake')).toEqual([name]);
    expect((await ws.read('intake', name)).toString()).toBe(v2);

    const second = await ws.run();
    expect(parseSummary(second.stdout)).toMatchObject({ loaded: 1, rows: 16 });
    expect([await rowsWith('MIDM1'), await rowsWith('MIDM2')]).toEqual([15, 16]);
  });
});

describe('only regular files, never followed', () => {
  it('refuses a file swapped after listing for a symlink (to a CSV, to a password file) or a FIFO, touching none, reading none', async () => {
    const ws = await Workspace.create(db.url);
    const outside = await mkdtemp(join(tmpdir(), 'settle-outside-'));
    const outsideCsv = join(outside, 'other.csv');
    await writeFile(outsideCsv, sampleSettlement({ date: '2026-09-03', rows: 10, idPrefix: 'OUTSIDE' }).text);
    const password = 'S3cret-Pa55word-never-to-be-seen';
    const pgpass = join(outside, '.pgpass');
    await writeFile(pgpass, `db.internal:5432:finance:ingest:${password}\n`);
    for (const n of ['a01', 'a02', 'a03']) await ws.put(`settle_20260903_${n}.csv`, 'settlement_date\n');
    await ws.put('settle_20260903_b01.csv', sampleSettlement({ date: '2026-09-03', rows: 5, idPrefix: 'SWAPOK' }).text);
    const swap = `f="${ws.intake}/$SETTLE_TEST_HOOK_FILE"; case "$SETTLE_TEST_HOOK_FILE" in
      *a01*) ln -sfn "${outsideCsv}" "$f" ;;
      *a02*) ln -sfn "${pgpass}" "$f" ;;
      *a03*) rm "$f" && mkfifo "$f" ;;
    esac`;
    const logFile = join(ws.root, 'run.log');

    const r = await ws.run(['--json', '--log-file', logFile], hookAt('before-open', swap));
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, failed: 3, rows: 5 });
    const errors = Object.fromEntries(
      j.files.filter((f: { outcome: string }) => f.outcome === 'failed').map((f: any) => [f.name, f.error]),
    );
    expect(errors).toEqual({
      'settle_20260903_a01.csv': expect.stringMatching(/symbolic link.*refused/),
      'settle_20260903_a02.csv': expect.stringMatching(/symbolic link.*refused/),
      'settle_20260903_a03.csv': expect.stringMatching(/FIFO.*refused/),
    });
    expect(await rowsWith('OUTSIDE')).toBe(0);
    expect(await rowsWith('SWAPOK')).toBe(5);
    // left untouched in the intake, as they are
    expect(await ws.files('intake')).toEqual(['settle_20260903_a01.csv', 'settle_20260903_a02.csv', 'settle_20260903_a03.csv']);
    expect(await readlink(join(ws.intake, 'settle_20260903_a01.csv'))).toBe(outsideCsv);
    expect(await readlink(join(ws.intake, 'settle_20260903_a02.csv'))).toBe(pgpass);
    expect((await lstat(join(ws.intake, 'settle_20260903_a03.csv'))).isFIFO()).toBe(true);
    expect(await ws.files('rejected')).toEqual([]);
    // the password file was never read: its line is nowhere
    const ledgerBytes = Buffer.concat([await readFile(ws.ledger), await readFile(`${ws.ledger}-wal`).catch(() => Buffer.alloc(0))]);
    for (const [where, text] of Object.entries({
      stdout: r.stdout,
      stderr: r.stderr,
      log: await readFile(logFile, 'utf8'),
      ledger: ledgerBytes.toString('latin1'),
      events: JSON.stringify(ws.events()),
    })) {
      expect(text.includes(password), where).toBe(false);
      expect(text.includes('db.internal'), where).toBe(false);
    }
  });
});

/** Root may mount; elsewhere these cases cannot be staged and are reported as skipped. */
const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0;

describe('final folders', () => {
  it.each(['--rejected', '--archive'])('refuses %s given as a symlink to the intake (exit 2), touching nothing', async (option) => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20260904_a01.csv';
    const text = sampleSettlement({ date: '2026-09-04', rows: 5, idPrefix: `ALIAS${option.slice(2, 5).toUpperCase()}` }).text;
    await ws.put(name, text);
    const alias = join(ws.root, 'looks-like-another-folder');
    await symlink(ws.intake, alias);
    const r = await ws.run([option, alias]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringContaining(`${option} ${alias} is the intake folder`)]);
    expect(await ws.files('intake')).toEqual([name]);
    expect((await ws.read('intake', name)).toString()).toBe(text);
    expect(ws.ledgerFiles()).toEqual([]);
  });

  it.runIf(canMount)('refuses a final folder that is a bind mount of the intake (exit 2), touching nothing', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260904_b01.csv', 'anything');
    const mirror = join(ws.root, 'mirror');
    await mkdir(mirror);
    execFileSync('mount', ['--bind', ws.intake, mirror]);
    try {
      const r = await ws.run(['--duplicates', mirror]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`--duplicates ${mirror} is the intake folder`);
      expect(await ws.files('intake')).toEqual(['settle_20260904_b01.csv']);
    } finally {
      execFileSync('umount', [mirror]);
    }
  });
});

describe('staging', () => {
  it.runIf(canMount)(
    'a file too big for the staging disk fails alone: no partial copy is kept, the next file stages and loads',
    async () => {
      const ws = await Workspace.create(db.url);
      const tiny = await mkdtemp(join(tmpdir(), 'settle-tiny-'));
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', tiny]);
      const seen = join(ws.root, 'staging-seen.txt');
      try {
        await ws.put('settle_20260905_a01.csv', sampleSettlement({ date: '2026-09-05', rows: 3000, idPrefix: 'STBIG' }).text);
        await ws.put('settle_20260905_b01.csv', sampleSettlement({ date: '2026-09-05', rows: 5, idPrefix: 'STSMALL' }).text);
        // as each file is about to be staged, what the staging disk holds
        const look = `echo "$SETTLE_TEST_HOOK_FILE $(find "${tiny}" -type f ! -name owner.json | wc -l)" >> "${seen}"`;
        const r = await ws.run(['--staging', tiny, '--json'], hookAt('before-open', look));
        expect(r.status).toBe(1);
        const j = JSON.parse(r.stdout);
        expect(j).toMatchObject({ loaded: 1, failed: 1, rows: 5 });
        expect(j.files.find((f: { outcome: string }) => f.outcome === 'failed')).toMatchObject({
          name: 'settle_20260905_a01.csv',
          error: expect.stringMatching(/staging failed: .*ENOSPC/),
        });
        expect((await readFile(seen, 'utf8')).trim().split('\n')).toEqual(['settle_20260905_a01.csv 0', 'settle_20260905_b01.csv 0']);
        expect(await ws.files('intake')).toEqual(['settle_20260905_a01.csv']);
        expect(await rowsWith('STSMALL')).toBe(5);
        expect(await rowsWith('STBIG')).toBe(0);
      } finally {
        execFileSync('umount', [tiny]);
      }
    },
  );

  it('loads a file whose name is 255 bytes long and archives it under that name, and a second upload of it beside it', async () => {
    const ws = await Workspace.create(db.url);
    const name = `settle_${'é'.repeat(60)}${'x'.repeat(124)}.csv`;
    expect(Buffer.byteLength(name)).toBe(255);
    const v1 = sampleSettlement({ date: '2026-09-06', rows: 7, idPrefix: 'LONG1' }).text;
    await ws.put(name, v1);
    const first = await ws.run();
    expect(first.status).toBe(0);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, rows: 7 });
    expect(await ws.files('archive')).toEqual([name]);
    expect((await ws.read('archive', name)).toString()).toBe(v1);

    await ws.put(name, sampleSettlement({ date: '2026-09-06', rows: 8, idPrefix: 'LONG2' }).text);
    const second = await ws.run();
    expect(second.status).toBe(0);
    const archived = await ws.files('archive');
    expect(archived).toHaveLength(2);
    for (const n of archived) expect(Buffer.byteLength(n)).toBeLessThanOrEqual(255);
    expect([await rowsWith('LONG1'), await rowsWith('LONG2')]).toEqual([7, 8]);
  });
});
