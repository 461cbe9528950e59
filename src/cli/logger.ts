import { closeSync } from 'node:fs';
import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import { openAppendOnly } from '../atomicFile.js';
import { UsageError } from '../errors.js';
import { printable } from '../report/printable.js';
import { redactSecrets, redactValues } from '../redactSecrets.js';
import { snakeKeys } from './jsonOutput.js';
import type { TerminalStatus } from './terminal.js';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** One JSON log line as a person reads it on a terminal: time, level, file, message. */
export function terminalLine(json: string): string {
  try {
    const e = JSON.parse(json) as { level: number; time: string; file?: string; msg?: string };
    const time = new Date(e.time).toISOString().slice(11, 19);
    return `${time} ${LEVELS[e.level] ?? e.level} ${e.file ? `${printable(e.file)}: ` : ''}${printable(e.msg ?? '')}\n`;
  } catch {
    return json;
  }
}

/**
 * One JSON log line as it is written: the same convention as `--json` (snake_case keys at every
 * depth; pino writes the time as ISO 8601), and without the passwords any of its strings carry
 * (a reason, an error message, a URL in a binding), redacted value by value so the line stays
 * valid JSON. The code's own field names are camelCase; this is the one door they pass.
 */
export function conventionalLogLine(line: string): string {
  try {
    return `${JSON.stringify(snakeKeys(redactValues(JSON.parse(line) as unknown)))}\n`;
  } catch {
    return redactSecrets(line);
  }
}

type LogDestination = ReturnType<typeof pino.destination>;

/**
 * One open log file per path for the whole process: every partner's logger and every cycle of
 * `watch` append through it, so that a service running for days never leaks a descriptor a cycle.
 */
const LOG_FILES = new Map<string, { destination: LogDestination; fd: number }>();

function logDestination(path: string): LogDestination {
  let file = LOG_FILES.get(path);
  if (!file) {
    const fd = openAppendOnly(path, 'log file');
    LOG_FILES.set(path, (file = { destination: pino.destination({ fd, sync: true }), fd }));
  }
  return file.destination;
}

/** Closes the log files opened so far: the next line opens each again (`watch` on SIGHUP, after logrotate moved them). */
export function reopenLogFiles(): void {
  for (const file of LOG_FILES.values()) {
    try {
      file.destination.flushSync();
      closeSync(file.fd);
    } catch {
      // already closed, or never written: nothing to lose
    }
  }
  LOG_FILES.clear();
}

/**
 * pino logs, one line per decision: JSON to the log file when set, else to stderr; on a
 * terminal the same lines are shown short and readable (the log file keeps the JSON).
 * Every line passes conventionalLogLine on its way out.
 */
export function createLogger(opts: { level: string; file: string | undefined; status: TerminalStatus; partner: string }): Logger {
  // every line names its partner: several partners' runs append to one log
  const base = { name: 'settle-ingest', pid: process.pid, hostname: hostname(), partner: opts.partner };
  const options = { level: opts.level, base, timestamp: pino.stdTimeFunctions.isoTime };
  if (opts.file) {
    let file: LogDestination;
    try {
      file = logDestination(opts.file);
    } catch (err) {
      if (err instanceof UsageError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'EISDIR' ? 'it is a folder' : code === 'ELOOP' ? 'it is a symbolic link, never written through' : (err as Error).message;
      throw new UsageError(`log file ${opts.file} cannot be opened: ${why} (--log-file, SETTLE_LOG_FILE: name a file)`, { cause: err });
    }
    return pino(options, { write: (line: string) => file.write(conventionalLogLine(line)) });
  }
  const readable = process.stderr.isTTY === true;
  const stderr = {
    write(line: string) {
      opts.status.clear();
      const written = conventionalLogLine(line);
      process.stderr.write(readable ? terminalLine(written) : written);
    },
  };
  return pino(options, stderr);
}
