import { mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../../src/intake/names.js';
import { parseZone, type Zone } from '../../src/layout/values/timeZones.js';
import { arrivalFollower, arrivalsOf, ledgerNameOf, readingNotes, type IntakeView } from '../../src/report/arrivalAudit/arrivals.js';
import { readTransferLogs } from '../../src/transferLog/logFiles.js';
import { localTime } from '../../src/transferLog/logTimes.js';
import { decodeVis, OpenSshLog } from '../../src/transferLog/openSshLog.js';
import { ownCopy, type LineVerdict, type TransferEvent } from '../../src/transferLog/transferEvents.js';
import { readXferlogLine } from '../../src/transferLog/xferlog.js';

const UTC: Zone = { fixed: 0 };

/** The verdicts of syslog lines read in order by one reader, as the audit reads a file. */
function readSyslog(lines: string[], zone: Zone = UTC): LineVerdict[] {
  const reader = new OpenSshLog('/var/log/sftp.log', zone, 2026);
  return lines.map((line, i) => reader.read(line, { file: '/var/log/sftp.log', line: i + 1 }));
}

function eventsOf(verdicts: LineVerdict[]): TransferEvent[] {
  return verdicts.flatMap((v) => (v.kind === 'events' ? v.events : []));
}

const intake = (partner: string, user: string | null, folder = '/in'): IntakeView => ({
  partner,
  folder,
  root: '/',
  user,
  pattern: globToRegExp('settle_*.csv'),
  ignore: [],
  readyMarker: undefined,
});

/** `internal-sftp[pid]: message` lines of one session at one second each. */
const session = (pid: number, user: string, messages: string[], startSecond = 0) => [
  `Dec  1 02:00:${String(startSecond).padStart(2, '0')} host internal-sftp[${pid}]: session opened for local user ${user} from [10.0.0.5]`,
  ...messages.map((m, i) => `Dec  1 02:00:${String(startSecond + i + 1).padStart(2, '0')} host internal-sftp[${pid}]: ${m}`),
];

const upload = (path: string, bytes: number) => [
  `open "${path}" flags WRITE,CREATE,TRUNCATE mode 0644`,
  `close "${path}" bytes read 0 written ${bytes}`,
];

describe("OpenSSH's escapes", () => {
  it('decodes names as strnvis (VIS_CSTYLE|VIS_NL|VIS_TAB|VIS_OCTAL) wrote them', () => {
    expect(decodeVis('/in/\\303\\251t\\303\\251.csv')).toBe('/in/été.csv');
    expect(decodeVis('/in/a\\tb\\nc.csv')).toBe('/in/a\tb\nc.csv');
    expect(decodeVis('/in/back\\\\slash "quoted" name.csv')).toBe('/in/back\\slash "quoted" name.csv');
    expect(decodeVis('/in/nul\\000.csv')).toBe('/in/nul\0.csv');
    expect(decodeVis('/in/cut\\30')).toBe('/in/cut\x18');
    expect(decodeVis('/in/cut\\')).toBeNull();
  });

  it('reads a rename whose new name holds a quote, and an escaped upload, under their real names', () => {
    const events = eventsOf(
      readSyslog(
        session(7, 'adyen', [...upload('/in/q.part', 5), 'posix-rename old "/in/q.part" new "/in/settle_q"uo\\tte \\303\\251.csv"']),
      ),
    );
    expect(events.map((e) => (e.kind === 'rename' ? e.to : e.kind))).toEqual(['upload', '/in/settle_q"uo\tte é.csv']);
  });
});

describe('only the SFTP server reads as an upload', () => {
  it("takes another program's open and close as another program's", () => {
    const verdicts = readSyslog([
      'Dec  1 02:00:01 host cron[999]: open "/in/settle_x.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
      'Dec  1 02:00:02 host cron[999]: close "/in/settle_x.csv" bytes read 0 written 5',
      'Dec  1 02:00:03 host internal-sftp: close "/in/settle_y.csv" bytes read 0 written 5',
    ]);
    expect(verdicts.map((v) => v.kind)).toEqual(['other', 'other', 'other']);
  });
});

describe('lines that may hide an upload', () => {
  it("a message cut at OpenSSH's 500-byte limit, and lines torn, are unreadable lines that hide one", () => {
    const long = `/in/${'\\303\\251'.repeat(125)}.csv`;
    const cut = `close "${long}" bytes read 0 written 5`.slice(0, 500);
    const verdicts = readSyslog([
      ...session(7, 'adyen', [`open "${long}" flags WRITE,CREATE,TRUNCATE mode 0644`.slice(0, 500), cut, 'clo']),
      'Dec  1 02:00:09 host internal-sf',
    ]);
    const hides = verdicts.map((v) => (v.kind === 'unreadable' ? v.hides : v.kind));
    expect(hides[1]).toMatch(/cut at OpenSSH's 500-byte limit/);
    expect(hides[2]).toMatch(/cut at OpenSSH's 500-byte limit/);
    expect(hides[3]).toMatch(/torn before its name/);
    expect(hides[4]).toMatch(/without a syslog header/);
  });

  it('are named one by one up to a hundred a file, and all counted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-hiding-'));
    const good = 'Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 /in/settle_x.csv b _ i r adyen sftp 0 * c';
    await writeFile(join(dir, 'xferlog'), `${good}\n${Array.from({ length: 150 }, () => good.slice(0, 50)).join('\n')}\n`);
    const [report] = (await readTransferLogs([join(dir, 'xferlog')], UTC)).files;
    expect([report!.hidingUploads.length, report!.hidingUploadsTotal, report!.hidingUploads[0]!.line]).toEqual([100, 150, 2]);
  });

  it('every xferlog line that does not read may hide one', () => {
    const verdict = readXferlogLine('Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 /in/settle_x', { file: 'x', line: 1 }, '/x', UTC);
    expect(verdict).toMatchObject({ kind: 'unreadable', hides: expect.stringMatching(/xferlog/) });
  });
});

describe('arrivals followed', () => {
  const one = [intake('adyen', 'adyen')];

  it('a temporary name renamed out of the intake leaves it', () => {
    const { arrivals } = arrivalsOf(
      eventsOf(readSyslog(session(7, 'adyen', [...upload('/in/x.part', 5), 'posix-rename old "/in/x.part" new "/tmp/x"']))),
      one,
    );
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.departed).toMatchObject({ how: 'renamed', to: '/tmp/x', leftIntake: true });
  });

  it('a hard link into the intake is an arrival of the linked upload; the old name stays', () => {
    const lines = session(7, 'adyen', [
      ...upload('/old/a.csv', 7),
      'hardlink old "/old/a.csv" new "/in/settle_a.csv"',
      'hardlink old "/archive/b.csv" new "/in/settle_b.csv"',
    ]);
    const { arrivals } = arrivalsOf(eventsOf(readSyslog(lines)), one);
    expect(arrivals.map((a) => [a.name, a.cameBy, a.upload.size, a.upload.sizeExact, a.sizeKnown])).toEqual([
      ['settle_a.csv', 'link', 7, true, true],
      // linked from a file the log never saw written: its size is not known
      ['settle_b.csv', 'link', 0, false, false],
    ]);
    expect(readingNotes(arrivals[1]!, 'settle_b.csv', [])).toEqual(['linked from a name the log never saw written: its size is not known']);
  });

  it('a posix-rename over an upload replaces it; a rename the server refused moves nothing', () => {
    const lines = session(7, 'adyen', [
      ...upload('/in/settle_a.csv', 5),
      ...upload('/in/settle_b.csv', 6),
      'posix-rename old "/in/settle_b.csv" new "/in/settle_a.csv"',
      ...upload('/in/settle_c.csv', 7),
      'rename old "/in/settle_c.csv" new "/in/settle_a.csv"',
      'sent status Failure',
      'rename old "/in/settle_nothere.csv" new "/in/settle_d.csv"',
      'sent status No such file',
    ]);
    const { arrivals } = arrivalsOf(eventsOf(readSyslog(lines)), one);
    const a = arrivals.filter((x) => x.name === 'settle_a.csv');
    expect(a.map((x) => x.upload.size)).toEqual([5, 6]);
    expect(a[0]!.overwrittenBy).toBe(a[1]);
    expect(a[1]!.departed).toBeNull();
    expect(arrivals.find((x) => x.name === 'settle_c.csv')!.departed).toBeNull();
    expect(arrivals.some((x) => x.name === 'settle_d.csv')).toBe(false);
  });

  it('a rename answered "No such file" by the next request (a stat before a put) still happened', () => {
    const lines = session(7, 'adyen', [
      ...upload('/in/x.part', 5),
      'posix-rename old "/in/x.part" new "/in/settle_x.csv"',
      'sent status No such file',
      ...upload('/in/settle_y.csv', 3),
    ]);
    const { arrivals } = arrivalsOf(eventsOf(readSyslog(lines)), one);
    expect(arrivals.map((x) => [x.name, x.departed?.how ?? null])).toEqual([
      ['x.part', 'renamed'],
      ['settle_x.csv', null],
      ['settle_y.csv', null],
    ]);
  });

  it("each chrooted partner's session is its own, in one syslog file", () => {
    const lines = [...session(7, 'alpha', upload('/in/settle_a.csv', 5)), ...session(8, 'beta', upload('/in/settle_a.csv', 6), 10)];
    const { arrivals } = arrivalsOf(eventsOf(readSyslog(lines)), [intake('alpha', 'alpha'), intake('beta', 'beta')]);
    expect(arrivals.map((a) => [a.partner, a.upload.size, a.overwrittenBy])).toEqual([
      ['alpha', 5, null],
      ['beta', 6, null],
    ]);
  });

  it("without chroots, a partner's login and the run's share the server's paths: the run's move takes the upload away", () => {
    const lines = [
      ...session(7, 'adyen', upload('/in/settle_a.csv', 5)),
      ...session(8, 'settle', ['posix-rename old "/in/settle_a.csv" new "/archive/settle_a.csv"'], 10),
    ];
    const { arrivals } = arrivalsOf(eventsOf(readSyslog(lines)), [intake('adyen', 'settle')]);
    expect(arrivals.map((a) => [a.partner, a.departed?.to])).toEqual([['adyen', '/archive/settle_a.csv']]);
  });

  it("a path relative to the session's start folder lands in its partner's intake", () => {
    const lines = session(7, 'adyen', [...upload('settle_r.csv', 5), 'remove name "/in/settle_r.csv"']);
    const { arrivals, strays } = arrivalsOf(eventsOf(readSyslog(lines)), one);
    expect(strays).toEqual([]);
    // and is the file a later absolute path names
    expect(arrivals.map((a) => [a.name, a.relativePath, a.departed?.how])).toEqual([['settle_r.csv', true, 'removed']]);
  });
});

describe('whose upload it is: one rule for chroots read as local folders and for relative paths', () => {
  /** a chrooted partner's intake read as a local folder: `/srv/sftp/NAME/in`, its log's paths from `/srv/sftp/NAME` */
  const chroot = (partner: string, user: string | null): IntakeView => ({
    ...intake(partner, user, `/srv/sftp/${partner}/in`),
    root: `/srv/sftp/${partner}`,
  });
  const twoSessions = [...session(7, 'alpha', upload('/in/settle_p01.csv', 5)), ...session(8, 'beta', upload('/in/settle_p01.csv', 6), 10)];

  it("two chrooted partners with local intakes on one syslog are told apart by their logins, each upload its own partner's", () => {
    const { arrivals, ambiguous } = arrivalsOf(eventsOf(readSyslog(twoSessions)), [chroot('alpha', 'alpha'), chroot('beta', 'beta')]);
    expect(arrivals.map((a) => [a.partner, a.name, a.upload.size, a.overwrittenBy])).toEqual([
      ['alpha', 'settle_p01.csv', 5, null],
      ['beta', 'settle_p01.csv', 6, null],
    ]);
    expect(ambiguous).toEqual([]);
  });

  it('without their logins, the two are ambiguous: neither partner is credited', () => {
    const { arrivals, ambiguous, strays } = arrivalsOf(eventsOf(readSyslog(twoSessions)), [chroot('alpha', null), chroot('beta', null)]);
    expect(arrivals).toEqual([]);
    expect(strays).toEqual([]);
    expect(ambiguous.map((a) => [a.path, a.upload.user, a.partners, a.upload.size])).toEqual([
      ['/in/settle_p01.csv', 'alpha', ['alpha', 'beta'], 5],
      ['/in/settle_p01.csv', 'beta', ['alpha', 'beta'], 6],
    ]);
  });

  it("a login's session reaches only its own root: a path another chroot's intake holds is not that partner's", () => {
    const lines = session(7, 'alpha', upload('/upload/settle_x.csv', 5));
    const beta = { ...chroot('beta', 'beta'), folder: '/srv/sftp/beta/upload' };
    const { arrivals, strays } = arrivalsOf(eventsOf(readSyslog(lines)), [chroot('alpha', 'alpha'), beta]);
    expect(arrivals).toEqual([]);
    expect(strays.map((s) => s.path)).toEqual(['/upload/settle_x.csv']);
  });

  it("a relative path is taken in the session's partner's intake: a local one read alone, a login's among several, else ambiguous", () => {
    const lines = session(7, 'adyen', [...upload('settle_r.csv', 5), 'remove name "/in/settle_r.csv"']);
    // a local intake (no login), the only partner reading the log: its intake, and the later absolute path is the same file
    const alone = arrivalsOf(eventsOf(readSyslog(lines)), [intake('adyen', null)]);
    expect(alone.arrivals.map((a) => [a.partner, a.name, a.relativePath, a.departed?.how])).toEqual([
      ['adyen', 'settle_r.csv', true, 'removed'],
    ]);
    // a chroot read as a local folder: the same
    const chrooted = arrivalsOf(eventsOf(readSyslog(lines)), [chroot('adyen', null)]);
    expect(chrooted.arrivals.map((a) => [a.partner, a.relativePath, a.departed?.how])).toEqual([['adyen', true, 'removed']]);
    // two partners: the login says whose
    const byLogin = arrivalsOf(eventsOf(readSyslog(lines)), [intake('adyen', 'adyen', '/in'), intake('stripe', 'stripe', '/in-stripe')]);
    expect(byLogin.arrivals.map((a) => [a.partner, a.relativePath])).toEqual([['adyen', true]]);
    // two partners and a login of neither: ambiguous, never "into no intake"
    const neither = arrivalsOf(eventsOf(readSyslog(lines)), [intake('adyen', null, '/in'), intake('stripe', null, '/in-stripe')]);
    expect(neither.strays).toEqual([]);
    expect(neither.ambiguous.map((a) => [a.path, a.partners, a.relativePath])).toEqual([['settle_r.csv', ['adyen', 'stripe'], true]]);
  });
});

describe('the year of a syslog line that writes none', () => {
  const newYearsEve = [
    'Dec 31 23:59:50 host internal-sftp[7]: session opened for local user adyen from [10.0.0.5]',
    ...['Dec 31 23:59:58', 'Dec 31 23:59:59'].map((t, i) => `${t} host internal-sftp[7]: ${upload('/in/settle_a.csv', 5)[i]}`),
    ...['Jan  1 00:00:02', 'Jan  1 00:00:03'].map((t, i) => `${t} host internal-sftp[7]: ${upload('/in/settle_b.csv', 6)[i]}`),
    // a line a slow writer sent after the New Year's first
    'Dec 31 23:59:59 host internal-sftp[7]: remove name "/in/settle_a.csv"',
  ];
  const uploadsAt = async (now: number, mtime: Date) => {
    const dir = await mkdtemp(join(tmpdir(), 'syslog-year-'));
    const file = join(dir, 'sftp.log');
    await writeFile(file, `${newYearsEve.join('\n')}\n`);
    await utimes(file, mtime, mtime);
    const { events } = await readTransferLogs([file], UTC, { now });
    return events.map((e) => `${e.kind} ${new Date(e.at).toISOString()}`);
  };

  it("comes from the log's own order and now, never from the file's modification time", async () => {
    const read = ['upload 2026-12-31T23:59:59.000Z', 'remove 2026-12-31T23:59:59.000Z', 'upload 2027-01-01T00:00:03.000Z'];
    // read on the 5th of January, the file's time the New Year or ten years on (a copy): the same
    expect(await uploadsAt(Date.UTC(2027, 0, 5), new Date('2027-01-01T00:00:03Z'))).toEqual(read);
    expect(await uploadsAt(Date.UTC(2027, 0, 5), new Date('2037-06-01T00:00:00Z'))).toEqual(read);
    // read in the summer after: the log's last line is no later than now, so still that New Year
    expect(await uploadsAt(Date.UTC(2027, 6, 1), new Date('2037-06-01T00:00:00Z'))).toEqual(read);
  });
});

describe('the events handed to the follower as they are read', () => {
  const csvLog = async (files: Record<string, string[]>) => {
    const dir = await mkdtemp(join(tmpdir(), 'handed-'));
    for (const [name, lines] of Object.entries(files)) await writeFile(join(dir, name), `${lines.join('\n')}\n`);
    return Object.keys(files).map((name) => join(dir, name));
  };
  const line = (second: number, name: string, size = 10) => `2026-12-01T02:00:${String(second).padStart(2, '0')}.000Z,/in/${name},${size}`;
  const said = (events: TransferEvent[]) =>
    events.map((e) => `${e.kind === 'upload' ? e.path : e.kind} ${e.place.file.slice(-5)}:${e.place.line}`);
  /** the log read with a follower, and as the old way held and sorted them: the events each way, and the arrivals */
  const readBothWays = async (files: string[]) => {
    const handed: TransferEvent[] = [];
    const follower = arrivalFollower([intake('adyen', null)]);
    const read = await readTransferLogs(files, UTC, {}, (event) => {
      handed.push(event);
      follower.follow(event);
    });
    const held = await readTransferLogs(files, UTC);
    return {
      read,
      handed,
      held,
      followed: follower.found.arrivals,
      heldArrivals: arrivalsOf(held.events, [intake('adyen', null)]).arrivals,
    };
  };

  it('hands over a log read in time order, over its files in turn, and holds none: the same events and arrivals as held and sorted', async () => {
    const files = await csvLog({
      'a.csv': ['time,path,size', line(1, 'settle_1.csv'), line(2, 'settle_2.csv'), line(2, 'settle_3.csv')],
      'b.csv': [line(2, 'settle_1.csv', 11), line(5, 'settle_4.csv')],
    });
    const { read, handed, held, followed, heldArrivals } = await readBothWays(files);
    expect(read.handed).toBe(true);
    expect(read.events).toEqual([]);
    expect(said(handed)).toEqual(said(held.events));
    expect(said(handed)).toEqual([
      '/in/settle_1.csv a.csv:2',
      '/in/settle_2.csv a.csv:3',
      '/in/settle_3.csv a.csv:4',
      '/in/settle_1.csv b.csv:1',
      '/in/settle_4.csv b.csv:2',
    ]);
    expect(followed).toEqual(heldArrivals);
    expect(read.files).toEqual(held.files);
  });

  it('stops at the first event out of order and reads the logs again, all held and sorted, the follower to begin afresh', async () => {
    // the second file is another server's, earlier: the files interleave by time
    const files = await csvLog({
      'a.csv': [line(1, 'settle_1.csv'), line(4, 'settle_2.csv')],
      'b.csv': [line(2, 'settle_3.csv'), line(3, 'settle_4.csv')],
    });
    const { read, handed, held } = await readBothWays(files);
    expect(read.handed).toBe(false);
    expect(said(handed)).toEqual(['/in/settle_1.csv a.csv:1', '/in/settle_2.csv a.csv:2']);
    expect(said(read.events)).toEqual(said(held.events));
    expect(said(read.events)).toEqual([
      '/in/settle_1.csv a.csv:1',
      '/in/settle_3.csv b.csv:1',
      '/in/settle_4.csv b.csv:2',
      '/in/settle_2.csv a.csv:2',
    ]);
    expect(read.files).toEqual(held.files);
  });

  it('hands over nothing of a syslog log (its year may be read again in another): all held', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'handed-'));
    const file = join(dir, 'sftp.log');
    await writeFile(file, `${session(7, 'adyen', upload('/in/settle_a.csv', 5)).join('\n')}\n`);
    const { read, handed, held } = await readBothWays([file]);
    expect(read.handed).toBe(false);
    expect(handed).toEqual([]);
    expect(said(read.events)).toEqual(said(held.events));
    expect(read.events).toHaveLength(1);
  });
});

describe("ProFTPD's _ for white space", () => {
  const line = 'Tue Dec 01 02:00:01 2026 1 10.0.0.5 5 /in/settle_a_b.csv b _ i r settle sftp 0 * c';
  const arrival = () => {
    const verdict = readXferlogLine(line, { file: 'x', line: 1 }, '/x', UTC);
    return arrivalsOf(verdict.kind === 'events' ? verdict.events : [], [intake('adyen', null)]).arrivals[0]!;
  };

  it("is matched to the ledger's name, and said ambiguous when two ledger names write alike", () => {
    expect(ledgerNameOf(arrival(), ['settle_a b.csv', 'other.csv'])).toEqual({ name: 'settle_a b.csv', ambiguous: [] });
    expect(ledgerNameOf(arrival(), ['settle_a b.csv', 'settle a\tb.csv'])).toEqual({
      name: 'settle_a_b.csv',
      ambiguous: ['settle a\tb.csv', 'settle_a b.csv'],
    });
    expect(ledgerNameOf(arrival(), ['other.csv'])).toEqual({ name: 'settle_a_b.csv', ambiguous: [] });
  });
});

describe('local times by the zone’s rules', () => {
  const amsterdam = parseZone('Europe/Amsterdam')!;
  const wall = (h: number, mi: number) => ({ y: 2026, mo: 10, d: 25, h, mi, s: 0 });

  it("reads the fall-back hour's first pass and second pass by the log's order, with the other instant", () => {
    expect(localTime(amsterdam, wall(2, 30))).toEqual({ at: Date.UTC(2026, 9, 25, 0, 30), otherwise: Date.UTC(2026, 9, 25, 1, 30) });
    // after a line at 02:59 of the first pass (00:59 UTC), 02:10 is the second pass
    expect(localTime(amsterdam, wall(2, 10), Date.UTC(2026, 9, 25, 0, 59))).toEqual({
      at: Date.UTC(2026, 9, 25, 1, 10),
      otherwise: Date.UTC(2026, 9, 25, 0, 10),
    });
    expect(localTime(amsterdam, wall(3, 30))).toEqual({ at: Date.UTC(2026, 9, 25, 2, 30), otherwise: null });
  });

  it('reads a whole syslog night in order', () => {
    const lines = ['Oct 25 02:50:00', 'Oct 25 02:05:00', 'Oct 25 02:55:00'].map(
      (t, i) => `${t} host internal-sftp[7]: ${i === 0 ? 'session opened for local user a from [x]' : `remove name "/in/${i}"`}`,
    );
    const verdicts = readSyslog(lines, amsterdam).map((v) => (v.kind === 'events' ? new Date(v.at!).toISOString().slice(11, 16) : v.kind));
    expect(verdicts).toEqual(['00:50', '01:05', '01:55']);
  });
});

describe('a path of the log kept as a string of its own', () => {
  it('is the same text, whatever its characters: ASCII, Latin-1, past it, astral, a lone surrogate', () => {
    for (const text of ['/in/settle_a.csv', '/in/é ÿ\u0000\u007f\u0085.csv', '/in/€ \u202e.csv', '/in/😀.csv', '/in/lone\ud800.csv', '']) {
      const line = `2026-12-01T02:00:00Z,${text},10`;
      const cut = line.slice(21, 21 + text.length);
      expect(ownCopy(cut)).toBe(text);
    }
  });
});
