import { createReadStream } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { UsageError, errorMessage } from '../../errors.js';
import { globToRegExp } from '../../intake/names.js';
import type { Zone } from '../../layout/timeZones.js';
import { isCsvHeader, readCsvLine, csvFields } from './csvLog.js';
import { OpenSshLog, syslogHeader } from './openSshLog.js';
import type { LineVerdict, LogFileReport, LogFormat, LogPlace, TransferEvent } from './transferEvents.js';
import { readXferlogLine, XFERLOG } from './xferlog.js';

/** How many lines may pass before a file has shown what it is; how many unreadable lines are quoted. */
const SNIFF_LINES = 50;
const QUOTED = 10;
/** How many of the lines that may hide an upload are named one by one (each a discrepancy); the rest are counted. */
const HIDING_KEPT = 100;

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
      const s = await stat(pattern).catch((err) => {
        throw new UsageError(`transfer log ${pattern} cannot be read: ${errorMessage(err)}`, { cause: err });
      });
      if (!s.isFile()) throw new UsageError(`transfer log ${pattern} is not a file`);
      found.add(await realpath(pattern));
      continue;
    }
    const dir = dirname(resolve(pattern));
    const matches = globToRegExp(name);
    const entries = await readdir(dir, { withFileTypes: true }).catch((err) => {
      throw new UsageError(`transfer log folder ${dir} cannot be read: ${errorMessage(err)}`, { cause: err });
    });
    const files = entries.filter((e) => e.isFile() && matches.test(e.name));
    if (files.length === 0) throw new UsageError(`transfer log ${pattern}: no file matches it`);
    for (const e of files) found.add(await realpath(join(dir, e.name)));
  }
  return [...found].sort(rotationOrder);
}

/** The file's bytes, unzipped when they are gzip (told by its first bytes, never its name). */
async function openLog(file: string): Promise<Readable> {
  const head = Buffer.alloc(2);
  const fh = await open(file, 'r');
  try {
    await fh.read(head, 0, 2, 0);
  } finally {
    await fh.close();
  }
  const raw = createReadStream(file);
  if (head[0] !== 0x1f || head[1] !== 0x8b) return raw;
  const gunzip = createGunzip();
  raw.on('error', (err) => gunzip.destroy(err));
  return raw.pipe(gunzip);
}

/** What a file's first lines show it to be; null when none of them is a line of a known format. */
function sniff(line: string, zone: Zone, reference: number): LogFormat | null {
  if (XFERLOG.test(line)) return 'xferlog';
  if (syslogHeader(line, zone, reference)) return 'openssh-syslog';
  const fields = csvFields(line);
  if (isCsvHeader(line) || (fields?.length === 3 && /^\s*\d+\s*$/.test(fields[2]!))) return 'csv';
  return null;
}

export interface TransferLogs {
  /** every upload, rename and removal, in the order they happened */
  events: TransferEvent[];
  files: LogFileReport[];
}

/**
 * Reads the logs, each line in the format its file's first lines show (OpenSSH's syslog lines,
 * xferlog, CSV); a line of the file that is no line of that format is counted unreadable and
 * the first few are kept, never passed over. A file none of whose first lines is of a known
 * format is refused (exit 2): it is not a transfer log.
 */
export async function readTransferLogs(files: string[], zone: Zone): Promise<TransferLogs> {
  const openSsh = new Map<string, OpenSshLog>();
  const events: { event: TransferEvent; order: number }[] = [];
  const reports: LogFileReport[] = [];
  for (const file of files) {
    const family = logFamily(file);
    const reference = (await stat(file)).mtimeMs;
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
      firstAt: null,
      lastAt: null,
    };
    let format: LogFormat | null = null;
    let waiting: { line: string; n: number }[] = [];
    const readLine = (line: string, n: number) => {
      const place: LogPlace = { file, line: n };
      let verdict: LineVerdict;
      if (format === 'xferlog') verdict = readXferlogLine(line, place, family, zone);
      else if (format === 'csv') verdict = readCsvLine(line, place, family, zone);
      else {
        let reader = openSsh.get(family);
        if (!reader) openSsh.set(family, (reader = new OpenSshLog(family, zone)));
        verdict = reader.read(line, place, reference);
      }
      if (verdict.kind === 'other') report.otherLines++;
      else if (verdict.kind === 'unreadable') {
        report.unreadable++;
        if (report.unreadableQuoted.length < QUOTED) report.unreadableQuoted.push({ line: n, text: line.slice(0, 200) });
        if (verdict.hides !== null && report.hidingUploadsTotal++ < HIDING_KEPT) {
          report.hidingUploads.push({ line: n, text: line.slice(0, 200), why: verdict.hides });
        }
      } else {
        report.transferLines++;
        if (verdict.at !== null) {
          report.firstAt ??= verdict.at;
          report.lastAt = verdict.at;
        }
        for (const event of verdict.events) events.push({ event, order: events.length });
      }
    };
    try {
      const lines = createInterface({ input: await openLog(file), crlfDelay: Infinity });
      for await (const line of lines) {
        const n = ++report.lines;
        if (line.trim() === '') {
          report.otherLines++;
          continue;
        }
        if (format === null) {
          format = sniff(line, zone, reference);
          waiting.push({ line, n });
          if (format === null) {
            if (waiting.length < SNIFF_LINES) continue;
            break;
          }
          report.format = format;
          for (const w of waiting) readLine(w.line, w.n);
          waiting = [];
          continue;
        }
        readLine(line, n);
      }
    } catch (err) {
      throw new UsageError(`transfer log ${file} cannot be read: ${errorMessage(err)}`, { cause: err });
    }
    if (format === null && waiting.length > 0) {
      throw new UsageError(
        `transfer log ${file} is none of the formats read (OpenSSH sftp-server syslog lines, xferlog, CSV time,path,size): its line ${waiting[0]!.n} reads ${JSON.stringify(waiting[0]!.line.slice(0, 120))}`,
      );
    }
    reports.push(report);
  }
  // files of several logs (two servers, or syslog and xferlog) interleave by time; one file's lines keep their order
  events.sort((a, b) => a.event.at - b.event.at || a.order - b.order);
  return { events: events.map((e) => e.event), files: reports };
}
