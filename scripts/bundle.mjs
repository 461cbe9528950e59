// The CLI as shipped: dist/cli/index.js and the modules it imports, joined into dist/bundle/
// (one file for what every command loads, one chunk per part loaded on demand: SFTP, zip,
// OpenPGP, the demo). Node.js resolves, reads and links one module where it read ~100: an idle
// run costs about a quarter less (docs/BENCHMARKS.md). Packages stay in node_modules, loaded as
// they are (bundled, their code costs more to compile than it saves to resolve); dist/ keeps the
// module per file for the tests that import one.
import { build } from 'rolldown';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const out = `${root}dist/bundle`;
await rm(out, { recursive: true, force: true });
await build({
  input: { cli: `${root}dist/cli/index.js` },
  platform: 'node',
  // every bare specifier (a package, node:…) is loaded at run time from where it is installed
  external: (id) => !id.startsWith('.') && !id.startsWith('/'),
  logLevel: 'warn',
  // the same depth below the package as dist/<room>/, so `../../sql` and `../../package.json` hold
  output: { dir: out, format: 'esm', entryFileNames: '[name].js', chunkFileNames: '[name].js' },
});
