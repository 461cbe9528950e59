import { spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('npm test on a machine without the tools the tests need', () => {
  it('names each missing one and its Debian package before the suite starts, and fails', () => {
    const bare = mkdtempSync(join(tmpdir(), 'settle-bare-path-'));
    symlinkSync(process.execPath, join(bare, 'node')); // npm and the test tools are not on this PATH
    const r = spawnSync(process.execPath, ['scripts/test.mjs'], { cwd: ROOT, encoding: 'utf8', env: { PATH: bare, HOME: bare } });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('missing: promtool (Debian package prometheus)');
    expect(r.stderr).toContain('missing: gpg (Debian package gnupg)');
    expect(r.stderr).toMatch(/install them first: sudo apt-get install .*prometheus/);
    expect(r.stdout.trim()).toBe('0 passed, 1 failed'); // the closing line CI reads, and nothing ran
  });
});
