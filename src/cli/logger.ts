import { closeSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import pino from 'pino';
import type { Logger } from '../logEvents.js';
import { openAppendOnly } from '../atomicFile.js';
import { EXIT_PROBLEM, SettleError, UsageError } from '../errors.js';
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

/**
 * Aborted, with the LogFileError as its reason, when a log file refuses a line: the run stops
 * after the file in hand, saying why (runCommand.ts joins it to the stop on SIGTERM), rather than
 * go on deciding files it cannot log, or stop in the middle of one.
 */
let failure = new AbortController();

/** The stop a log file that cannot be written asks of the runs of this process (see `failure`). */
export const logFileFailure = (): AbortSignal => failure.signal;

/**
 * One log file of the process, by its path: every partner's logger and every cycle of `watch`
 * append through it, so that a service running for days never leaks a descriptor a cycle. Its
 * descriptor can be swapped under the loggers that hold it (`reopen`: logrotate renamed the file),
 * the new one opened before the old is closed, and every write goes to the descriptor open at
 * that moment: no write ever meets a closed one. Each line is appended whole in its own
 * synchronous write, on the one thread.
 */
class LogFile {
  private fd: number;
  /** no longer in the config (a reload named another file): writes go to stderr, never lost */
  private retired = false;
  /** it refused a line: the lines after it are not tried (the run is stopping, logFileFailure) */
  private failed = false;

  constructor(readonly path: string) {
    this.fd = openAppendOnly(path, 'log file');
  }

  write(line: string): void {
    if (this.retired) process.stderr.write(line);
    else if (!this.failed) this.append(line);
  }

  /**
   * Appends one line, all of it. A write the file refuses (its file system full, ENOSPC; a quota,
   * EDQUOT; an I/O error) is said as the log's, naming the file: otherwise the run that logs would
   * stop on a bare `ENOSPC: no space left on device, write` that names no file.
   */
  private append(line: string): void {
    const bytes = Buffer.from(line);
    try {
      for (let written = 0; written < bytes.length;) written += writeSync(this.fd, bytes, written);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOSPC'
          ? 'its file system is full: make room there, or point --log-file elsewhere'
          : code === 'EDQUOT'
            ? "the user's disk quota there is spent"
            : (err as Error).message;
      this.failed = true;
      const refused = new LogFileError(`the log file ${this.path} cannot be written (${code ?? 'error'}): ${why}`, { cause: err });
      // said at once where the operator looks (the journal, cron's mail), as the log cannot say it
      process.stderr.write(`settle-ingest: ${refused.message}\n`);
      failure.abort(refused);
    }
  }

  /** The path opened again (created when logrotate moved it away), then the old descriptor closed; a refusal forgotten. */
  reopen(): void {
    if (this.retired) return;
    const fd = openAppendOnly(this.path, 'log file');
    const old = this.fd;
    this.fd = fd;
    this.failed = false;
    closeQuietly(old);
  }

  retire(): void {
    if (this.retired) return;
    this.retired = true;
    closeQuietly(this.fd);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to lose, every line was written when it was logged
  }
}

const LOG_FILES = new Map<string, LogFile>();

function logFile(path: string): LogFile {
  let file = LOG_FILES.get(path);
  if (!file) LOG_FILES.set(path, (file = new LogFile(path)));
  return file;
}

/** A log file that could not be opened again: the old descriptor stays in use, and why. */
export interface LogReopenFailure {
  path: string;
  reason: string;
}

/**
 * `watch` on SIGHUP (logrotate's postrotate, or after making room): every log file open in this
 * process opened again by its path, each new descriptor open before its old one is closed. A file
 * that cannot be opened keeps its old descriptor (the lines still go somewhere) and is returned
 * with why. A log file's earlier refusal stops no later cycle.
 */
export function reopenLogFiles(): LogReopenFailure[] {
  const failures: LogReopenFailure[] = [];
  for (const file of LOG_FILES.values()) {
    try {
      file.reopen();
    } catch (err) {
      failures.push({ path: file.path, reason: (err as Error).message });
    }
  }
  if (failure.signal.aborted) failure = new AbortController();
  return failures;
}

/** After a config reread: the log files the new config no longer names are closed (a line still written there goes to stderr). */
export function retireLogFilesBut(kept: ReadonlySet<string>): void {
  for (const [path, file] of LOG_FILES) {
    if (kept.has(path)) continue;
    file.retire();
    LOG_FILES.delete(path);
  }
}

/** The log file refused a line: the runs stop after the file in hand, saying so (exit 1). */
export class LogFileError extends SettleError {
  constructor(message: string, options: { cause: unknown }) {
    super(message, EXIT_PROBLEM, options);
    this.name = 'LogFileError';
  }
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
    let file: LogFile;
    try {
      file = logFile(opts.file);
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
