import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, type RunnerTask } from 'vitest';
import { startLeftovers } from './leftovers.js';

/*
 * Each test file gets a temporary folder of its own as TMPDIR, which the CLI subprocesses
 * inherit: workspaces, ledgers and the staging folders of killed runs all land in it. After a
 * file whose tests all passed it is removed, with the cloned databases; after a failure all of
 * it is kept and its place printed, for inspection.
 */
const outer = process.env.TMPDIR;
const root = mkdtempSync(join(tmpdir(), 'settle-test-'));
chmodSync(root, 0o755); // as root, the sshd and PostgreSQL helpers may run as another user
const registry = startLeftovers(root);
process.env.TMPDIR = root;

/** A failed test or hook anywhere in the file (an `it.fails` that failed as expected passed). */
function anyFailed(task: Readonly<RunnerTask>): boolean {
  return task.result?.state === 'fail' || ('tasks' in task && task.tasks.some(anyFailed));
}

// vitest hands hooks their fixtures first (an object pattern is required), the file second
afterAll(async ({}, file) => {
  if (outer === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = outer;
  if (anyFailed(file)) {
    const kept = [registry.root, ...registry.items.map((l) => l.what)];
    process.stderr.write(`${file.name}: kept for inspection:\n${kept.map((k) => `  ${k}\n`).join('')}`);
    return;
  }
  for (const l of registry.items.reverse()) await l.remove();
  rmSync(registry.root, { recursive: true, force: true });
});
