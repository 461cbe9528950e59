#!/usr/bin/env -S node --max-semi-space-size=4
// A young generation of 4 MiB semi-spaces: a row's strings die young either way, and the
// default 16 MiB ones made a 1,000,000-row run peak at 160-190 MiB instead of 130-140 MiB
// (docs/BENCHMARKS.md). Started as `node bin/settle-ingest.js` the flag is not applied.

// CommonJS (bin/package.json says so): an ES module here would start Node's ES module loader
// first, about 9 ms of every start on its own (docs/BENCHMARKS.md).
'use strict';
const path = require('node:path');
const { requireBundle } = require('./codeCache.cjs');

// node-postgres asks, as it loads, whether it runs in a Cloudflare Worker; on Node.js 20 the
// question (`typeof Response`) loads Node's whole fetch implementation, which this tool never
// uses: 15-20% of an idle run's CPU (docs/BENCHMARKS.md). Without a global Response while the
// bundle (pg inside it) loads, the answer is the same "no" straight away; Response is back before
// anything else runs. (On Node.js 21 and later pg asks `navigator` first and never gets this far.)
const response = Object.getOwnPropertyDescriptor(globalThis, 'Response');
Object.defineProperty(globalThis, 'Response', { value: undefined, configurable: true, writable: true });
let main;
try {
  // the CLI joined into a few CommonJS chunks by `npm run build` (scripts/bundle.mjs), compiled
  // with the V8 code cache of their last run (bin/codeCache.cjs)
  ({ main } = requireBundle(path.join(__dirname, '..', 'dist', 'bundle'), 'cli.cjs'));
} finally {
  if (response) Object.defineProperty(globalThis, 'Response', response);
  else delete globalThis.Response;
}

// Explicit exit: a library's exit hook must not be able to turn a failure into status 0.
// Everything main() opened is closed by now, and all it printed has left the process.
// (A rejection, which main() never lets out, would end the process with status 1 as unhandled.)
void main(process.argv).then((status) => process.exit(status));
