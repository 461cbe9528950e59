import { describe, expect, it } from 'vitest';
import type { IntakeEntry } from '../../src/intake/intake.js';
import { watchLoop, type WakeReason, type WatchPartner, type WatchPartnerOutcome, type WatchPorts } from '../../src/pipeline/watchLoop.js';

const partner = (name: string, over: Partial<WatchPartner> = {}): WatchPartner => ({
  partner: name,
  pattern: 'settle_*.csv',
  ignore: [],
  readyMarker: undefined,
  stableForSeconds: 0,
  ...over,
});

/**
 * The loop over fakes: a clock that each wait moves on, intakes that are maps of entries, and a
 * `work` that records which partners it was given and what it answers. `script` runs before each
 * cycle's wait, by the number of waits so far, and may stop the loop.
 */
function harness(opts: {
  partners: WatchPartner[];
  /** every intake local (the default), none, or by partner */
  local?: boolean | ((partner: string) => boolean);
  work?: (partners: string[], cycle: number) => WatchPartnerOutcome[];
  /** may say the wait was ended by a folder's event (a file landed in a watched folder) */
  script?: (wait: number, h: { intakes: Map<string, IntakeEntry[]>; stop: () => void; hangup: () => void }) => WakeReason | void;
  reload?: () => Promise<WatchPartner[]>;
  listFails?: (cycle: number, partner: string) => boolean;
  /** whether the kernel watches the partner's local folder (default: yes) */
  hears?: (partner: string) => boolean;
  /** the partners whose folder was replaced, at this cycle */
  rearm?: (cycle: number) => string[];
}) {
  const isLocal = (name: string) => (typeof opts.local === 'function' ? opts.local(name) : (opts.local ?? true));
  const START = 1_000_000;
  let clock = START;
  const intakes = new Map<string, IntakeEntry[]>(opts.partners.map((p) => [p.partner, []]));
  const worked: string[][] = [];
  const waits: number[] = [];
  const listed: string[] = [];
  const notices: string[] = [];
  /** each work call: when (ms after the start), which partners, and the outage runs it was handed */
  const calls: { at: number; partners: string[]; outageRuns: Record<string, string> }[] = [];
  /** each listing: when (ms after the start) and whose */
  const listings: { at: number; partner: string }[] = [];
  const stop = new AbortController();
  let hungUp = false;
  let cycle = 0;
  const ports: WatchPorts<WatchPartner> = {
    partners: opts.partners,
    reload: opts.reload ?? (async () => opts.partners),
    folders: { watch: () => undefined, rearm: () => opts.rearm?.(cycle) ?? [], hears: (name) => opts.hears?.(name) ?? true },
    list: async (settings) => {
      listed.push(settings.partner);
      listings.push({ at: clock - START, partner: settings.partner });
      if (opts.listFails?.(cycle, settings.partner)) throw new Error(`${settings.partner}'s server away`);
      const local = isLocal(settings.partner);
      return { entries: intakes.get(settings.partner) ?? [], mtimeIsLocalClock: local, local };
    },
    work: async (partners, outageRuns) => {
      worked.push(partners.map((p) => p.partner));
      calls.push({ at: clock - START, partners: partners.map((p) => p.partner), outageRuns: Object.fromEntries(outageRuns) });
      const answer =
        opts.work?.(
          partners.map((p) => p.partner),
          cycle,
        ) ?? partners.map((p) => ({ partner: p.partner, ok: true }));
      // a run takes what it loads out of the intake
      for (const p of partners) if (answer.find((a) => a.partner === p.partner)?.ok) intakes.set(p.partner, []);
      return answer;
    },
    metrics: async () => undefined,
    wait: async (ms): Promise<WakeReason> => {
      waits.push(ms);
      clock += ms;
      cycle++;
      return opts.script?.(waits.length, { intakes, stop: () => stop.abort('SIGTERM'), hangup: () => (hungUp = true) }) ?? 'timeout';
    },
    now: () => clock,
    notice: (level, fields, message) => notices.push(`${fields.event}: ${message}`),
    stop: stop.signal,
    hangup: () => {
      const was = hungUp;
      hungUp = false;
      return was;
    },
    pollMs: 60_000,
    rescanMs: 300_000,
    backoffMs: 1000,
    backoffCapMs: 8000,
  };
  const entry = (name: string, mtimeMs = clock - 3_600_000, size = 10): IntakeEntry => ({ name, size, mtimeMs });
  return { ports, intakes, worked, waits, listed, notices, calls, listings, entry, now: () => clock, stop: () => stop.abort('SIGTERM') };
}

describe('watchLoop', () => {
  it('counts cycles without a file to take as idle and works none of them; ignored names are no work', async () => {
    const h = harness({
      partners: [partner('a')],
      script: (wait, { intakes, stop }) => {
        if (wait === 1) intakes.set('a', [{ name: 'README.txt', size: 1, mtimeMs: 0 }]);
        if (wait === 5) stop();
      },
    });
    const stats = await watchLoop(h.ports);
    expect(stats).toMatchObject({ idleCycles: 5, workedCycles: 0, failedCycles: 0 });
    expect(h.worked).toEqual([]);
  });

  it('works only the partners with a file, once per file shape; a file left behind is tried again after --rescan', async () => {
    const h = harness({
      partners: [partner('a'), partner('b')],
      // the run leaves b's file (held): it stays in the intake
      work: (partners) => partners.map((name) => ({ partner: name, ok: true })),
      script: (wait, { intakes, stop }) => {
        if (wait === 1) intakes.set('b', [{ name: 'settle_1.csv', size: 5, mtimeMs: 0 }]);
        if (wait === 12) stop();
      },
    });
    // b's file stays: the fake's work empties the intake, so put it back after each run
    const work = h.ports.work;
    h.ports.work = async (partners, outageRuns) => {
      const answer = await work(partners, outageRuns);
      h.intakes.set('b', [{ name: 'settle_1.csv', size: 5, mtimeMs: 0 }]);
      return answer;
    };
    await watchLoop(h.ports);
    // once when it came, once more after 5 minutes (waits of at most --poll, 60 s)
    expect(h.worked).toEqual([['b'], ['b']]);
  });

  it('looks again at a local file still being written once it has stood still for --stable-for, not after a whole --poll', async () => {
    const h = harness({
      partners: [partner('a', { stableForSeconds: 30 })],
      script: (wait, { stop }) => {
        if (wait === 3) stop();
      },
    });
    h.intakes.set('a', [h.entry('settle_1.csv', h.now() - 10_000)]);
    await watchLoop(h.ports);
    expect(h.waits[0]).toBe(20_000);
    expect(h.worked).toEqual([['a']]);
  });

  it('backs off after a failed cycle, doubling up to its cap, and resets after a good one', async () => {
    let failing = true;
    const h = harness({
      partners: [partner('a')],
      work: (partners) =>
        partners.map((name) => (failing ? { partner: name, ok: false, error: new Error('database away') } : { partner: name, ok: true })),
      script: (wait, { stop }) => {
        if (wait === 6) failing = false;
        if (wait === 8) stop();
      },
    });
    h.intakes.set('a', [h.entry('settle_1.csv')]);
    const stats = await watchLoop(h.ports);
    expect(h.waits.slice(0, 6)).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    expect(stats.failedCycles).toBe(6);
    // the seventh cycle worked: the next wait is the ordinary one
    expect(h.waits[6]).toBe(0);
    expect(h.waits[7]).toBe(60_000);
    expect(h.worked).toHaveLength(7);
  });

  it("waits a partner's backoff out whole, beyond --poll, and a change in the folder does not cut it short", async () => {
    const h = harness({
      partners: [partner('a')],
      work: (partners) => partners.map((name) => ({ partner: name, ok: false, error: new Error('database away') })),
      script: (wait, { stop }) => {
        if (wait === 6) stop();
      },
    });
    h.ports.pollMs = 1500;
    h.ports.backoffCapMs = 300_000;
    // every wait is ended early by an event: the loop waits again for the rest of the backoff
    const wait = h.ports.wait;
    let calls = 0;
    h.ports.wait = async (ms) => {
      calls++;
      if (calls % 2 === 1 && ms > 500) {
        await wait(500);
        return 'event';
      }
      return wait(ms);
    };
    h.intakes.set('a', [h.entry('settle_1.csv')]);
    await watchLoop(h.ports);
    // tried at once, after 1 s, after 2 s more; the cycles between (at least every --poll) only count
    expect(h.calls.map((call) => call.at)).toEqual([0, 1000, 3000]);
    expect(h.waits).toEqual([500, 500, 500, 1500, 500, 1500]);
  });

  it('a listing that fails (the server away) is a failed cycle too, and the loop goes on', async () => {
    const h = harness({
      partners: [partner('a')],
      local: false,
      listFails: (cycle) => cycle < 2,
      script: (wait, { stop }) => {
        if (wait === 4) stop();
      },
    });
    h.intakes.set('a', [h.entry('settle_1.csv')]);
    const stats = await watchLoop(h.ports);
    expect(stats.failedCycles).toBe(2);
    expect(h.worked).toEqual([['a']]);
  });

  it('rereads the config on a hangup, and keeps the old one when the new is refused', async () => {
    let reloads = 0;
    const h = harness({
      partners: [partner('a')],
      reload: async () => {
        reloads++;
        if (reloads === 1) throw new Error('not valid JSON');
        return [partner('a', { pattern: '*.csv' })];
      },
      script: (wait, { hangup, stop }) => {
        if (wait === 1 || wait === 3) hangup();
        if (wait === 5) stop();
      },
    });
    h.intakes.set('a', [h.entry('other.csv')]);
    await watchLoop(h.ports);
    expect(reloads).toBe(2);
    // the old pattern took nothing; the reread one takes other.csv
    expect(h.worked).toEqual([['a']]);
  });

  it('ends after the cycle in hand when asked to stop during its work', async () => {
    const h = harness({ partners: [partner('a')] });
    h.intakes.set('a', [h.entry('settle_1.csv')]);
    h.ports.work = async (partners) => {
      h.stop();
      return partners.map((p) => ({ partner: p.partner, ok: false, error: new Error('stopped') }));
    };
    const stats = await watchLoop(h.ports);
    expect(stats).toMatchObject({ workedCycles: 1, failedCycles: 0 });
    expect(h.waits).toEqual([]);
  });

  it.each([
    ['the failing partner first', ['remote', 'local']],
    ['the failing partner last', ['local', 'remote']],
  ])("one partner's server away backs off that partner alone (%s): the other's files are taken at once", async (_order, order) => {
    const h = harness({
      partners: order.map((name) => partner(name)),
      local: (name) => name === 'local',
      listFails: (_cycle, name) => name === 'remote',
      script: (wait, { intakes, stop }) => {
        if (wait === 6) stop();
        // a file lands in the local intake while the remote server is away: its folder's event ends the wait
        if (wait === 2) {
          intakes.set('local', [{ name: 'settle_2.csv', size: 5, mtimeMs: 0 }]);
          return 'event';
        }
      },
    });
    h.intakes.set('local', [h.entry('settle_1.csv')]);
    const stats = await watchLoop(h.ports);
    // each local file worked in the cycle after it landed, never with the failing partner, never waiting for its backoff
    expect(h.calls.map((call) => call.partners)).toEqual([['local'], ['local']]);
    expect(h.calls[0]!.at).toBe(0);
    // the remote partner tried at once, then after 1 s, 2 s, 4 s: its own backoff
    expect(h.listings.filter((l) => l.partner === 'remote').map((l) => l.at)).toEqual([0, 1000, 3000, 7000]);
    expect(stats.partners).toEqual(
      expect.arrayContaining([
        { partner: 'remote', failures: 4, polled: false },
        { partner: 'local', failures: 0, polled: false },
      ]),
    );
    expect(h.notices.filter((n) => n.startsWith('watch-partner-failed'))).toHaveLength(4);
    expect(h.notices).toContain("watch-partner-failed: remote: failed (2 in a row), backing off: next try in 2s: remote's server away");
  });

  it("one partner's run failing backs off that partner alone; its outage's run is handed back until it works, then it is said resumed", async () => {
    let failing = true;
    const h = harness({
      partners: [partner('a'), partner('b')],
      work: (partners) =>
        partners.map((name) =>
          name === 'b' && failing
            ? { partner: name, ok: false, error: new Error('database away'), outageRun: 'run-b-1' }
            : { partner: name, ok: true },
        ),
      script: (wait, { intakes, stop }) => {
        if (wait === 4) failing = false;
        if (wait === 8) stop();
        if (wait === 1) {
          intakes.set('a', [{ name: 'settle_a2.csv', size: 5, mtimeMs: 0 }]);
          return 'event';
        }
      },
    });
    h.intakes.set('a', [h.entry('settle_a1.csv')]);
    h.intakes.set('b', [h.entry('settle_b1.csv')]);
    await watchLoop(h.ports);
    expect(h.calls.map((call) => [call.at, call.partners, call.outageRuns])).toEqual([
      [0, ['a', 'b'], {}],
      // a's second file at once; b waits its 1 s, then 2 s, handed its outage's run each time
      [0, ['a'], {}],
      [1000, ['b'], { b: 'run-b-1' }],
      [3000, ['b'], { b: 'run-b-1' }],
    ]);
    expect(h.notices).toContain('watch-partner-resumed: b: resumed after 2 failed tries');
  });

  it('a partner another run holds is looked at again when that lease ends, not after --rescan, and its files are not counted as tried', async () => {
    let holdUntil: number | undefined = 1_000_000 + 20_000;
    const h = harness({
      partners: [partner('a')],
      work: (partners) =>
        partners.map((name) => (holdUntil ? { partner: name, ok: true, leasedUntil: holdUntil } : { partner: name, ok: true })),
      script: (wait, { stop }) => {
        if (wait === 1) holdUntil = undefined;
        if (wait === 3) stop();
      },
    });
    const work = h.ports.work;
    h.ports.work = async (partners, outageRuns) => {
      const leased = holdUntil !== undefined;
      const answer = await work(partners, outageRuns);
      // skipped for the lease: the file is still there
      if (leased) h.intakes.set('a', [h.entry('settle_1.csv', 0)]);
      return answer;
    };
    h.intakes.set('a', [h.entry('settle_1.csv', 0)]);
    await watchLoop(h.ports);
    expect(h.calls.map((call) => call.at)).toEqual([0, 20_000]);
  });

  it('a local folder the kernel will not watch is listed at --stable-for pace, not once a --rescan, and the metrics say it is polled', async () => {
    const h = harness({
      partners: [partner('a', { stableForSeconds: 5 })],
      hears: () => false,
      script: (wait, { intakes, stop }) => {
        if (wait === 1) intakes.set('a', [{ name: 'settle_1.csv', size: 5, mtimeMs: 0 }]);
        if (wait === 4) stop();
      },
    });
    const stats = await watchLoop(h.ports);
    // after the cycle that worked it is listed again at once, for a file that landed meanwhile
    expect(h.listings.map((l) => l.at)).toEqual([0, 5000, 5000, 10_000]);
    expect(h.calls.map((call) => call.at)).toEqual([5000]);
    expect(stats.partners).toEqual([{ partner: 'a', failures: 0, polled: true }]);
  });

  it('a replaced intake folder is listed at once, its backoff ended', async () => {
    const h = harness({
      partners: [partner('a')],
      listFails: (cycle) => cycle < 1,
      rearm: (cycle) => (cycle === 1 ? ['a'] : []),
      script: (wait, { stop }) => {
        if (wait === 3) stop();
      },
    });
    // the first wait is ended at once by the folder's event (its parent saw it made again)
    const wait = h.ports.wait;
    h.ports.wait = async (ms) => {
      await wait(h.waits.length === 0 ? 10 : ms);
      return 'event';
    };
    h.intakes.set('a', [h.entry('settle_1.csv')]);
    await watchLoop(h.ports);
    expect(h.listings.map((l) => l.at)).toEqual([0, 10, 10]);
    expect(h.calls.map((call) => call.at)).toEqual([10]);
  });
});
