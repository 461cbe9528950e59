import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import { privateFileMode } from '../privateFiles.js';
import { UsageError } from '../errors.js';
import { printable } from '../report/printable.js';
import { redactSecrets, redactValues } from '../redactSecrets.js';
import type { TerminalStatus } from './terminal.js';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** One JSON log line as a person reads it on a terminal: time, level, file, message. */
export function terminalLine(json: string): string {
  try {
    const e = JSON.parse(json) as { level: number; time: number; file?: string; msg?: string };
    const time = new Date(e.time).toISOString().slice(11, 19);
    return `${time} ${LEVELS[e.level] ?? e.level} ${e.file ? `${printable(e.file)}: ` : ''}${printable(e.msg ?? '')}\n`;
  } catch {
    return json;
  }
}

const MAY_HOLD_SECRET = /password|:\/\//i;

/**
 * One JSON log line without the passwords any of its strings carry (a reason, an error
 * message, a URL in a binding). Redacted value by value, so the line stays valid JSON.
 */
export function redactLogLine(line: string): string {
  if (!MAY_HOLD_SECRET.test(line)) return line;
  try {
    return `${JSON.stringify(redactValues(JSON.parse(line) as unknown))}\n`;
  } catch {
    return redactSecrets(line);
  }
}

/**
 * pino logs, one line per decision: JSON to the log file when set, else to stderr; on a
 * terminal the same lines are shown short and readable (the log file keeps the JSON).
 * Every line passes redactLogLine on its way out.
 */
export function createLogger(opts: { level: string; file: string | undefined; status: TerminalStatus; partner: string }): Logger {
  // every line names its partner: several partners' runs append to one log
  const base = { name: 'settle-ingest', pid: process.pid, hostname: hostname(), partner: opts.partner };
  if (opts.file) {
    const mode = privateFileMode(opts.file);
    let file: ReturnType<typeof pino.destination>;
    try {
      file = pino.destination({ dest: opts.file, append: true, mkdir: true, sync: true, mode });
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'EISDIR' ? 'it is a folder' : (err as Error).message;
      throw new UsageError(`log file ${opts.file} cannot be opened: ${why} (--log-file, SETTLE_LOG_FILE: name a file)`, { cause: err });
    }
    return pino({ level: opts.level, base }, { write: (line: string) => file.write(redactLogLine(line)) });
  }
  const readable = process.stderr.isTTY === true;
  const stderr = {
    write(line: string) {
      opts.status.clear();
      const redacted = redactLogLine(line);
      process.stderr.write(readable ? terminalLine(redacted) : redacted);
    },
  };
  return pino({ level: opts.level, base }, stderr);
}
