import { posix } from 'node:path';

/**
 * What an SFTP server's own log says happened to the files it served, in one shape whatever the
 * log's format (OpenSSH's sftp-server lines, xferlog, a plain CSV): uploads, renames and removals,
 * each with where in which log it was read. Times are milliseconds since the epoch (UTC).
 */

/** A line of a log file, for the messages that name it. */
export interface LogPlace {
  file: string;
  line: number;
}

interface Happening {
  /**
   * Whose paths these are: one server's namespace (the log's file family, and the host a
   * syslog line names), so that two servers' `/in/x.csv` are never one file.
   */
  server: string;
  at: number;
  /**
   * the other instant `at` may be: a local time without an offset in the hour a fall-back
   * repeats (the log's order chose `at`); absent where the time is not ambiguous
   */
  atOtherwise?: number;
  /** the login that did it, where the log says */
  user: string | null;
  place: LogPlace;
  /**
   * the session it belongs to (OpenSSH: the host and the process id of the syslog tag), null
   * where the log's format has none: a rename's and an upload's of one session share it
   */
  session: string | null;
}

export interface Upload extends Happening {
  kind: 'upload';
  /** the path as the log has it: the server's path, as the client named it */
  path: string;
  /** when the write began (OpenSSH's open, xferlog's time less its transfer time); `at` is when it ended */
  startedAt: number;
  /** bytes written */
  size: number;
  /** false when the file was opened without truncating it (a resumed upload): it may hold more than was written */
  sizeExact: boolean;
  /** false for an upload the connection cut short (OpenSSH's `forced close`, xferlog's status `i`) */
  complete: boolean;
  /** the client's address, where the log says */
  from: string | null;
  /**
   * false where the log's format has no renames (xferlog, CSV): an upload under a temporary
   * name (`X.part`) is then taken as the file its uploader renamed it to (`X`)
   */
  renamesLogged: boolean;
  /** what the log writes for a white-space character of a name (ProFTPD's xferlog: `_`), null when it writes names as they are */
  whiteSpaceAs: string | null;
}

/**
 * A request the server may have refused: OpenSSH logs the request, then (only on failure)
 * `sent status …` as the next line of its session. `status` is that next line's status, or null
 * when the next line was none; `No such file` may also be the answer to the next request (a
 * `stat`, which is not logged), so it is weighed against what the log says is there.
 */
interface Request extends Happening {
  status: string | null;
}

/** A rename (OpenSSH's `rename` refuses to replace a file; `posix-rename` replaces it). */
export interface Rename extends Request {
  kind: 'rename';
  from: string;
  to: string;
  replaces: boolean;
}

/** A hard link (OpenSSH's `hardlink@openssh.com`): the file is under both names after it. */
export interface Link extends Request {
  kind: 'link';
  from: string;
  to: string;
}

export interface Removal extends Request {
  kind: 'remove';
  path: string;
}

export type TransferEvent = Upload | Rename | Link | Removal;

/**
 * A file a session opened for writing whose close the log has not shown yet (OpenSSH's
 * `open … flags WRITE…` without its `close`): an upload still being written. Only a log that
 * writes an upload's start has these (OpenSSH's); xferlog and the CSV write an upload once it ended.
 */
export interface OpenWrite {
  /** the log file family the line was read from */
  server: string;
  /** the path as the log has it */
  path: string;
  /** when it was opened */
  since: number;
  user: string | null;
  session: string;
  place: LogPlace;
}

/** An empty, `.` or `..` part of a path: where one is, normalizing it changes it. */
const NOT_NORMAL = /\/\/|\/\.\.?(?:\/|$)/;

/**
 * A path of the log as the server has it from its root (a chroot's folder, in the intake's
 * terms). A path from the server's root that is normal already (nearly all of them) is given back
 * as it is, the very string: no new one per line of a year's log.
 */
export function serverPath(root: string, path: string): string {
  if (root === '/' && isNormalPath(path)) return path;
  return posix.normalize(posix.join(root, path.startsWith('/') ? path : `/${path}`));
}

/** A path from the server's root that normalizing leaves as it is: `serverPath` gives it back under the root `/`. */
export function isNormalPath(path: string): boolean {
  return path.startsWith('/') && !NOT_NORMAL.test(path);
}

/** A character past Latin-1: a string holding one is kept in UTF-16. */
const BEYOND_LATIN1 = /[^\u0000-\u00ff]/;

/**
 * A string of its own, for one kept long: a part cut from a line (a path from a log's line) is a
 * slice of it, which keeps the whole line alive as long as the part lives; its own copy is half
 * the memory of slice and line.
 */
export function ownCopy(text: string): string {
  // Latin-1 both ways where every code unit fits a byte (every ASCII name): a string of one byte a
  // character, as the line's was (UTF-16 made every path and name of a year's log twice the
  // size, and each answer written with one); else UTF-16 both ways: every code unit as it was, a
  // lone surrogate too
  return BEYOND_LATIN1.test(text) ? Buffer.from(text, 'utf16le').toString('utf16le') : Buffer.from(text, 'latin1').toString('latin1');
}

/** How a log file was read: every line is one of these, and none is passed over without a count. */
export interface LogFileReport {
  file: string;
  /** `unknown`: it has lines, yet none a format could be told by (each over the line limit, or it stopped first) */
  format: LogFormat | 'empty' | 'unknown';
  lines: number;
  /** lines that told of a transfer (an upload, a rename, a removal, a session, a download) */
  transferLines: number;
  /** lines of the log that are about something else (other programs in a syslog file, a header) */
  otherLines: number;
  /** lines that could not be read: counted, and the first of them kept */
  unreadable: number;
  unreadableQuoted: { line: number; text: string }[];
  /**
   * the unreadable lines that may hide an upload (a line torn in the middle, a message the
   * server cut at its length limit, an xferlog line that does not read): each is a discrepancy,
   * for the audit cannot vouch for what it does not read; the first hundred are kept
   */
  hidingUploads: { line: number; text: string; why: string }[];
  /** how many lines may hide an upload in all: `hidingUploads` keeps the first hundred */
  hidingUploadsTotal: number;
  /** lines longer than a line may be (`MAX_LINE_BYTES`): counted and named, never read, since one may hide an upload */
  overLong: number;
  overLongQuoted: { line: number; bytes: number }[];
  /** why the file was not read to its end (a decompression bomb), and the line it stopped in; null when it was */
  stopped: { line: number; reason: string } | null;
  firstAt: number | null;
  lastAt: number | null;
}

export type LogFormat = 'openssh-syslog' | 'xferlog' | 'csv';

/** What a format's line reader makes of one line. */
export type LineVerdict =
  | { kind: 'events'; events: TransferEvent[]; at: number | null }
  | { kind: 'other' }
  /** `hides`: why this line may hide an upload, or null when it cannot (a line of something else) */
  | { kind: 'unreadable'; hides: string | null };

/** What every happening of a line shares, as a format's reader gathers it (`atOtherwise` null: the time is not ambiguous). */
export interface HappeningFields {
  server: string;
  at: number;
  atOtherwise: number | null;
  user: string | null;
  place: LogPlace;
  session: string | null;
}

/**
 * An upload, always of one shape: a log of a year holds a million, and an object spread from
 * another (`{ ...common, path }`) is one of V8's dictionaries, three times the size.
 */
export function uploadEvent(
  common: HappeningFields,
  upload: Pick<Upload, 'path' | 'startedAt' | 'size' | 'sizeExact' | 'complete' | 'from' | 'renamesLogged' | 'whiteSpaceAs'>,
): Upload {
  const event: Upload = {
    kind: 'upload',
    server: common.server,
    at: common.at,
    user: common.user,
    place: common.place,
    session: common.session,
    // a slice of the log's line, else: the line would live as long as the upload
    path: ownCopy(upload.path),
    startedAt: upload.startedAt,
    size: upload.size,
    sizeExact: upload.sizeExact,
    complete: upload.complete,
    from: upload.from,
    renamesLogged: upload.renamesLogged,
    whiteSpaceAs: upload.whiteSpaceAs,
  };
  if (common.atOtherwise !== null) event.atOtherwise = common.atOtherwise;
  return event;
}
