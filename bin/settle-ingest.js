#!/usr/bin/env node
import { main } from '../dist/cli/index.js';

// Explicit exit: a library's exit hook must not be able to turn a failure into status 0.
// Everything main() opened is closed by now, and all it printed has left the process.
process.exit(await main(process.argv));
