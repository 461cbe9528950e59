import { pino } from 'pino';
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
  local?: boolean;
  work?: (partners: string[], cycle: number) => WatchPartnerOutcome[];
  script?: (wait: number, h: { intakes: Map<string, IntakeEntry[]>; stop: () => void; hangup: () => void }) => void;
  reload?: () => Promise<WatchPartner[]>;
  listFails?: (cycle: number) => boolean;
}) {
  let clock = 1_000_000;
  const intakes = new Map<string, IntakeEntry[]>(opts.partners.map((p) => [p.partner, []]));
  const worked: string[][] = [];
  const waits: number[] = [];
  const listed: string[] = [];
  const stop = new AbortController();
  let hungUp = false;
  let cycle = 0;
  const ports: WatchPorts<WatchPartner> = {
    partners: opts.partners,
    reload: opts.reload ?? (async () => opts.partners),
    watchIntakes: () => undefined,
    list: async (settings) => {
      listed.push(settings.partner);
      if (opts.listFails?.(cycle)) throw new Error('server away');
      return { entries: intakes.get(settings.partner) ?? [], mtimeIsLocalClock: opts.local ?? true, local: opts.local ?? true };
    },
    work: async (partners) => {
      worked.push(partners.map((p) => p.partner));
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
      opts.script?.(waits.length, { intakes, stop: () => stop.abort('SIGTERM'), hangup: () => (hungUp = true) });
      return 'timeout';
    },
    now: () => clock,
    logger: pino({ level: 'silent' }),
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
  return { ports, intakes, worked, waits, listed, entry, now: () => clock, stop: () => stop.abort('SIGTERM') };
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
    h.ports.work = async (partners) => {
      const answer = await work(partners);
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

  it('waits a backoff out whole, beyond --poll, and a change in the folder does not cut it short', async () => {
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
    expect(h.worked).toHaveLength(3);
    expect(h.waits).toEqual([500, 500, 500, 1500, 500, 3500]);
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
});
