import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { parseSummary, SHARED_DEFAULT_LAYOUT, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// Every file a command writes for a person or a tool is created new (O_EXCL|O_NOFOLLOW, a name
// nobody can guess) in a folder it checked, and renamed into place: a link another user put
// where the file goes, or where its temporary used to go, never receives a byte.

const db = sharedFinanceDatabase();

/** Another user's bait: a private file of ours a planted link points at. */
async function victim(ws: Workspace): Promise<string> {
  const path = join(ws.root, 'victim');
  await writeFile(path, 'root only\n', { mode: 0o600 });
  return path;
}

/**
 * At the step where a file is about to be written, links to the victim at the temporary names
 * the three writers used before (`.NAME.tmp`, `.NAME.<pid>.tmp`) and at the file's own name.
 */
const PLANT_LINKS = {
  SETTLE_TEST_FAULT: 'hook:before-write',
  SETTLE_TEST_HOOK:
    'dir=$(dirname "$SETTLE_TEST_HOOK_FILE"); base=$(basename "$SETTLE_TEST_HOOK_FILE"); ' +
    'ln -sfn "$VICTIM" "$dir/.$base.tmp" && ln -sfn "$VICTIM" "$dir/.$base.$PPID.tmp" && ln -sfn "$VICTIM" "$SETTLE_TEST_HOOK_FILE"',
};

const evidenceArgs = (ws: Workspace, out: string) => {
  const today = new Date().toISOString().slice(0, 10);
  return ['report', 'evidence', '--from', today, '--to', today, '--out', out, '--intake', ws.intake, '--ledger', ws.ledger];
};

async function loaded(prefix: string): Promise<Workspace> {
  const ws = await Workspace.create(db.url);
  await ws.put(`settle_${prefix}_a01.csv`, sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: prefix }).text);
  expect((await ws.run()).status).toBe(0);
  return ws;
}

describe('links planted where a file goes', () => {
  it('report deliveries --html: a link at the page’s name is refused (exit 2); links planted during the write receive nothing, and the page is written', async () => {
    const ws = await loaded('SWH');
    const bait = await victim(ws);
    const page = join(ws.root, 'deliveries.html');
    await symlink(bait, page);
    const refused = await ws.cli(['report', 'deliveries', '--ledger', ws.ledger, '--html', page]);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(await readlink(page)).toBe(bait);

    const page2 = join(ws.root, 'page', 'deliveries.html');
    await mkdir(join(ws.root, 'page'));
    const written = await ws.cli(['report', 'deliveries', '--ledger', ws.ledger, '--html', page2], { ...PLANT_LINKS, VICTIM: bait });
    expect(written.status, written.stderr).toBe(0);
    expect(await readFile(bait, 'utf8')).toBe('root only\n');
    expect((await lstat(page2)).isFile()).toBe(true);
    expect(await readFile(page2, 'utf8')).toMatch(/^<!doctype html>/i);
  });

  it('report evidence: links planted at every file’s old temporary names and its own name receive nothing; the pack verifies', async () => {
    const ws = await loaded('SWE');
    const bait = await victim(ws);
    const out = join(ws.root, 'pack');
    const r = await ws.cli(evidenceArgs(ws, out), { ...PLANT_LINKS, VICTIM: bait });
    // written (0 or 1 is the audit's verdict on a finance database this file's tests share), not refused
    expect([0, 1], r.stderr).toContain(r.status);
    expect(await readFile(bait, 'utf8')).toBe('root only\n');
    const files = (await readdir(out)).filter((name) => !name.startsWith('.'));
    expect(files.sort()).toEqual(['MANIFEST', 'README.txt', 'SHA256SUMS.default', 'audit.json', 'audit.txt', 'events.csv', 'loads.csv']);
    for (const name of files) expect((await lstat(join(out, name))).isFile(), name).toBe(true);
    expect(execFileSync('sha256sum', ['-c', 'MANIFEST'], { cwd: out, encoding: 'utf8' }).match(/: OK$/gm)).toHaveLength(4);
  });

  it('run --metrics-file: a link at its name is left alone (the run refuses it at its start, exit 2); links planted during the write receive nothing', async () => {
    const ws = await Workspace.create(db.url);
    const bait = await victim(ws);
    const linked = join(ws.root, 'linked.prom');
    await symlink(bait, linked);
    const refused = await ws.run(['--metrics-file', linked]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/metrics file .*linked\.prom is a symbolic link/);
    expect(await readlink(linked)).toBe(bait);
    expect(await readFile(bait, 'utf8')).toBe('root only\n');

    const metrics = join(ws.root, 'metrics', 'settle.prom');
    await mkdir(join(ws.root, 'metrics'));
    expect((await ws.run(['--metrics-file', metrics], { ...PLANT_LINKS, VICTIM: bait })).status).toBe(0);
    expect(await readFile(bait, 'utf8')).toBe('root only\n');
    expect((await lstat(metrics)).isFile()).toBe(true);
    expect(await readFile(metrics, 'utf8')).toContain('settle_ingest_last_run_exit_status');
  });
});

describe('the folders written into', () => {
  it('report evidence --out a symbolic link is exit 2, and nothing is written where it points', async () => {
    const ws = await loaded('SWL');
    const elsewhere = join(ws.root, 'elsewhere');
    await mkdir(elsewhere);
    await symlink(elsewhere, join(ws.root, 'pack'));
    const r = await ws.cli(evidenceArgs(ws, join(ws.root, 'pack')));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('is a symbolic link');
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('report evidence --out inside an intake (its own, through a link, or another partner’s) is exit 2, and the next run ignores nothing more', async () => {
    const ws = await loaded('SWI');
    const before = parseSummary((await ws.run()).stdout).ignored;
    await symlink(ws.intake, join(ws.root, 'to-intake'));
    const other = join(ws.root, 'other-intake');
    await mkdir(other);
    const config = join(ws.root, 'partners.json');
    await writeFile(
      config,
      JSON.stringify({
        ledger: ws.ledger,
        layout: SHARED_DEFAULT_LAYOUT,
        partners: {
          alpha: { intake: ws.intake },
          beta: {
            intake: other,
            archive: join(ws.root, 'beta-archive'),
            duplicates: join(ws.root, 'beta-duplicates'),
            rejected: join(ws.root, 'beta-rejected'),
          },
        },
      }),
    );
    const today = new Date().toISOString().slice(0, 10);
    for (const [out, args] of [
      [join(ws.intake, 'pack'), ['--intake', ws.intake, '--ledger', ws.ledger]],
      [join(ws.root, 'to-intake', 'pack'), ['--intake', ws.intake, '--ledger', ws.ledger]],
      [join(other, 'pack'), ['--config', config, '--partner', 'alpha']],
    ] as const) {
      const r = await ws.cli(['report', 'evidence', '--from', today, '--to', today, '--out', out, ...args]);
      expect(r.status, out).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain('is inside the intake');
    }
    expect(await readdir(ws.intake)).toEqual([]);
    expect(await readdir(other)).toEqual([]);
    expect(parseSummary((await ws.run()).stdout).ignored).toBe(before);
  });

  it('a folder every user may write to that is not sticky is refused: --out, --html and, at the run start, --metrics-file (exit 2)', async () => {
    const ws = await loaded('SWW');
    const shared = join(ws.root, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    const evidence = await ws.cli(evidenceArgs(ws, shared));
    expect(evidence.status).toBe(2);
    expect(evidence.stderr).toContain('which every user may write to and which is not sticky');
    const html = await ws.cli(['report', 'deliveries', '--ledger', ws.ledger, '--html', join(shared, 'deliveries.html')]);
    expect(html.status).toBe(2);
    expect(html.stderr).toContain('which every user may write to and which is not sticky');
    const run = await ws.run(['--metrics-file', join(shared, 'settle.prom')]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('which every user may write to and which is not sticky');
    expect(await readdir(shared)).toEqual([]);
  });
});
