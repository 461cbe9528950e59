#!/usr/bin/env -S node --max-semi-space-size=4
// A young generation of 4 MiB semi-spaces: a row's strings die young either way, and the
// default 16 MiB ones made a 1,000,000-row run peak at 160-190 MiB instead of 130-140 MiB
// (docs/BENCHMARKS.md). Started as `node bin/settle-ingest.js` the flag is not applied.
import { main } from '../dist/cli/index.js';

// Explicit exit: a library's exit hook must not be able to turn a failure into status 0.
// Everything main() opened is closed by now, and all it printed has left the process.
process.exit(await main(process.argv));
