import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { staleBuild } from '../support/freshBuild.js';

describe('the integration tests’ build guard', () => {
  it('names a source newer than its build, a source never built, a bundle older than the build; passes a fresh build', () => {
    const root = mkdtempSync(join(tmpdir(), 'settle-build-'));
    for (const dir of ['src/pipeline', 'dist/pipeline', 'dist/bundle']) mkdirSync(join(root, dir), { recursive: true });
    const write = (path: string, at: number) => {
      writeFileSync(join(root, path), '');
      utimesSync(join(root, path), at, at);
    };
    write('src/pipeline/runIngest.ts', 1000);
    write('dist/pipeline/runIngest.js', 2000);
    write('src/types.d.ts', 3000); // declarations build to nothing
    expect(staleBuild(root)).toEqual(['dist/bundle/cli.cjs is missing']);
    write('dist/bundle/cli.cjs', 2500);
    expect(staleBuild(root)).toEqual([]);

    write('src/pipeline/runIngest.ts', 3000);
    write('src/pipeline/claimFile.ts', 1000);
    expect(staleBuild(root)).toEqual([
      'dist/pipeline/claimFile.js is missing',
      'src/pipeline/runIngest.ts is newer than dist/pipeline/runIngest.js',
    ]);

    // tsc ran again, the bundle did not (`tsc` alone instead of `npm run build`)
    write('src/pipeline/claimFile.ts', 1000);
    write('dist/pipeline/claimFile.js', 2000);
    write('dist/pipeline/runIngest.js', 4000);
    expect(staleBuild(root)).toEqual(['dist/pipeline/runIngest.js is newer than dist/bundle/cli.cjs']);
  });
});
