#!/usr/bin/env node
// Runs the whole suite with vitest and ends with the plain line `N passed, N failed` that CI
// reads; exits non-zero when anything failed or when no test ran.
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';

// What the tests need beyond Node.js, said before anything starts (scripts/test-prerequisites.txt)
// a path (a server, a module) must exist; a bare name must be a command on PATH
const found = (command) =>
  (command.includes('/') ? [command] : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, command))).some((path) => {
    try {
      accessSync(path, command.includes('/') ? constants.F_OK : constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const missing = readFileSync(new URL('./test-prerequisites.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.startsWith('#'))
  .map((line) => line.trim().split(/\s+/))
  .filter(([command]) => !found(command));
if (missing.length > 0) {
  for (const [command, pkg, ...why] of missing) console.error(`missing: ${command} (Debian package ${pkg}): ${why.join(' ')}`);
  console.error(`install them first: sudo apt-get install ${[...new Set(missing.map(([, pkg]) => pkg))].join(' ')} (.ci/run does)`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const smoke = process.argv[2] === '--smoke';

/** A command to its end, its output on ours (or into `output`, a file); its exit status, or null when a signal ended it. */
function run(command, args, { env, output } = {}) {
  const fd = output === undefined ? undefined : openSync(output, 'w');
  const child = spawn(command, args, { stdio: fd === undefined ? 'inherit' : ['ignore', fd, fd], env: { ...process.env, ...env } });
  if (fd !== undefined) closeSync(fd);
  return new Promise((resolve) => {
    child.on('error', () => resolve(null));
    child.on('close', (status) => resolve(status));
  });
}

// The integration tests whose outcome depends on the server's release (migrations, the
// PostgreSQL ledger, COPY formats, privileges, catalog queries), run once more on PostgreSQL 14,
// the oldest supported (TEST_POSTGRES=14, test/support/postgres14.ts); the rest run on 18 only.
const ON_POSTGRES_14 = ['ledgerSchemas', 'ledgerVersions', 'pgLedger', 'copyFormats', 'databaseAccess', 'pgInternals', 'statements'].map(
  (name) => `test/integration/${name}.test.ts`,
);

// The unit and db projects first, in one vitest with coverage and its floors (vitest.config.ts: a
// floor missed is one failure; db runs src/finance/ and the PostgreSQL ledger in-process), then
// the integration project, then its server-sensitive part on PostgreSQL 14; or, given arguments
// (files, a filter), those alone in one vitest without coverage.
// The smoke set, the run's promises end to end: the incident night (a renamed resend skipped, an
// operator's re-run loading nothing), a run killed at every step then run again, SIGTERM, two runs
// at once, and the SFTP intake on a real OpenSSH server; with the unit project (no servers).
const SMOKE = ['incidentNight', 'crashes', 'sftp'].map((name) => `test/integration/${name}.test.ts`);

mkdirSync('.test-output', { recursive: true });

// The rules the tools hold (`npm run lint`: types of src, tests and benchmarks, the formatter's
// check, the import rules of .dependency-cruiser.cjs), checked while the integration project
// (or the tests asked for) runs: those files mostly wait on servers and subprocesses, the lint
// works one core, and the unit and db files before them have the cores to themselves. Its output
// is printed after the tests; a lint failure counts as one failure in the closing line.
// `--smoke` (npm run test:smoke) skips it: the smoke set is what to run before pushing, in minutes.
const LINT_OUTPUT = '.test-output/lint.txt';
let lint;

const runs = smoke
  ? [
      { name: 'unit', label: 'unit', args: ['--project', 'unit'] },
      { name: 'smoke', label: `smoke (${SMOKE.length} integration files)`, args: ['--project', 'integration', ...SMOKE] },
    ]
  : process.argv.length > 2
    ? [{ name: 'all', label: 'the tests asked for', args: process.argv.slice(2) }]
    : [
        { name: 'unit', label: 'unit and db', args: ['--project', 'unit', '--project', 'db', '--coverage'] },
        { name: 'integration', label: 'integration on PostgreSQL 18', args: ['--project', 'integration'] },
        {
          name: 'integration-pg14',
          label: `integration on PostgreSQL 14 (${ON_POSTGRES_14.length} files)`,
          args: ['--project', 'integration', ...ON_POSTGRES_14],
          env: { TEST_POSTGRES: '14' },
        },
      ];

let passed = 0;
let failed = 0;
let skipped = 0;
const tallies = [];
for (const { name, label, args, env } of runs) {
  if (!smoke && lint === undefined && name !== 'unit') lint = run('npm', ['run', '--silent', 'lint'], { output: LINT_OUTPUT });
  const out = `.test-output/vitest-${name}.json`;
  rmSync(out, { force: true });
  console.log(`\n=== ${label} ===`);
  const status = await run(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile=${out}`, ...args],
    { env },
  );
  let ran = 0;
  let broken = 0;
  try {
    const r = JSON.parse(readFileSync(out, 'utf8'));
    ran = r.numPassedTests;
    // a file that failed without a failed test (an import error, a crashed hook) counts once
    const brokenFiles = r.testResults.filter((f) => f.status === 'failed' && !f.assertionResults.some((t) => t.status === 'failed')).length;
    broken = r.numFailedTests + brokenFiles;
    skipped += r.numPendingTests + r.numTodoTests;
  } catch {
    broken = 1; // vitest died before writing its report
  }
  // a crash, an empty run or a coverage floor missed (vitest's status, every test passed) is a failure
  if ((status !== 0 || ran === 0) && broken === 0) broken = 1;
  passed += ran;
  failed += broken;
  tallies.push(`  ${label}: ${ran} passed, ${broken} failed`);
}
const lintStatus = await lint;
if (lint !== undefined) {
  console.log(`\n=== lint ===`);
  process.stdout.write(readFileSync(LINT_OUTPUT, 'utf8'));
}
const lintFailures = lint === undefined || lintStatus === 0 ? 0 : 1;
failed += lintFailures;
// which tests ran where, above the one closing line that CI reads
console.log(['', ...tallies, `  lint: ${lint === undefined ? 'not run (smoke)' : lintFailures ? 'failed' : 'passed'}`].join('\n'));
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
