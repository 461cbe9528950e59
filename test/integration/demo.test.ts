import { readdir, readFile, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

/** Command lines of all processes that mention `text`. */
async function processesMentioning(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(text)) found.push(cmd.replaceAll('\0', ' '));
  }
  return found;
}

describe('settle-ingest demo', () => {
  it('replays the incident night on its own PostgreSQL, leaves nothing running, and removes its workspace', async () => {
    const r = await runCli(['demo']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/done: loaded=1 skipped=0 .* rows=1240/);
    expect(r.stdout).toMatch(/done: loaded=0 skipped=1 /);
    expect(r.stdout).toMatch(/done: loaded=0 skipped=0 held=0 rejected=0 failed=0 not_ready=0 ignored=0 stale=0 move_failed=0 rows=0/);
    expect(r.stdout).toMatch(/rejected: settle_20260315_a01.csv — line 17, field gross_amount/);
    expect(r.stdout).toMatch(/finance database: 1 file loaded, 1240 rows/);
    expect(r.stdout).toContain('embedded PostgreSQL stopped; workspace removed.');
    // run from a checkout, not installed: the hint is a command that works here
    expect(r.stdout).toContain('npx settle-ingest demo --keep');
    const workspace = /workspace (\S+)/.exec(r.stdout)![1]!;
    expect(await readdir(workspace).catch(() => 'gone')).toBe('gone');
    expect(await processesMentioning(workspace)).toEqual([]);
  });

  it('with --keep leaves the workspace to look at, and says how to look and how to remove it', async () => {
    const r = await runCli(['demo', '--keep']);
    expect(r.status).toBe(0);
    const workspace = /workspace (\S+)/.exec(r.stdout)![1]!;
    const left = await readdir(workspace);
    expect(left).toEqual(expect.arrayContaining(['archive', 'duplicates', 'rejected', 'settle-ingest.log', 'settle-ledger.sqlite']));
    expect(left).not.toContain('postgres');
    expect(r.stdout).toContain(`npx settle-ingest report runs --ledger ${workspace}/settle-ledger.sqlite`);
    expect(r.stdout).toContain(`rm -r ${workspace}`);
    expect(await processesMentioning(workspace)).toEqual([]);
    await rm(workspace, { recursive: true, force: true });
  });
});
