import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * The integration tests run the built CLI (dist/), as an operator does: a source newer than its
 * build would test yesterday's code and pass. Returns what is stale, or nothing.
 */
export function staleBuild(root = ROOT): string[] {
  const src = join(root, 'src');
  // the CLI as the bin runs it: every module joined after tsc wrote them (scripts/bundle.mjs,
  // which writes the test package's bundle just before this one)
  const bundle = join(root, 'dist', 'bundle', 'cli.cjs');
  const bundledAt = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs;
  const stale = sources(src).flatMap((file) => {
    const built = join(root, 'dist', relative(src, file).replace(/\.ts$/, '.js'));
    const builtAt = statSync(built, { throwIfNoEntry: false })?.mtimeMs;
    if (builtAt === undefined) return [`${relative(root, built)} is missing`];
    if (statSync(file).mtimeMs > builtAt) return [`${relative(root, file)} is newer than ${relative(root, built)}`];
    return bundledAt !== undefined && builtAt > bundledAt ? [`${relative(root, built)} is newer than ${relative(root, bundle)}`] : [];
  });
  return bundledAt === undefined ? [`${relative(root, bundle)} is missing`, ...stale] : stale;
}

export function assertFreshBuild(): void {
  const stale = staleBuild();
  if (stale.length === 0) return;
  const shown = stale.slice(0, 5).join('; ') + (stale.length > 5 ? `; and ${stale.length - 5} more` : '');
  throw new Error(`dist/ is older than src/ (${shown}): run \`npm run build\` first (npm test does)`);
}
