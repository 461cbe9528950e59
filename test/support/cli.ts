import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The CLI of the test build (scripts/bundle.mjs): the package's bin beside a bundle that keeps
 * the fault points and hooks of src/faults.ts, which the shipped bundle drops.
 */
export const BIN = fileURLToPath(new URL('../../dist/test-package/bin/settle-ingest.js', import.meta.url));

export interface CliResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a subprocess, the way cron does: no terminal, a clean environment. */
export function runCli(args: string[], env: Record<string, string> = {}, opts: { cwd?: string } = {}): Promise<CliResult> {
  const child = startCli(args, env, opts);
  return finished(child);
}

/**
 * `throughPipe`: stdout goes into an OS pipe (`settle-ingest … | cat`, as a cron job that
 * tees its output has it) instead of the socket Node gives a child; the exit status is still the CLI's.
 */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
  /** `as`: another user (the tests run as root), e.g. a monitoring user who may only read */
  opts: { cwd?: string; throughPipe?: boolean; as?: { uid: number; gid: number } } = {},
): ChildProcess {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  const command = opts.throughPipe ? ['bash', '-c', 'set -o pipefail; "$@" | cat', 'bash', process.execPath] : [process.execPath];
  return spawn(command[0]!, [...command.slice(1), BIN, ...args], {
    env: { ...base, ...env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.as ?? {}),
  });
}

export function finished(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}
