import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import type { TerminalStatus } from './terminal.js';

/** pino JSON logs, one line per decision: to the log file when set, else to stderr. */
export function createLogger(opts: { level: string; file: string | undefined; status: TerminalStatus }): Logger {
  const base = { name: 'settle-ingest', pid: process.pid, hostname: hostname() };
  if (opts.file) {
    return pino({ level: opts.level, base }, pino.destination({ dest: opts.file, append: true, mkdir: true, sync: true }));
  }
  const stderr = {
    write(line: string) {
      opts.status.clear();
      process.stderr.write(line);
    },
  };
  return pino({ level: opts.level, base }, stderr);
}
