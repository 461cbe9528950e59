import { spawn } from 'node:child_process';
import { BIN } from './cli.js';

/**
 * The CLI on a terminal (a pseudo-terminal from util-linux `script`), as an operator's manual
 * run has it; returns everything the terminal was sent.
 */
export function onTerminal(args: string[], env: Record<string, string>, cwd: string): Promise<{ status: number | null; screen: string }> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qefc', quoted, '/dev/null'], {
    cwd,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME!, TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (d) => (screen += d));
  child.stderr.on('data', (d) => (screen += d));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, screen })));
}
