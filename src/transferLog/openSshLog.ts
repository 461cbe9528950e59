import type { Zone } from '../layout/values/timeZones.js';
import { isoTime, localTime, MONTHS, SyslogYears } from './logTimes.js';
import {
  uploadEvent,
  type LineVerdict,
  type Link,
  type LogPlace,
  type OpenWrite,
  type Removal,
  type Rename,
  type TransferEvent,
} from './transferEvents.js';

/**
 * OpenSSH's `sftp-server` (and `internal-sftp`) at `-l INFO`, as a syslog daemon writes it: a
 * header (`Dec  1 02:00:01 host sftp-server[4242]: ` in the traditional format, or
 * `2026-12-01T02:00:01.123456+01:00 host …` in rsyslog's and journalctl's precise one) and one
 * message per request:
 *
 *     session opened for local user adyen from [10.0.0.5]
 *     open "/in/settle_x.csv" flags WRITE,CREATE,TRUNCATE mode 0644
 *     close "/in/settle_x.csv" bytes read 0 written 1234
 *     forced close "/in/settle_x.csv" bytes read 0 written 512      (the connection dropped)
 *     posix-rename old "/in/x.part" new "/in/settle_x.csv"           (also `rename old … new …`)
 *     hardlink old "/old/x.csv" new "/in/settle_x.csv"
 *     remove name "/in/settle_x.csv"
 *     sent status Permission denied                                  (the request before it failed)
 *
 * A session's lines are tied together by the process id in the syslog tag (and the host): the
 * open says how a file was opened (truncated, or written into as it was), its close how much
 * was written. Only the SFTP server's own lines are read (its program name, with a pid); every
 * other line (other programs, sshd's own, sftp-server's other requests) is counted as another
 * program's or request's.
 *
 * Names are written as OpenSSH's log.c writes every message to syslog: through `strnvis` with
 * `VIS_CSTYLE|VIS_NL|VIS_TAB|VIS_OCTAL` (a backslash doubled, `\n` `\t` `\r` `\b` `\a` `\v`
 * `\f` `\0`, every other byte that is not printable ASCII, UTF-8 included, as `\ooo`; a quote
 * and a space as they are), then `syslog(…, "%.500s", …)`: a message is cut at 500 bytes.
 */

const TRADITIONAL =
  /^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\S+) ([^\s[:]+)(?:\[(\d+)\])?: ?(.*)$/;
const PRECISE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) (\S+) ([^\s[:]+)(?:\[(\d+)\])?: ?(.*)$/;

/** rsyslog writes a control character as `#ooo` (a stray CR from `sftp-server -e` is `#015`). */
const TRAILING_CR = /(?:#015|\r)+$/;
const REPEATED = /^message repeated (\d+) times: \[ ?(.*?) ?\]$/;
/**
 * The most repeats of one message read: sftp-server never writes one transfer message many
 * times running (a close follows its open), and a line claiming millions would make millions of
 * events from a hundred bytes. More is unreadable, never unpacked.
 */
const MAX_REPEATED = 1000;

const SESSION_OPENED = /^session opened for local user (.+) from \[([^\]]*)\]$/;
const SESSION_CLOSED = /^session closed for local user (.+) from \[([^\]]*)\]$/;
const OPEN = /^open "(.*)" flags (\S+) mode (0[0-7]*)$/;
const CLOSE = /^(forced )?close "(.*)" bytes read (\d+) written (\d+)$/;
const RENAME = /^(posix-)?rename old "(.*)" new "(.*)"$/;
const HARDLINK = /^hardlink old "(.*)" new "(.*)"$/;
const REMOVE = /^remove name "(.*)"$/;
const SENT_STATUS = /^sent status (.+)$/;
/** A message that starts like one of those must read as one: a line that does not is unreadable, never skipped. */
const OURS =
  /^(open "|(forced )?close "|(posix-)?rename old "|hardlink old "|remove name "|sent status |session (opened|closed) for local user )/;
const STARTS = ['open "', 'close "', 'forced close "', 'rename old "', 'posix-rename old "', 'hardlink old "', 'remove name "'];
/** The SFTP server's program names in a syslog tag: `sftp-server`, or `internal-sftp` and sshd's own (whose process serves it). */
const SFTP_PROGRAMS = new Set(['sftp-server', 'internal-sftp', 'sshd', 'sshd-session']);
/** OpenSSH's log.c writes at most this many bytes of a message to syslog. */
const MESSAGE_LIMIT = 500;
const CSTYLE: Record<string, number> = { n: 10, r: 13, b: 8, a: 7, v: 11, t: 9, f: 12, s: 32, '\\': 92 };

/** A name as OpenSSH's `strnvis` wrote it, decoded to its bytes and read as UTF-8; null when an escape is broken (a cut message). */
export function decodeVis(text: string): string | null {
  if (!text.includes('\\')) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const character = text[i]!;
    if (character !== '\\') {
      bytes.push(...Buffer.from(character, 'utf8'));
      continue;
    }
    const octal = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4));
    if (octal) {
      bytes.push(parseInt(octal[0], 8) & 0xff);
      i += octal[0].length;
      continue;
    }
    const escaped = CSTYLE[text[i + 1] ?? ''];
    if (escaped === undefined) return null;
    bytes.push(escaped);
    i++;
  }
  return Buffer.from(bytes).toString('utf8');
}

/** How often `needle` occurs in `text`. */
function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}

export interface SyslogHeader {
  at: number;
  /** the other instant a traditional line's local time may be, in the hour a fall-back repeats */
  otherwise: number | null;
  host: string;
  tag: string;
  pid: string | null;
  message: string;
}

/**
 * A syslog line's header, in either format; null when the line is no syslog line. `yearOf`: the
 * year of a traditional line, which writes none (SyslogYears); `after`: the instant of the log's
 * line before it, which tells the two passes of a fall-back hour apart.
 */
export function syslogHeader(
  line: string,
  zone: Zone,
  yearOf: (month: number, day: number) => number,
  after: number | null = null,
): SyslogHeader | null {
  const t = TRADITIONAL.exec(line);
  if (t) {
    const mo = MONTHS.indexOf(t[1]!) + 1;
    const d = Number(t[2]);
    const wall = { y: yearOf(mo, d), mo, d, h: Number(t[3]), mi: Number(t[4]), s: Number(t[5]) };
    const { at, otherwise } = localTime(zone, wall, after);
    return Number.isNaN(at) ? null : { at, otherwise, host: t[6]!, tag: t[7]!, pid: t[8] ?? null, message: t[9]! };
  }
  const p = PRECISE.exec(line);
  if (!p) return null;
  const at = isoTime(p[1]!, zone);
  return Number.isNaN(at) ? null : { at, otherwise: null, host: p[2]!, tag: p[3]!, pid: p[4] ?? null, message: p[5]! };
}

interface Session {
  user: string | null;
  from: string | null;
  /** the files open for writing, by path: when and how each was opened */
  writing: Map<string, { at: number; flags: string[]; place: LogPlace }[]>;
  /** the last request a `sent status` line would answer (a rename, link or removal), until the session's next line */
  lastRequest: Rename | Link | Removal | null;
}

/** Reads one server family's syslog lines in order, keeping each session's open files between its lines. */
export class OpenSshLog {
  private readonly sessions = new Map<string, Session>();
  /** the instant of the last line read, for the order that tells a fall-back hour's two passes apart */
  private lastAt: number | null = null;

  /** the years of its traditional lines, from their order and the base year it was given */
  readonly years: SyslogYears;
  /** whether any line was traditional (its year not written): then the base year was chosen, not read */
  yearless = false;

  constructor(
    /** the log file family: with the host of each line, whose paths these are */
    private readonly family: string,
    private readonly zone: Zone,
    /** the year of its first traditional line */
    baseYear: number,
  ) {
    this.years = new SyslogYears(baseYear);
  }

  private readonly yearOf = (month: number, day: number): number => {
    this.yearless = true;
    return this.years.of(month, day);
  };

  read(line: string, place: LogPlace): LineVerdict {
    const header = syslogHeader(line, this.zone, this.yearOf, this.lastAt);
    if (header) this.lastAt = header.at;
    if (!header) return { kind: 'unreadable', hides: 'a line without a syslog header (torn, or written over)' };
    if (!SFTP_PROGRAMS.has(header.tag) || header.pid === null) return { kind: 'other' };
    let message = header.message.replace(TRAILING_CR, '');
    let times = 1;
    const repeated = REPEATED.exec(message);
    if (repeated) {
      times = Number(repeated[1]);
      message = repeated[2]!;
      if (times > MAX_REPEATED && OURS.test(message))
        return { kind: 'unreadable', hides: `an SFTP request repeated ${times} times, more than the ${MAX_REPEATED} read` };
    }
    if (!OURS.test(message)) {
      // a line torn right after its tag (`close` cut to `clo`) may have been an upload's
      return STARTS.some((start) => message !== '' && start.startsWith(message) && start !== message)
        ? { kind: 'unreadable', hides: 'a request of the SFTP server torn before its name' }
        : { kind: 'other' };
    }
    const events: TransferEvent[] = [];
    for (let i = 0; i < times; i++) {
      const read = this.message(header, message, place);
      if (typeof read === 'string') return { kind: 'unreadable', hides: read };
      events.push(...read);
    }
    return { kind: 'events', events, at: header.at };
  }

  /**
   * The uploads opened for writing (`open "…" flags WRITE…`) whose close the log has not (yet)
   * shown, in a session that has not ended: still being written, as far as the log says.
   */
  stillOpen(): OpenWrite[] {
    const open: OpenWrite[] = [];
    for (const [session, s] of this.sessions) {
      for (const [path, writes] of s.writing) {
        for (const write of writes) open.push({ server: this.family, path, since: write.at, user: s.user, session, place: write.place });
      }
    }
    return open;
  }

  private session(header: SyslogHeader): Session {
    const key = `${header.host}[${header.pid ?? header.tag}]`;
    let s = this.sessions.get(key);
    if (!s) {
      s = { user: null, from: null, writing: new Map(), lastRequest: null };
      this.sessions.set(key, s);
    }
    return s;
  }

  /**
   * The events of one sftp-server message; when it starts like one and does not read as one,
   * why it may hide an upload.
   */
  private message(header: SyslogHeader, message: string, place: LogPlace): TransferEvent[] | string {
    const server = `${this.family}@${header.host}`;
    const session = this.session(header);
    const common = {
      server,
      at: header.at,
      ...(header.otherwise === null ? {} : { atOtherwise: header.otherwise }),
      user: session.user,
      place,
      session: `${header.host}[${header.pid ?? header.tag}]`,
    };
    const request = session.lastRequest;
    session.lastRequest = null;
    const unreadable =
      Buffer.byteLength(message) >= MESSAGE_LIMIT
        ? `a message cut at OpenSSH's ${MESSAGE_LIMIT}-byte limit: the name it holds is not whole`
        : 'a request of the SFTP server that does not read (a torn line?)';
    let regExpExecArray: RegExpExecArray | null;
    if ((regExpExecArray = SENT_STATUS.exec(message))) {
      if (request) request.status = regExpExecArray[1]!;
      return [];
    }
    if ((regExpExecArray = SESSION_OPENED.exec(message))) {
      session.user = regExpExecArray[1]!;
      session.from = regExpExecArray[2]!;
      session.writing.clear();
      return [];
    }
    if (SESSION_CLOSED.test(message)) {
      this.sessions.delete(`${header.host}[${header.pid ?? header.tag}]`);
      return [];
    }
    if ((regExpExecArray = OPEN.exec(message))) {
      const path = decodeVis(regExpExecArray[1]!);
      if (path === null) return unreadable;
      const flags = regExpExecArray[2]!.split(',');
      // a download, or a look: not an upload
      if (flags.includes('WRITE') || flags.includes('APPEND')) {
        const list = session.writing.get(path) ?? [];
        list.push({ at: header.at, flags, place });
        session.writing.set(path, list);
      }
      return [];
    }
    if ((regExpExecArray = CLOSE.exec(message))) {
      const path = decodeVis(regExpExecArray[2]!);
      if (path === null) return unreadable;
      const written = Number(regExpExecArray[4]);
      const opened = session.writing.get(path)?.pop();
      // opened for reading (a download), or nothing written into a file opened as it was
      if (!opened && written === 0) return [];
      const truncated = opened ? opened.flags.includes('TRUNCATE') || opened.flags.includes('EXCL') : false;
      if (opened && written === 0 && !truncated) return [];
      return [
        uploadEvent(
          { ...common, atOtherwise: header.otherwise },
          {
            path,
            startedAt: opened?.at ?? header.at,
            size: written,
            sizeExact: truncated,
            complete: regExpExecArray[1] === undefined,
            from: session.from,
            renamesLogged: true,
            whiteSpaceAs: null,
          },
        ),
      ];
    }
    // a name holding `" new "` leaves where the old name ends untold
    const twoNames = (re: RegExp) => (occurrences(message, '" new "') === 1 ? re.exec(message) : null);
    if ((regExpExecArray = twoNames(RENAME)) || (regExpExecArray = twoNames(HARDLINK))) {
      const [from, to] =
        regExpExecArray.length === 4 ? [regExpExecArray[2]!, regExpExecArray[3]!] : [regExpExecArray[1]!, regExpExecArray[2]!];
      const [oldPath, newPath] = [decodeVis(from), decodeVis(to)];
      if (oldPath === null || newPath === null) return unreadable;
      const event: Rename | Link =
        regExpExecArray.length === 4
          ? { kind: 'rename', ...common, from: oldPath, to: newPath, replaces: regExpExecArray[1] !== undefined, status: null }
          : { kind: 'link', ...common, from: oldPath, to: newPath, status: null };
      session.lastRequest = event;
      return [event];
    }
    if ((regExpExecArray = REMOVE.exec(message))) {
      const path = decodeVis(regExpExecArray[1]!);
      if (path === null) return unreadable;
      const event: Removal = { kind: 'remove', ...common, path, status: null };
      session.lastRequest = event;
      return [event];
    }
    return occurrences(message, '" new "') > 1 ? `a rename of a name holding '" new "': where its old name ends is not told` : unreadable;
  }
}
