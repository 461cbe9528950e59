import { main } from '../../src/cli/index.js';
import type { CliResult } from './cli.js';

/**
 * The CLI's own entry, `main(argv)` of src/cli/index.ts, called in this process: what the bin
 * does, less starting Node.js and loading the bundle, for the scenarios that need nothing of a
 * process of their own (the db project's workspaces: test/support/workspace.ts). The command
 * sees what the subprocess of `runCli` would: only the variables it is given beside PATH, HOME,
 * TMPDIR and LANG, `cwd` as its folder, no terminal on stdin, stdout or stderr; what it writes
 * to stdout and stderr is captured, and the status main() returns is the exit status.
 *
 * Not for a scenario about the process: a signal, a kill at a fault point, the clock seam (the
 * sources have no test seams: `SETTLE_TEST_*` is refused here rather than silently ignored).
 * One command at a time: process.env, the folder and the streams are the process's.
 */
export async function runInProcess(args: string[], env: Record<string, string> = {}, opts: { cwd?: string } = {}): Promise<CliResult> {
  const seams = Object.keys(env).filter((name) => name.startsWith('SETTLE_TEST_'));
  if (seams.length > 0) throw new Error(`${seams.join(', ')} needs the test build in a process of its own (runCli), not runInProcess`);
  const turn = queue.then(() => callMain(args, env, opts));
  queue = turn.then(
    () => undefined,
    () => undefined,
  );
  return turn;
}

let queue: Promise<void> = Promise.resolve();

/** what the runner itself needs of the environment (vitest's worker), kept through a command */
const RUNNER_VARIABLE = /^(VITEST|NODE_)/;

async function callMain(args: string[], env: Record<string, string>, opts: { cwd?: string }): Promise<CliResult> {
  const savedEnv = { ...process.env };
  const savedCwd = process.cwd();
  const given: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[name]) given[name] = process.env[name]!;
  Object.assign(given, env);
  for (const name of Object.keys(process.env)) if (!RUNNER_VARIABLE.test(name) && !(name in given)) delete process.env[name];
  Object.assign(process.env, given);

  let stdout = '';
  let stderr = '';
  const restoreOut = capture(process.stdout, (text) => (stdout += text));
  const restoreErr = capture(process.stderr, (text) => (stderr += text));
  const restoreIn = noTerminal(process.stdin);
  try {
    if (opts.cwd) process.chdir(opts.cwd);
    const status = await main([process.execPath, 'settle-ingest', ...args]);
    return { status, signal: null, stdout, stderr };
  } finally {
    restoreIn();
    restoreErr();
    restoreOut();
    process.chdir(savedCwd);
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
    Object.assign(process.env, savedEnv);
  }
}

type WriteCallback = (err?: Error | null) => void;

/**
 * Takes over a stream's writes (and says it is no terminal) until the returned function puts
 * it back; the listeners main() adds to it (its EPIPE guard) go with the command.
 */
function capture(stream: NodeJS.WriteStream, into: (text: string) => void): () => void {
  const write = Object.getOwnPropertyDescriptor(stream, 'write');
  const listeners = stream.listeners('error');
  const restoreTerminal = noTerminal(stream);
  stream.write = ((chunk: string | Uint8Array, encoding?: BufferEncoding | WriteCallback, callback?: WriteCallback) => {
    into(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8'));
    const done = typeof encoding === 'function' ? encoding : callback;
    if (done) queueMicrotask(() => done(null));
    return true;
  }) as typeof stream.write;
  return () => {
    if (write) Object.defineProperty(stream, 'write', write);
    else delete (stream as { write?: unknown }).write;
    for (const added of stream.listeners('error')) if (!listeners.includes(added)) stream.removeListener('error', added as () => void);
    restoreTerminal();
  };
}

/** `isTTY` false on the stream (as on a subprocess's pipes), until the returned function puts it back. */
function noTerminal(stream: NodeJS.ReadStream | NodeJS.WriteStream): () => void {
  const own = Object.getOwnPropertyDescriptor(stream, 'isTTY');
  Object.defineProperty(stream, 'isTTY', { value: false, configurable: true, writable: true });
  return () => {
    if (own) Object.defineProperty(stream, 'isTTY', own);
    else delete (stream as { isTTY?: boolean }).isTTY;
  };
}
