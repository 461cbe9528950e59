import { constants } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { nowMs } from '../clock.js';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ByteCounter, inflateOverrun } from '../delivery/meter.js';
import { UsageError, errorMessage } from '../errors.js';
import { globToRegExp } from '../intake/names.js';
import type { Zone } from '../layout/values/timeZones.js';
import { isCsvHeader, readCsvLine, csvFields } from './csvLog.js';
import { lastLineYearBase, yearIn } from './logTimes.js';
import { OpenSshLog, syslogHeader } from './openSshLog.js';
import type { LineVerdict, LogFileReport, LogFormat, LogPlace, OpenWrite, TransferEvent } from './transferEvents.js';
import { readXferlogLine, XFERLOG } from './xferlog.js';

/** How many lines may pass before a file has shown what it is; how many unreadable lines are quoted. */
const SNIFF_LINES = 50;
const QUOTED = 10;
/** How many of the lines that may hide an upload are named one by one (each a discrepancy); the rest are counted. */
const HIDING_KEPT = 100;

/**
 * The longest line read, in bytes. No server writes a transfer line near it (OpenSSH cuts its
 * messages at 500 characters, rsyslog at 8 KiB unless told otherwise; an xferlog line is a path
 * and a dozen short fields): a longer line is damaged or forged, and is counted and named, never
 * held whole. Memory stays this size whatever the file.
 */
export const MAX_LINE_BYTES = 64 * 1024;

/**
 * A gzipped log is held to the rule deliveries are (`inflateOverrun`), with limits of its own:
 * a text log compresses far better than a settlement file (a syslog full of one firewall line
 * at 50 a second: 270:1), a bomb near gzip's own ceiling (1032:1). Past them it is read no further.
 */
export const GZIP_LOG_LIMITS = { maxInflateRatio: 500, maxDecodedBytes: 16 * 1024 ** 3 };

/**
 * A stream's bytes cut into lines at each `\n` (a `\r` before it dropped), as they come: a line
 * longer than `maxBytes` is given as null with its length, its bytes not kept past the limit.
 */
export class LineSplitter {
  private pieces: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string | null, bytes: number) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(0x0a, start); end !== -1; end = chunk.indexOf(0x0a, start)) {
      if (this.length === 0) this.emitWithin(chunk, start, end);
      else {
        this.take(chunk.subarray(start, end));
        this.emit();
      }
      start = end + 1;
    }
    if (start < chunk.length) this.take(chunk.subarray(start));
  }

  /** A line wholly within one chunk (nearly every line): decoded from it where it is, no buffer of its own. */
  private emitWithin(chunk: Buffer, start: number, end: number): void {
    const bytes = end - start;
    if (bytes > this.maxBytes + 1) {
      this.onLine(null, bytes);
      return;
    }
    const stop = bytes > 0 && chunk[end - 1] === 0x0d ? end - 1 : end;
    const length = stop - start;
    this.onLine(length > this.maxBytes ? null : chunk.toString('utf8', start, stop), length);
  }

  /** The stream ended: its last line, if it did not end with a newline. */
  end(): void {
    if (this.length > 0) this.emit();
  }

  private take(piece: Buffer): void {
    this.length += piece.length;
    if (this.length <= this.maxBytes + 1) this.pieces.push(piece);
    else this.pieces = [];
  }

  private emit(): void {
    const bytes = Buffer.concat(this.pieces);
    const text = bytes.at(-1) === 0x0d ? bytes.subarray(0, -1) : bytes;
    const length = this.length - (bytes.length - text.length);
    this.pieces = [];
    this.length = 0;
    this.onLine(length > this.maxBytes ? null : text.toString('utf8'), length);
  }
}

/** `xferlog.2.gz`, `messages.1`, `auth.log-20261201.gz`: a rotated copy of the log named without the suffix. */
const ROTATED = /^(.*?)(?:\.(\d+)|-(\d{8}))?(?:\.gz)?$/;

/** The log a file is a rotated copy of (its path without `.1`, `.2.gz`, `-20261201`): the files of one server's log share it. */
export function logFamily(file: string): string {
  return join(dirname(file), ROTATED.exec(basename(file))![1]!);
}

/** Oldest first: `xferlog.3.gz`, `xferlog.2.gz`, `xferlog.1`, `xferlog`; dated copies by their date. */
function rotationOrder(a: string, b: string): number {
  const rank = (file: string) => {
    const m = ROTATED.exec(basename(file))!;
    if (m[2] !== undefined) return [0, -Number(m[2])];
    if (m[3] !== undefined) return [1, Number(m[3])];
    return [2, 0];
  };
  const [ra, rb] = [rank(a), rank(b)];
  return logFamily(a).localeCompare(logFamily(b)) || ra[0]! - rb[0]! || ra[1]! - rb[1]!;
}

/**
 * The files a setting names, each once, oldest first within its log: a wildcard in a file name
 * (`/var/log/proftpd/xferlog*`) takes every file of that folder it matches. A file that cannot
 * be read, or a wildcard that matches nothing, is refused before anything is read.
 */
export async function expandLogFiles(patterns: string[]): Promise<string[]> {
  const found = new Set<string>();
  for (const pattern of patterns) {
    const name = basename(pattern);
    if (!/[*?[]/.test(name)) {
      const stats = await stat(pattern).catch((err) => {
        throw new UsageError(`transfer log ${pattern} cannot be read: ${errorMessage(err)}`, { cause: err });
      });
      if (!stats.isFile()) throw new UsageError(`transfer log ${pattern} is not a file`);
      found.add(await realpath(pattern));
      continue;
    }
    const dir = dirname(resolve(pattern));
    const matches = globToRegExp(name);
    const entries = await readdir(dir, { withFileTypes: true }).catch((err) => {
      throw new UsageError(`transfer log folder ${dir} cannot be read: ${errorMessage(err)}`, { cause: err });
    });
    const files = entries.filter((dirent) => dirent.isFile() && matches.test(dirent.name));
    if (files.length === 0) throw new UsageError(`transfer log ${pattern}: no file matches it`);
    for (const dirent of files) found.add(await realpath(join(dir, dirent.name)));
  }
  return [...found].sort(rotationOrder);
}

/**
 * The file's bytes, unzipped when they are gzip (told by its first bytes, never its name), and
 * the judge of a gzipped one's output so far: why it is read no further, or null.
 */
/**
 * The log's bytes, gunzipped where it is gzip, from the one file opened once: opened without
 * waiting (a FIFO put in its place would hold the audit until something wrote to it) and refused
 * unless it is a regular file; its size is that file's own.
 */
async function openLog(file: string): Promise<{ bytes: Readable; overrun: (decoded: number) => string | null }> {
  const head = Buffer.alloc(2);
  const fileHandle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  let size: number;
  try {
    const stats = await fileHandle.stat();
    if (!stats.isFile()) throw new Error('not a regular file');
    size = stats.size;
    await fileHandle.read(head, 0, 2, 0);
  } catch (err) {
    await fileHandle.close();
    throw err;
  }
  const raw = fileHandle.createReadStream({ start: 0 });
  if (head[0] !== 0x1f || head[1] !== 0x8b) return { bytes: raw, overrun: () => null };
  const counter = new ByteCounter();
  // the last stream carries the first failure; stopping early (a bomb) ends those before it too
  const bytes = pipeline(raw, counter, createGunzip(), () => undefined);
  const limits = { ...GZIP_LOG_LIMITS, deliveredSize: size, consumed: () => counter.bytes };
  return {
    bytes,
    overrun: (decoded) => {
      const over = inflateOverrun(decoded, limits);
      if (over === null) return null;
      return over.limit === 'size'
        ? `it inflates to over ${limits.maxDecodedBytes} bytes, more than a log is read to`
        : `it inflates more than ${limits.maxInflateRatio}:1 (${decoded} bytes from ${over.compressed} compressed): a decompression bomb`;
    },
  };
}

/** What a file's first lines show it to be; null when none of them is a line of a known format. */
function sniff(line: string, zone: Zone): LogFormat | null {
  if (XFERLOG.test(line)) return 'xferlog';
  // any leap year reads any date: which year the line is in is not the question here
  if (syslogHeader(line, zone, () => 2000)) return 'openssh-syslog';
  const fields = csvFields(line);
  if (isCsvHeader(line) || (fields?.length === 3 && /^\s*\d+\s*$/.test(fields[2]!))) return 'csv';
  return null;
}

/** A place a log could not be read, which may hide an upload: never a clean audit. */
export interface UnreadPlace {
  file: string;
  line: number;
  message: string;
}

/** What of a file was not read: the lines that may hide an upload, its over-long lines (the first of them named), and where it stopped. */
export function unreadPlaces(report: LogFileReport): UnreadPlace[] {
  const places: UnreadPlace[] = [];
  // a line that did not read may hide an upload (torn, cut at the server's limit, an xferlog line that does not parse)
  for (const hidden of report.hidingUploads) {
    places.push({
      file: report.file,
      line: hidden.line,
      message: `transfer log ${report.file} line ${hidden.line}: ${hidden.why}: ${JSON.stringify(hidden.text)}`,
    });
  }
  if (report.hidingUploadsTotal > report.hidingUploads.length) {
    const first = report.hidingUploads.at(-1)?.line ?? 0;
    const more = report.hidingUploadsTotal - report.hidingUploads.length;
    places.push({ file: report.file, line: first, message: `transfer log ${report.file}: and ${more} more lines that may hide an upload` });
  }
  const first = report.overLongQuoted[0];
  if (first) {
    const named = report.overLongQuoted.map((q) => `line ${q.line}: ${q.bytes} bytes`).join(', ');
    const more = report.overLong > report.overLongQuoted.length ? `, and ${report.overLong - report.overLongQuoted.length} more` : '';
    const lines = report.overLong === 1 ? 'a line' : `${report.overLong} lines`;
    places.push({
      file: report.file,
      line: first.line,
      message: `transfer log ${report.file}: ${lines} over the ${MAX_LINE_BYTES} bytes a line may have (${named}${more}), not read: ${report.overLong === 1 ? 'it' : 'each'} may hide an upload`,
    });
  }
  if (report.stopped) {
    places.push({
      file: report.file,
      line: report.stopped.line,
      message: `transfer log ${report.file}: not read past line ${report.stopped.line}: ${report.stopped.reason}; what follows may hide uploads`,
    });
  }
  return places;
}

export interface TransferLogs {
  /**
   * every upload, rename and removal, in the order they happened; none where each was handed to
   * the reader's `follow` as it was read (`handed`)
   */
  events: TransferEvent[];
  /** true where every event went to `follow` as it was read, in the order they happened, and none is in `events` */
  handed?: boolean;
  files: LogFileReport[];
  /** the uploads the log shows opened for writing and not closed by its last line (OpenSSH's log alone tells these) */
  stillOpen: OpenWrite[];
  /**
   * each log (file family) whose syslog lines write no year: the year its first such line was
   * read in (`base`); the lines after it follow in order (logTimes.ts, SyslogYears)
   */
  years: Map<string, number>;
}

/** How the years of syslog lines that write none are chosen. */
export interface YearChoice {
  /** the base year of a log (file family), where the caller has weighed it (the audit, by the ledger's times) */
  bases?: Map<string, number>;
  /** now (ms; default the clock's): without a base, a log's last line is taken to be no later than a day after it */
  now?: number;
}

/**
 * Reads the logs, each line in the format its file's first lines show (OpenSSH's syslog lines,
 * xferlog, CSV); a line of the file that is no line of that format is counted unreadable and
 * the first few are kept, never passed over. A file none of whose first lines is of a known
 * format is refused (exit 2): it is not a transfer log.
 *
 * A traditional syslog line writes no year. Its year comes from the log's own content (a New Year
 * is where the dates go back) and a base year: the one `years.bases` gives, else the latest that
 * puts the log's last line no later than a day after now (a log read a second time when its lines
 * showed the first guess, this year, to be too late). Never a file's modification time: a copied
 * log reads the same.
 */
export async function readTransferLogs(
  files: string[],
  zone: Zone,
  years: YearChoice = {},
  follow?: (event: TransferEvent) => void,
): Promise<TransferLogs> {
  const now = years.now ?? nowMs();
  const given = years.bases ?? new Map<string, number>();
  const first = await readLogFiles(files, zone, (family) => given.get(family) ?? yearIn(now, zone), follow);
  const settled = new Map(first.years);
  for (const [family, reader] of first.readers) {
    if (given.has(family) || !reader.yearless || reader.years.lastDay === null) continue;
    settled.set(family, lastLineYearBase(now, zone, reader.years.lastDay, reader.years.newYears));
  }
  if ([...settled].every(([family, base]) => first.years.get(family) === base)) return first;
  return readLogFiles(files, zone, (family) => settled.get(family) ?? yearIn(now, zone));
}

/**
 * `follow`: each event handed to it as it is read, not held, while they come in the order they
 * happened (each no earlier than the one before, over the files in turn: the order the sort below
 * would leave them in) and the logs write their years (xferlog, CSV: a syslog line without a
 * year may be read again in another). An event out of that order, or a syslog log, ends the
 * handing: the events from there on are held and sorted, and where some were handed already the
 * logs are read again, all held (`handed` false: the caller follows `events` afresh).
 */
async function readLogFiles(
  files: string[],
  zone: Zone,
  baseYear: (family: string) => number,
  follow?: (event: TransferEvent) => void,
): Promise<TransferLogs & { readers: Map<string, OpenSshLog> }> {
  const openSsh = new Map<string, OpenSshLog>();
  const events: TransferEvent[] = [];
  const reports: LogFileReport[] = [];
  let handing = follow !== undefined;
  let handedAny = false;
  let lastHanded = -Infinity;
  /** the handing ended after some events went: the logs are read again */
  let lost = false;
  const stopHanding = () => {
    handing = false;
    lost = handedAny;
  };
  const take = (event: TransferEvent) => {
    if (handing) {
      if (event.at >= lastHanded) {
        lastHanded = event.at;
        handedAny = true;
        follow!(event);
        return;
      }
      stopHanding();
    }
    events.push(event);
  };
  for (const file of files) {
    if (lost) break;
    const family = logFamily(file);
    const report: LogFileReport = {
      file,
      format: 'empty',
      lines: 0,
      transferLines: 0,
      otherLines: 0,
      unreadable: 0,
      unreadableQuoted: [],
      hidingUploads: [],
      hidingUploadsTotal: 0,
      overLong: 0,
      overLongQuoted: [],
      stopped: null,
      firstAt: null,
      lastAt: null,
    };
    let format: LogFormat | null = null;
    let waiting: { line: string; lineNumber: number }[] = [];
    let notALog = false;
    const readLine = (line: string, lineNumber: number) => {
      const place: LogPlace = { file, line: lineNumber };
      let verdict: LineVerdict;
      if (format === 'xferlog') verdict = readXferlogLine(line, place, family, zone);
      else if (format === 'csv') verdict = readCsvLine(line, place, family, zone);
      else {
        let reader = openSsh.get(family);
        if (!reader) openSsh.set(family, (reader = new OpenSshLog(family, zone, baseYear(family))));
        if (handing) stopHanding();
        verdict = reader.read(line, place);
      }
      if (verdict.kind === 'other') report.otherLines++;
      else if (verdict.kind === 'unreadable') {
        report.unreadable++;
        if (report.unreadableQuoted.length < QUOTED) report.unreadableQuoted.push({ line: lineNumber, text: line.slice(0, 200) });
        if (verdict.hides !== null && report.hidingUploadsTotal++ < HIDING_KEPT) {
          report.hidingUploads.push({ line: lineNumber, text: line.slice(0, 200), why: verdict.hides });
        }
      } else {
        report.transferLines++;
        if (verdict.at !== null) {
          report.firstAt ??= verdict.at;
          report.lastAt = verdict.at;
        }
        for (const event of verdict.events) take(event);
      }
    };
    const splitter = new LineSplitter(MAX_LINE_BYTES, (line, bytes) => {
      if (notALog) return;
      const lineNumber = ++report.lines;
      if (line === null) {
        report.overLong++;
        if (report.overLongQuoted.length < QUOTED) report.overLongQuoted.push({ line: lineNumber, bytes });
        return;
      }
      if (line.trim() === '') {
        report.otherLines++;
        return;
      }
      if (format === null) {
        format = sniff(line, zone);
        waiting.push({ line, lineNumber });
        if (format === null) {
          notALog = waiting.length >= SNIFF_LINES;
          return;
        }
        report.format = format;
        for (const waitingLine of waiting) readLine(waitingLine.line, waitingLine.lineNumber);
        waiting = [];
        return;
      }
      readLine(line, lineNumber);
    });
    try {
      const log = await openLog(file);
      let decoded = 0;
      for await (const chunk of log.bytes as AsyncIterable<Buffer>) {
        decoded += chunk.length;
        const overrun = log.overrun(decoded);
        if (overrun !== null) {
          report.stopped = { line: report.lines + 1, reason: overrun };
          break;
        }
        splitter.push(chunk);
        if (notALog || lost) break;
      }
      if (report.stopped === null && !notALog && !lost) splitter.end();
    } catch (err) {
      throw new UsageError(`transfer log ${file} cannot be read: ${errorMessage(err)}`, { cause: err });
    }
    if (format === null && waiting.length > 0) {
      throw new UsageError(
        `transfer log ${file} is none of the formats read (OpenSSH sftp-server syslog lines, xferlog, CSV time,path,size): its line ${waiting[0]!.lineNumber} reads ${JSON.stringify(waiting[0]!.line.slice(0, 120))}`,
      );
    }
    if (format === null && (report.overLong > 0 || report.stopped !== null)) report.format = 'unknown';
    reports.push(report);
  }
  if (lost) return readLogFiles(files, zone, baseYear);
  // files of several logs (two servers, or syslog and xferlog) interleave by time; one file's
  // lines keep their order (the sort is stable)
  events.sort((a, b) => a.at - b.at);
  const stillOpen = [...openSsh.values()].flatMap((reader) => reader.stillOpen());
  const years = new Map([...openSsh].filter(([, reader]) => reader.yearless).map(([family, reader]) => [family, reader.years.base]));
  return { events, handed: handedAny && handing, files: reports, stillOpen, years, readers: openSsh };
}
