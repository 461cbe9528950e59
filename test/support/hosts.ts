import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, finished, type CliResult } from './cli.js';

/**
 * Several hosts in one test, each a process of the built CLI with a host name of its own: a UTS
 * namespace (`unshare --uts`, root), so that each is another machine to the ledger, whose owners
 * a host can prove gone only on its own host (src/owner.ts). Its clock is its own too, through the
 * test build's seams: SETTLE_TEST_CLOCK_SKEW (this host's clock alone off), SETTLE_TEST_NOW (the world).
 */
export const canName = process.getuid?.() === 0 && spawnSync('unshare', ['--uts', 'true'], { stdio: 'ignore' }).status === 0;

/**
 * `args` (e.g. `run --config … --json`) as host `host`, in `root`: its own host name, its own
 * staging folder (another machine's disk), the ledger's and finance database's URL, the test seams of `env`.
 */
export async function startHost(
  at: { root: string; databaseUrl: string },
  host: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<CliResult> {
  return finished(await spawnHost(at, host, args, env, nodeArgs));
}

/** The same process, handed back running: a long-lived command (`watch`) that the caller stops; `nodeArgs` go to node before the CLI (a bench's `--cpu-prof`). */
export async function spawnHost(
  at: { root: string; databaseUrl: string },
  host: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ChildProcess> {
  const staging = join(at.root, `staging-${host}`);
  await mkdir(staging, { recursive: true });
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  return spawn('unshare', ['--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', host, process.execPath, ...nodeArgs, BIN, ...args], {
    cwd: at.root,
    env: { ...base, DATABASE_URL: at.databaseUrl, SETTLE_STAGING: staging, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Polls for an effect (a file a hook wrote), with a deadline: never a wait that places a race. */
export async function until(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; !check();) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
