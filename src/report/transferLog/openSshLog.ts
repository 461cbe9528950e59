import type { Zone } from '../../layout/timeZones.js';
import { isoTime, MONTHS, wallClock, yearBefore } from './logTimes.js';
import type { LineVerdict, LogPlace, TransferEvent } from './transferEvents.js';

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
 *     remove name "/in/settle_x.csv"
 *
 * A session's lines are tied together by the process id in the syslog tag (and the host): the
 * open says how a file was opened (truncated, or written into as it was), its close how much
 * was written. Every other line (other programs, sshd's own, sftp-server's other requests) is
 * counted as another program's or request's.
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
const RENAME = /^(?:posix-)?rename old "(.*)" new "(.*)"$/;
const REMOVE = /^remove name "(.*)"$/;
/** A message that starts like one of those must read as one: a line that does not is unreadable, never skipped. */
const OURS = /^(open "|(forced )?close "|(posix-)?rename old "|remove name "|session (opened|closed) for local user )/;

export interface SyslogHeader {
  at: number;
  host: string;
  tag: string;
  pid: string | null;
  message: string;
}

/** A syslog line's header, in either format; null when the line is no syslog line. */
export function syslogHeader(line: string, zone: Zone, reference: number): SyslogHeader | null {
  const t = TRADITIONAL.exec(line);
  if (t) {
    const month = MONTHS.indexOf(t[1]!) + 1;
    const day = Number(t[2]);
    const at = wallClock(zone, yearBefore(reference, zone, month, day), month, day, Number(t[3]), Number(t[4]), Number(t[5]));
    return Number.isNaN(at) ? null : { at, host: t[6]!, tag: t[7]!, pid: t[8] ?? null, message: t[9]! };
  }
  const p = PRECISE.exec(line);
  if (!p) return null;
  const at = isoTime(p[1]!, zone);
  return Number.isNaN(at) ? null : { at, host: p[2]!, tag: p[3]!, pid: p[4] ?? null, message: p[5]! };
}

interface Session {
  user: string | null;
  from: string | null;
  /** the files open for writing, by path: when and how each was opened */
  writing: Map<string, { at: number; flags: string[] }[]>;
}

/** Reads one server family's syslog lines in order, keeping each session's open files between its lines. */
export class OpenSshLog {
  private readonly sessions = new Map<string, Session>();

  constructor(
    /** the log file family: with the host of each line, whose paths these are */
    private readonly family: string,
    private readonly zone: Zone,
  ) {}

  /** `reference`: when the file was last written, for the year a traditional line leaves out */
  read(line: string, place: LogPlace, reference: number): LineVerdict {
    const header = syslogHeader(line, this.zone, reference);
    if (!header) return { kind: 'unreadable' };
    let message = header.message.replace(TRAILING_CR, '');
    let times = 1;
    const repeated = REPEATED.exec(message);
    if (repeated) {
      times = Number(repeated[1]);
      message = repeated[2]!;
      if (times > MAX_REPEATED && OURS.test(message)) return { kind: 'unreadable' };
    }
    if (!OURS.test(message)) return { kind: 'other' };
    const events: TransferEvent[] = [];
    for (let i = 0; i < times; i++) {
      const read = this.message(header, message, place);
      if (read === null) return { kind: 'unreadable' };
      events.push(...read);
    }
    return { kind: 'events', events, at: header.at };
  }

  private session(header: SyslogHeader): Session {
    const key = `${header.host}[${header.pid ?? header.tag}]`;
    let s = this.sessions.get(key);
    if (!s) {
      s = { user: null, from: null, writing: new Map() };
      this.sessions.set(key, s);
    }
    return s;
  }

  /** The events of one sftp-server message; null when it starts like one and does not read as one. */
  private message(h: SyslogHeader, message: string, place: LogPlace): TransferEvent[] | null {
    const server = `${this.family}@${h.host}`;
    const session = this.session(h);
    const common = { server, at: h.at, user: session.user, place };
    let m: RegExpExecArray | null;
    if ((m = SESSION_OPENED.exec(message))) {
      session.user = m[1]!;
      session.from = m[2]!;
      session.writing.clear();
      return [];
    }
    if (SESSION_CLOSED.test(message)) {
      this.sessions.delete(`${h.host}[${h.pid ?? h.tag}]`);
      return [];
    }
    if ((m = OPEN.exec(message))) {
      const flags = m[2]!.split(',');
      // a download, or a look: not an upload
      if (flags.includes('WRITE') || flags.includes('APPEND')) {
        const list = session.writing.get(m[1]!) ?? [];
        list.push({ at: h.at, flags });
        session.writing.set(m[1]!, list);
      }
      return [];
    }
    if ((m = CLOSE.exec(message))) {
      const path = m[2]!;
      const written = Number(m[4]);
      const opened = session.writing.get(path)?.pop();
      // opened for reading (a download), or nothing written into a file opened as it was
      if (!opened && written === 0) return [];
      const truncated = opened ? opened.flags.includes('TRUNCATE') || opened.flags.includes('EXCL') : false;
      if (opened && written === 0 && !truncated) return [];
      return [
        {
          kind: 'upload',
          ...common,
          path,
          startedAt: opened?.at ?? h.at,
          size: written,
          sizeExact: truncated,
          complete: m[1] === undefined,
          from: session.from,
          renamesLogged: true,
        },
      ];
    }
    if ((m = RENAME.exec(message))) return [{ kind: 'rename', ...common, from: m[1]!, to: m[2]! }];
    if ((m = REMOVE.exec(message))) return [{ kind: 'remove', ...common, path: m[1]! }];
    return null;
  }
}
