import type { Zone } from '../layout/values/timeZones.js';
import { localTime, MONTHS } from './logTimes.js';
import { uploadEvent, type LineVerdict, type LogPlace } from './transferEvents.js';

/**
 * The xferlog format (xferlog(5)) that ProFTPD's `TransferLog`, vsftpd (`xferlog_std_format`) and
 * Pure-FTPd (`-O xferlog:`) write, one line per transfer, in the server's local time:
 *
 *     Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 /in/settle_x.csv b _ i r adyen sftp 0 * c
 *
 * current time, transfer seconds, remote host, bytes, file name (it may hold spaces), type,
 * action flag, direction (`i` in, `o` out, `d` deleted: ProFTPD's), access mode, user, service,
 * authentication method, user id, and status (`c` complete, `i` incomplete; absent in old
 * writers). Renames are not in it. ProFTPD writes every white-space character of a name as `_`
 * (a name with a space, a tab or a newline would end the field or the line): such a name is
 * matched to the ledger's names after (`whiteSpaceAs`).
 */
export const XFERLOG =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4}) (\d+) (\S+) (\d+) (.+) ([ab]) (\S+) ([iod]) ([agr]) (\S+) (\S+) ([01]) (\S+)(?: ([ci]))?$/;

export function readXferlogLine(line: string, place: LogPlace, family: string, zone: Zone): LineVerdict {
  const regExpExecArray = XFERLOG.exec(line);
  // every line of an xferlog is a transfer: one that does not read may be an upload
  if (!regExpExecArray) return { kind: 'unreadable', hides: 'an xferlog line that does not read (torn?)' };
  const month = MONTHS.indexOf(regExpExecArray[1]!) + 1;
  // without the order of the lines before it, the repeated hour of a fall-back is read as its first pass, and said so
  const { at, otherwise } = localTime(zone, {
    y: Number(regExpExecArray[6]),
    mo: month,
    d: Number(regExpExecArray[2]),
    h: Number(regExpExecArray[3]),
    mi: Number(regExpExecArray[4]),
    s: Number(regExpExecArray[5]),
  });
  if (Number.isNaN(at)) return { kind: 'unreadable', hides: 'an xferlog line whose time is no time' };
  const [seconds, host, bytes, path, direction, user, status] = [
    regExpExecArray[7],
    regExpExecArray[8],
    regExpExecArray[9],
    regExpExecArray[10],
    regExpExecArray[13],
    regExpExecArray[15],
    regExpExecArray[19],
  ];
  const common = { server: family, at, ...(otherwise === null ? {} : { atOtherwise: otherwise }), user: user!, place, session: null };
  if (direction === 'o') return { kind: 'events', events: [], at }; // a download
  if (direction === 'd') return { kind: 'events', events: [{ kind: 'remove', ...common, path: path!, status: null }], at };
  return {
    kind: 'events',
    events: [
      uploadEvent(
        { ...common, atOtherwise: otherwise },
        {
          path: path!,
          startedAt: at - Number(seconds) * 1000,
          size: Number(bytes),
          sizeExact: true,
          complete: status !== 'i',
          from: host!,
          renamesLogged: false,
          whiteSpaceAs: '_',
        },
      ),
    ],
    at,
  };
}
