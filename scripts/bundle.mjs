// The CLI as shipped: dist/cli/index.js and the modules it imports, joined into dist/bundle/
// (one file for what every command loads, one chunk per part loaded on demand: SFTP, zip,
// OpenPGP, the demo). Node.js resolves, reads and links one module where it read ~100: an idle
// run costs about a quarter less (docs/BENCHMARKS.md). Packages stay in node_modules, loaded as
// they are (bundled, their code costs more to compile than it saves to resolve); dist/ keeps the
// module per file for the tests that import one (the package ships dist/bundle/ only).
//
// Twice: the shipped bundle without the test seams of src/faults.ts (SETTLE_TEST_SEAMS is
// `false`: faultPoint's body and its shell are dropped), and the test package the suite runs
// (dist/test-package/: the same bin, a bundle with the seams, the package's sql/ and
// package.json beside it), which `npm pack` leaves out.
import { build } from 'rolldown';
import { chmod, copyFile, mkdir, rm, symlink } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const testPackage = `${root}dist/test-package`;

async function bundle(out, seams) {
  await rm(out, { recursive: true, force: true });
  await build({
    input: { cli: `${root}dist/cli/index.js` },
    platform: 'node',
    // every bare specifier (a package, node:…) is loaded at run time from where it is installed
    external: (id) => !id.startsWith('.') && !id.startsWith('/'),
    transform: { define: { SETTLE_TEST_SEAMS: String(seams) } },
    logLevel: 'warn',
    // the same depth below the package as dist/<room>/, so `../../sql` and `../../package.json` hold
    output: { dir: out, format: 'esm', entryFileNames: '[name].js', chunkFileNames: '[name].js', minify: 'dce-only' },
  });
}

await rm(testPackage, { recursive: true, force: true });
await bundle(`${testPackage}/dist/bundle`, true);
await mkdir(`${testPackage}/bin`);
await copyFile(`${root}bin/settle-ingest.js`, `${testPackage}/bin/settle-ingest.js`);
await chmod(`${testPackage}/bin/settle-ingest.js`, 0o755);
for (const name of ['sql', 'package.json']) await symlink(`../../${name}`, `${testPackage}/${name}`);
// last: a shipped bundle newer than tsc's output says the test package is too (test/support/freshBuild.ts)
await bundle(`${root}dist/bundle`, false);
