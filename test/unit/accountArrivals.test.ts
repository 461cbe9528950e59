import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import {
  accountArrivals,
  type AccountedArrival,
  type AccountOptions,
  type IntakeNow,
} from '../../src/report/arrivalAudit/accountArrivals.js';
import { arrivalsOf } from '../../src/report/arrivalAudit/arrivals.js';
import { clockOffsetMessage, clockOffsetOf, type OwnMove } from '../../src/report/arrivalAudit/ownMoves.js';
import type { TransferEvent } from '../../src/transferLog/transferEvents.js';
import { globToRegExp } from '../../src/intake/names.js';

/**
 * The matching of the server's uploads to the ledger's records, on a real SQLite ledger whose
 * runs and events are written at the times each case needs.
 */

const T0 = Date.parse('2026-12-01T02:00:00Z');
const at = (seconds: number) => T0 + seconds * 1000;
const iso = (seconds: number) => new Date(at(seconds)).toISOString();
const SHA = (n: number) => createHash('sha256').update(String(n)).digest('hex');
const INTAKE = {
  partner: 'default',
  folder: '/in',
  root: '/',
  user: null,
  pattern: globToRegExp('settle_*.csv'),
  ignore: [],
  readyMarker: undefined,
};

interface LedgerRows {
  /** run id → its start, in seconds after T0 */
  runs: Record<string, number>;
  /** each event: its run, when, what, the file, and (with a hash) the (name, bytes) row it is of */
  events: {
    run: string;
    at: number;
    event: string;
    name: string;
    sha256?: string;
    size: number;
    arrival?: string;
    state?: string;
    /** a move's place (its `to`) */
    to?: string;
  }[];
}

async function ledgerWith(rows: LedgerRows): Promise<Ledger> {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-match-')), 'ledger.sqlite');
  await openSqliteLedger(path, { create: true }).close();
  const db = new Database(path);
  db.exec('BEGIN');
  for (const [run, start] of Object.entries(rows.runs)) {
    db.prepare(
      `INSERT INTO runs (run_id, mode, host, pid, started_at, ended_at, status, partner) VALUES (?, 'scheduled', 'h', 1, ?, ?, 'finished', 'default')`,
    ).run(run, iso(start), iso(start + 30));
  }
  for (const e of rows.events) {
    if (e.sha256) {
      db.prepare(
        `INSERT INTO processed_files (name, sha256, state, run_id, size, arrival, first_seen_at, updated_at, partner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'default')
         ON CONFLICT (name, sha256) DO UPDATE SET state = excluded.state, run_id = excluded.run_id`,
      ).run(e.name, e.sha256, e.state ?? e.event, e.run, e.size, e.arrival ?? null, iso(e.at), iso(e.at));
    }
    const details = e.to ? { to: e.to } : e.sha256 ? {} : { size: e.size, ...(e.arrival ? { arrival: e.arrival } : {}) };
    db.prepare(`INSERT INTO ledger_events (run_id, at, event, name, sha256, details, partner) VALUES (?, ?, ?, ?, ?, ?, 'default')`).run(
      e.run,
      iso(e.at),
      e.event,
      e.name,
      e.sha256 ?? null,
      JSON.stringify(details),
    );
  }
  db.exec('COMMIT');
  db.close();
  return openSqliteLedger(path, { create: false });
}

const place = { file: 'transfer.log', line: 1 };
const upload = (path: string, seconds: number, size: number): TransferEvent => ({
  kind: 'upload',
  server: 'sftp',
  at: at(seconds),
  startedAt: at(seconds),
  user: 'partner',
  place,
  path,
  size,
  sizeExact: true,
  complete: true,
  from: null,
  renamesLogged: true,
  whiteSpaceAs: null,
  session: null,
});
const removal = (path: string, seconds: number): TransferEvent => ({
  kind: 'remove',
  server: 'sftp',
  at: at(seconds),
  user: 'partner',
  place,
  path,
  status: null,
  session: null,
});
const rename = (from: string, to: string, seconds: number): TransferEvent => ({
  kind: 'rename',
  server: 'sftp',
  at: at(seconds),
  user: 'partner',
  place,
  from,
  to,
  replaces: false,
  status: null,
  session: null,
});

const intakeHolding = (entries: Record<string, { size: number; mtimeMs: number }>) => async (): Promise<IntakeNow> => ({
  entries: new Map(Object.entries(entries)),
});
const options = (over: Partial<AccountOptions> = {}): AccountOptions => ({ clockSlackMs: 2000, intakeNow: intakeHolding({}), ...over });

async function accountWithClock(rows: LedgerRows, events: TransferEvent[], opts: AccountOptions) {
  const ledger = await ledgerWith(rows);
  try {
    const arrivals: AccountedArrival[] = [];
    const { clockOffset } = await accountArrivals(ledger, arrivalsOf(events, [INTAKE]).arrivals, opts, (a) => arrivals.push(a));
    return { arrivals, clockOffset };
  } finally {
    await ledger.close();
  }
}

async function account(rows: LedgerRows, events: TransferEvent[], opts: AccountOptions) {
  const ledger = await ledgerWith(rows);
  try {
    const arrivals: AccountedArrival[] = [];
    await accountArrivals(ledger, arrivalsOf(events, [INTAKE]).arrivals, opts, (a) => arrivals.push(a));
    return arrivals;
  } finally {
    await ledger.close();
  }
}

const summary = (accounted: Awaited<ReturnType<typeof account>>) =>
  accounted.map((a) => [a.name, a.outcome ?? a.noRecord, a.afterWaiting, a.unmatched]);

describe('matching uploads to the ledger', () => {
  it("gives each record to the latest upload of its name it can be of: a run's record before a re-upload is the first upload's", async () => {
    const accounted = await account(
      {
        runs: { r1: 60, r2: 180 },
        events: [
          { run: 'r1', at: 61, event: 'not_ready', name: 'settle_x.csv', size: 100 },
          { run: 'r2', at: 181, event: 'claimed', name: 'settle_x.csv', sha256: SHA(2), size: 100, state: 'loaded' },
          { run: 'r2', at: 182, event: 'loaded', name: 'settle_x.csv', sha256: SHA(2), size: 100, state: 'loaded' },
          { run: 'r2', at: 182, event: 'claimed', name: 'settle_y.csv', sha256: SHA(3), size: 7, state: 'loaded' },
          { run: 'r2', at: 183, event: 'loaded', name: 'settle_y.csv', sha256: SHA(3), size: 7, state: 'loaded' },
        ],
      },
      [upload('/in/settle_x.csv', 0, 100), upload('/in/settle_x.csv', 120, 100), upload('/in/settle_y.csv', 130, 7)],
      options(),
    );
    expect(summary(accounted)).toEqual([
      // left not ready by r1, then written over at the same size before any run loaded it
      ['settle_x.csv', 'not_ready', 'overwritten', true],
      ['settle_x.csv', 'loaded', null, false],
      ['settle_y.csv', 'loaded', null, false],
    ]);
    expect(accounted[0]!.message).toMatch(
      /not ready by run r1: UNMATCHED: then overwritten by another upload under its name at 2026-12-01 02:02:00 UTC/,
    );
  });

  it('gives a record to the later of two uploads of its name though it comes where the first is next in order', async () => {
    const accounted = await account(
      { runs: { r1: 150 }, events: [{ run: 'r1', at: 151, event: 'loaded', name: 'settle_z.csv', sha256: SHA(9), size: 10 }] },
      [upload('/in/settle_z.csv', 0, 10), upload('/in/settle_z.csv', 100, 10)],
      options(),
    );
    expect(summary(accounted)).toEqual([
      ['settle_z.csv', 'overwritten', null, true],
      ['settle_z.csv', 'loaded', null, false],
    ]);
  });

  it('takes a record up to the clock slack earlier than the logged upload as of it, and no earlier', async () => {
    // the ledger's clock is 10 s behind the server's
    const rows: LedgerRows = {
      runs: { r1: -9 },
      events: [{ run: 'r1', at: -8, event: 'loaded', name: 'settle_k.csv', sha256: SHA(4), size: 50 }],
    };
    const events = [upload('/in/settle_k.csv', 0, 50)];
    expect(summary(await account(rows, events, options()))).toEqual([['settle_k.csv', 'waiting', null, true]]);
    expect(summary(await account(rows, events, options({ clockSlackMs: 15_000 })))).toEqual([['settle_k.csv', 'loaded', null, false]]);
  });

  it('accounts an upload left waiting only while the intake holds it as the run left it', async () => {
    const rows: LedgerRows = {
      runs: { r1: 60 },
      events: [
        { run: 'r1', at: 61, event: 'not_ready', name: 'settle_a.csv', size: 10, arrival: `10:${at(0)}` },
        { run: 'r1', at: 61, event: 'not_ready', name: 'settle_b.csv', size: 10, arrival: `10:${at(0)}` },
        { run: 'r1', at: 62, event: 'failed', name: 'settle_c.csv', sha256: SHA(5), size: 20, arrival: `20:${at(0)}` },
      ],
    };
    const events = [upload('/in/settle_a.csv', 0, 10), upload('/in/settle_b.csv', 0, 10), upload('/in/settle_c.csv', 0, 20)];
    const intake = intakeHolding({
      'settle_a.csv': { size: 10, mtimeMs: at(0) },
      // the same size, written again where the log does not see it
      'settle_b.csv': { size: 10, mtimeMs: at(300) },
    });
    expect(summary(await account(rows, events, options({ intakeNow: intake })))).toEqual([
      ['settle_a.csv', 'not_ready', 'still_in_intake', false],
      ['settle_b.csv', 'not_ready', 'changed_in_intake', true],
      ['settle_c.csv', 'failed', 'not_in_intake', true],
    ]);
    const unreadable = async (): Promise<IntakeNow> => ({ problem: 'the server is away' });
    const answers = await account(rows, events, options({ intakeNow: unreadable }));
    expect(answers.map((a) => a.afterWaiting)).toEqual(['intake_unreadable', 'intake_unreadable', 'intake_unreadable']);
    expect(answers[0]!.message).toContain('cannot be checked: the server is away');
  });

  it('judges an upload whose last record is a claim (its run died) by the size:mtime its (name, bytes) row kept', async () => {
    const rows: LedgerRows = {
      runs: { r1: 60 },
      events: [
        { run: 'r1', at: 61, event: 'claimed', name: 'settle_d.csv', sha256: SHA(6), size: 30, arrival: `30:${at(0)}`, state: 'claimed' },
        { run: 'r1', at: 61, event: 'claimed', name: 'settle_e.csv', sha256: SHA(7), size: 30, arrival: `30:${at(0)}`, state: 'claimed' },
      ],
    };
    const events = [upload('/in/settle_d.csv', 0, 30), upload('/in/settle_e.csv', 0, 30)];
    const intake = intakeHolding({
      'settle_d.csv': { size: 30, mtimeMs: at(0) },
      // the same size, written again since: only the row's mtime tells
      'settle_e.csv': { size: 30, mtimeMs: at(300) },
    });
    expect(summary(await account(rows, events, options({ intakeNow: intake })))).toEqual([
      ['settle_d.csv', 'claimed', 'still_in_intake', false],
      ['settle_e.csv', 'claimed', 'changed_in_intake', true],
    ]);
  });

  it('follows the log past a waiting outcome: removed or renamed away is unmatched; renamed to another name in the intake, or its content loaded, accounts for it', async () => {
    const accounted = await account(
      {
        runs: { r1: 60 },
        events: [
          { run: 'r1', at: 61, event: 'failed', name: 'settle_gone.csv', sha256: SHA(6), size: 30, state: 'failed' },
          { run: 'r1', at: 61, event: 'held', name: 'settle_away.csv', sha256: SHA(7), size: 31, state: 'held' },
          { run: 'r1', at: 61, event: 'not_ready', name: 'settle_old.csv', size: 32 },
          { run: 'r1', at: 62, event: 'held', name: 'settle_twin.csv', sha256: SHA(8), size: 33, state: 'held' },
          { run: 'r1', at: 63, event: 'loaded', name: 'settle_orig.csv', sha256: SHA(8), size: 33, state: 'loaded' },
        ],
      },
      [
        upload('/in/settle_gone.csv', 0, 30),
        upload('/in/settle_away.csv', 0, 31),
        upload('/in/settle_old.csv', 0, 32),
        upload('/in/settle_twin.csv', 0, 33),
        upload('/in/settle_orig.csv', 0, 33),
        removal('/in/settle_gone.csv', 100),
        rename('/in/settle_away.csv', '/elsewhere/settle_away.csv', 100),
        rename('/in/settle_old.csv', '/in/settle_new.csv', 100),
        removal('/in/settle_twin.csv', 100),
      ],
      options({ intakeNow: intakeHolding({ 'settle_new.csv': { size: 32, mtimeMs: at(0) } }) }),
    );
    expect(summary(accounted)).toEqual([
      ['settle_gone.csv', 'failed', 'removed', true],
      ['settle_away.csv', 'held', 'renamed_away', true],
      ['settle_old.csv', 'not_ready', 'renamed_within', false],
      ['settle_twin.csv', 'held', 'content_loaded', false],
      ['settle_orig.csv', 'loaded', null, false],
      // the renamed upload is an arrival of its own, which no run has seen yet
      ['settle_new.csv', 'waiting', null, true],
    ]);
    expect(accounted[0]!.message).toMatch(/failed by run r1: UNMATCHED: then removed at 2026-12-01 02:01:40 UTC before any run loaded it/);
  });

  it('matches many uploads of many names, each to its own records, the ledger read a page at a time', async () => {
    const names = Array.from({ length: 2000 }, (_, i) => `settle_${String(i).padStart(5, '0')}.csv`);
    // every third only claimed (its run died): 667 names whose claims are read by name, 500 a statement
    const rows: LedgerRows = {
      runs: { r1: 3000 },
      events: names.flatMap((name, i) => [
        { run: 'r1', at: 3001, event: 'claimed', name, sha256: SHA(1000 + i), size: i + 1, state: 'claimed' },
        ...(i % 3 === 0 ? [] : [{ run: 'r1', at: 3001, event: 'loaded', name, sha256: SHA(1000 + i), size: i + 1, state: 'loaded' }]),
      ]),
    };
    const uploads = names.map((name, i) => upload(`/in/${name}`, i, i + 1));
    const expected = names.map((_, i) => (i % 3 === 0 ? 'claimed' : 'loaded'));
    for (const claimNamesByIndex of [undefined, 0]) {
      const accounted = await account(rows, uploads, options({ eventsPage: 333, claimNamesByIndex }));
      expect(accounted.map((a) => a.outcome)).toEqual(expected);
      expect(accounted.map((a) => a.size)).toEqual(names.map((_, i) => i + 1));
      expect(accounted.map((a) => a.sha256)).toEqual(names.map((_, i) => SHA(1000 + i)));
    }
  });

  it("takes an upload's last outcome whatever claims came before or after it, and its last claim only where it has none, the claims read by name or by a walk alike", async () => {
    const rows: LedgerRows = {
      runs: { r1: 50, r2: 300, r3: 400 },
      events: [
        // claimed by r1, then written over at the same size before r1 loaded it: the claim is the first upload's
        { run: 'r1', at: 51, event: 'claimed', name: 'settle_r.csv', sha256: SHA(20), size: 40, state: 'loaded' },
        { run: 'r1', at: 150, event: 'loaded', name: 'settle_r.csv', sha256: SHA(20), size: 40, state: 'loaded' },
        // loaded, then claimed again by a later run (its rival's claim, as a second host makes): still loaded
        { run: 'r1', at: 52, event: 'loaded', name: 'settle_s.csv', sha256: SHA(21), size: 41, state: 'loaded' },
        { run: 'r2', at: 301, event: 'claimed', name: 'settle_s.csv', sha256: SHA(21), size: 41, state: 'loaded' },
        // claimed by two runs, each of which died: the later claim
        { run: 'r1', at: 53, event: 'claimed', name: 'settle_t.csv', sha256: SHA(22), size: 42, state: 'claimed' },
        { run: 'r3', at: 401, event: 'claimed', name: 'settle_t.csv', sha256: SHA(22), size: 42, state: 'claimed' },
        // held, then claimed by a run that died: held (an outcome) is its last word
        { run: 'r1', at: 54, event: 'held', name: 'settle_v.csv', sha256: SHA(23), size: 43, state: 'claimed' },
        { run: 'r2', at: 302, event: 'claimed', name: 'settle_v.csv', sha256: SHA(23), size: 43, state: 'claimed' },
      ],
    };
    const uploads = [
      upload('/in/settle_r.csv', 0, 40),
      upload('/in/settle_r.csv', 100, 40),
      upload('/in/settle_s.csv', 1, 41),
      upload('/in/settle_t.csv', 2, 42),
      upload('/in/settle_v.csv', 3, 43),
    ];
    const intake = intakeHolding({ 'settle_t.csv': { size: 42, mtimeMs: at(2) }, 'settle_v.csv': { size: 43, mtimeMs: at(3) } });
    const byName = await account(rows, uploads, options({ intakeNow: intake }));
    expect(byName.map((a) => [a.name, a.outcome, a.run, a.afterWaiting, a.unmatched])).toEqual([
      ['settle_r.csv', 'claimed', 'r1', 'content_loaded', false],
      ['settle_r.csv', 'loaded', 'r1', null, false],
      ['settle_s.csv', 'loaded', 'r1', null, false],
      ['settle_t.csv', 'claimed', 'r3', 'still_in_intake', false],
      ['settle_v.csv', 'held', 'r1', 'still_in_intake', false],
    ]);
    expect(await account(rows, uploads, options({ intakeNow: intake, claimNamesByIndex: 0 }))).toEqual(byName);
  });
});

/**
 * A night of the runs' own moves: three uploads, each loaded by run r1 and moved by it to
 * /archive (the ledger's `moved` records at 61, 62, 63 s), and the log's renames of them at
 * `shift` seconds off the ledger's times, its uploads too.
 */
function movedNight(shift: number) {
  const names = ['settle_m1.csv', 'settle_m2.csv', 'settle_m3.csv'];
  const rows: LedgerRows = {
    runs: { r1: 60 },
    events: names.flatMap((name, i) => [
      { run: 'r1', at: 61 + i, event: 'loaded', name, sha256: SHA(40 + i), size: 10 + i, state: 'loaded' },
      { run: 'r1', at: 61 + i, event: 'moved', name, sha256: SHA(40 + i), size: 10 + i, state: 'loaded', to: `/archive/${name}` },
    ]),
  };
  const events = [
    ...names.map((name, i) => upload(`/in/${name}`, i + shift, 10 + i)),
    ...names.map((name, i) => rename(`/in/${name}`, `/archive/${name}`, 61 + i + shift)),
  ];
  return { rows, events };
}

describe("the runs' own moves in the log", () => {
  it('are never a departure before a run read it, and agree with the ledger: no clock offset', async () => {
    const { rows, events } = movedNight(0);
    const { arrivals, clockOffset } = await accountWithClock(rows, events, options());
    expect(summary(arrivals)).toEqual([
      ['settle_m1.csv', 'loaded', null, false],
      ['settle_m2.csv', 'loaded', null, false],
      ['settle_m3.csv', 'loaded', null, false],
    ]);
    expect(clockOffset).toBeNull();
  });

  it.each([
    [3600, 'zone', 'ahead of'],
    [-3600, 'zone', 'behind'],
    [-5.5 * 3600, 'zone', 'behind'],
    [95, 'skew', 'ahead of'],
  ])('a log %s s off the ledger is found (%s), its uploads matched at that offset', async (shift, kind, way) => {
    const { rows, events } = movedNight(shift);
    const { arrivals, clockOffset } = await accountWithClock(rows, events, options());
    // read in UTC: a zone's times were written in UTC moved by the offset
    expect(clockOffset).toEqual({
      kind,
      offsetMs: shift * 1000,
      ...(kind === 'zone' ? { writtenInMs: shift * 1000 } : {}),
      moves: 3,
      of: 3,
    });
    expect(arrivals.every((a) => a.outcome === 'loaded' && !a.unmatched)).toBe(true);
    const message = clockOffsetMessage(clockOffset!, 'UTC');
    expect(message).toContain(
      `the transfer log runs ${shift === 95 ? '1 min 35 s' : shift === 3600 || shift === -3600 ? '1 h' : '5 h 30 min'} ${way} the ledger`,
    );
    expect(message).toContain(kind === 'zone' ? '--transfer-log-time-zone' : '--transfer-log-clock-slack to at least 97s');
  });

  it('finds no offset where the moves disagree among themselves, and says of each unmatched one that the ledger moved it', async () => {
    const { rows, events } = movedNight(0);
    // each rename logged at another distance from the ledger's record: no constant offset, two clocks that do not agree
    const scattered = events.map((e, i) => (e.kind === 'rename' ? { ...e, at: e.at + [600, 3000, 7000][i - 3]! * 1000 } : e));
    const shifted = scattered.map((e) => (e.kind === 'upload' ? { ...e, at: e.at + 7200_000, startedAt: e.startedAt + 7200_000 } : e));
    const { arrivals, clockOffset } = await accountWithClock(rows, shifted, options());
    expect(clockOffset).toBeNull();
    expect(arrivals.every((a) => a.unmatched)).toBe(true);
    expect(arrivals[0]!.message).toContain(
      "the ledger recorded run r1's move of it there at 2026-12-01 02:01:01 UTC: the log's clock and the ledger's disagree",
    );
  });

  it('takes a move of the same name to another place, or of another size, as no move of ours', async () => {
    const { rows, events } = movedNight(3600);
    const elsewhere = events.map((e) => (e.kind === 'rename' ? { ...e, to: e.to.replace('/archive/', '/elsewhere/') } : e));
    const { arrivals, clockOffset } = await accountWithClock(rows, elsewhere, options());
    expect(clockOffset).toBeNull();
    expect(arrivals.map((a) => a.noRecord)).toEqual(['renamed_away_before_run', 'renamed_away_before_run', 'renamed_away_before_run']);
  });
});

describe('the clock offset of the moves', () => {
  const pair = (offsetSeconds: number, recordedAt = 100, runStarted = 90) => ({
    event: { at: iso(recordedAt), runStartedAt: iso(runStarted) } as OwnMove['event'],
    offsetMs: offsetSeconds * 1000,
  });
  it('is none while most moves fall in time, a zone at quarter hours within the slack, a skew otherwise', () => {
    expect(clockOffsetOf([], 2000)).toBeNull();
    expect(clockOffsetOf([pair(0), pair(-1), pair(3600)], 2000)).toBeNull();
    expect(clockOffsetOf([pair(3601), pair(3600), pair(0)], 2000)).toEqual({
      kind: 'zone',
      offsetMs: 3600_000,
      writtenInMs: 3600_000,
      moves: 2,
      of: 3,
    });
    expect(clockOffsetOf([pair(-1799), pair(-1800)], 2000)).toEqual({
      kind: 'zone',
      offsetMs: -1800_000,
      writtenInMs: -1800_000,
      moves: 2,
      of: 2,
    });
    expect(clockOffsetOf([pair(40), pair(41), pair(40)], 2000)).toEqual({ kind: 'skew', offsetMs: 40_000, moves: 3, of: 3 });
    // a rename during its run (long before the record) is in time
    expect(clockOffsetOf([pair(-8, 100, 90)], 2000)).toBeNull();
    // offsets that agree with no one: none
    expect(clockOffsetOf([pair(40), pair(900), pair(5000)], 2000)).toBeNull();
  });

  it('is a zone only where the log could have been written in one: within UTC-12 and UTC+14 of the zone it is read in; a year, a day or 15 h is a clock', () => {
    const HOUR = 3600;
    const offsetOf = (seconds: number, readZoneHours = 0) =>
      clockOffsetOf([pair(seconds), pair(seconds)], 2000, () => readZoneHours * HOUR * 1000);
    // the year: a server clock a year behind is a wrong clock, never "the wrong zone"
    expect(offsetOf(-365 * 86_400)).toEqual({ kind: 'skew', offsetMs: -365 * 86_400_000, moves: 2, of: 2 });
    expect(offsetOf(86_400)).toMatchObject({ kind: 'skew' });
    // read in UTC: written in UTC+14 (Kiritimati) or UTC-12 at the most
    expect(offsetOf(14 * HOUR)).toMatchObject({ kind: 'zone', writtenInMs: 14 * HOUR * 1000 });
    expect(offsetOf(15 * HOUR)).toMatchObject({ kind: 'skew' });
    expect(offsetOf(-12 * HOUR)).toMatchObject({ kind: 'zone', writtenInMs: -12 * HOUR * 1000 });
    expect(offsetOf(-13 * HOUR)).toMatchObject({ kind: 'skew' });
    // read in UTC-10 (Honolulu): 23 h ahead is a log written in UTC+13 (Auckland in summer); read in UTC+14, 1 h ahead is no zone
    expect(offsetOf(23 * HOUR, -10)).toMatchObject({ kind: 'zone', writtenInMs: 13 * HOUR * 1000 });
    expect(offsetOf(HOUR, 14)).toMatchObject({ kind: 'skew' });
    expect(offsetOf(-HOUR, 14)).toMatchObject({ kind: 'zone', writtenInMs: 13 * HOUR * 1000 });
  });

  it('says a clock off by a year is a wrong clock to set right, in days; a zone read wrong names the zone that fits', () => {
    const year = clockOffsetMessage({ kind: 'skew', offsetMs: -365 * 86_400_000, moves: 3, of: 3 }, 'UTC');
    expect(year).toMatch(/^the transfer log runs 365 d behind the ledger /);
    expect(year).toContain("the SFTP server's clock and this host's disagree; a clock this far off is set right, not allowed for");
    expect(year).not.toMatch(/zone|--transfer-log-clock-slack/);
    const zone = clockOffsetMessage({ kind: 'zone', offsetMs: -3_600_000, writtenInMs: 3_600_000, moves: 3, of: 3 }, 'Europe/Athens');
    expect(zone).toContain(
      'its times are read in the wrong zone (Europe/Athens); set --transfer-log-time-zone to the zone the server writes its log in (they fit UTC+01:00)',
    );
  });
});
