import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

it("removes a dead run's staging folder at the start of a run and leaves everything else in the staging folder alone", async () => {
  const ws = await Workspace.create(db.url);
  const staging = await mkdtemp(join(tmpdir(), 'settle-shared-tmp-'));
  // a process that has ended: its pid names no live process on this host
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const owner = JSON.stringify({ host: hostname(), pid: Number(gone.stdout), startedAt: '1' });
  const folders = {
    dead: 'settle-r-20260101-0200-abcd-Xy12Zq',
    // another program's folder that merely starts with settle-, even with an owner note inside
    neighbour: 'settle-reports-cache',
    // a staging folder whose owner note is not written yet: a run may be creating it
    unwritten: 'settle-r-20260101-0300-beef-Ab34Cd',
  };
  for (const [kind, name] of Object.entries(folders)) {
    await mkdir(join(staging, name));
    if (kind !== 'unwritten') await writeFile(join(staging, name, 'owner.json'), owner);
    await writeFile(join(staging, name, '0'), 'a staged copy');
  }

  const r = await ws.run(['--staging', staging]);

  expect(r.status).toBe(0);
  const left = await readdir(staging);
  expect(left).not.toContain(folders.dead);
  expect(left).toEqual(expect.arrayContaining([folders.neighbour, folders.unwritten]));
});
