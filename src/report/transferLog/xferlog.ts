import type { Zone } from '../../layout/timeZones.js';
import { MONTHS, wallClock } from './logTimes.js';
import type { LineVerdict, LogPlace } from './transferEvents.js';

/**
 * The xferlog format (xferlog(5)) that ProFTPD's `TransferLog`, vsftpd (`xferlog_std_format`) and
 * Pure-FTPd (`-O xferlog:`) write, one line per transfer, in the server's local time:
 *
 *     Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 /in/settle_x.csv b _ i r adyen sftp 0 * c
 *
 * current time, transfer seconds, remote host, bytes, file name (it may hold spaces), type,
 * action flag, direction (`i` in, `o` out, `d` deleted: ProFTPD's), access mode, user, service,
 * authentication method, user id, and status (`c` complete, `i` incomplete; absent in old
 * writers). Renames are not in it.
 */
export const XFERLOG =
  /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4}) (\d+) (\S+) (\d+) (.+) ([ab]) (\S+) ([iod]) ([agr]) (\S+) (\S+) ([01]) (\S+)(?: ([ci]))?$/;

export function readXferlogLine(line: string, place: LogPlace, family: string, zone: Zone): LineVerdict {
  const m = XFERLOG.exec(line);
  if (!m) return { kind: 'unreadable' };
  const month = MONTHS.indexOf(m[1]!) + 1;
  const at = wallClock(zone, Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  if (Number.isNaN(at)) return { kind: 'unreadable' };
  const [seconds, host, bytes, path, direction, user, status] = [m[7], m[8], m[9], m[10], m[13], m[15], m[19]];
  const common = { server: family, at, user: user!, place };
  if (direction === 'o') return { kind: 'events', events: [], at }; // a download
  if (direction === 'd') return { kind: 'events', events: [{ kind: 'remove', ...common, path: path! }], at };
  return {
    kind: 'events',
    events: [
      {
        kind: 'upload',
        ...common,
        path: path!,
        startedAt: at - Number(seconds) * 1000,
        size: Number(bytes),
        sizeExact: true,
        complete: status !== 'i',
        from: host!,
        renamesLogged: false,
      },
    ],
    at,
  };
}
