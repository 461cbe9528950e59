import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import type { FinanceDb } from '../../src/finance/financeDb.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import type { PartnerRunMetrics } from '../../src/ledger/types.js';
import {
  refusePartners,
  runPartners,
  type LateDelivery,
  type PartnerLoopPorts,
  type PartnerLoopSettings,
  type PartnerResources,
} from '../../src/pipeline/partnerLoop.js';
import { MemoryIntake } from '../support/memoryIntake.js';

/** No finance database: the files of these tests are decided by the ledger alone (see pipelineRun.test.ts). */
const NO_FINANCE = new Proxy({ layout: DEFAULT_LAYOUT } as object, {
  get(target, key) {
    if (key === 'layout' || key === 'then') return (target as Record<string | symbol, unknown>)[key];
    throw new Error(`the finance database was asked for ${String(key)}`);
  },
}) as FinanceDb;

interface TestSettings extends PartnerLoopSettings {
  /** a test's overdue deliveries for this partner, as report/deliveries.ts would judge them */
  late?: LateDelivery[];
}

let dir: string;
let ledger: Ledger;
let intakes: Map<string, MemoryIntake>;
let clock: number;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'settle-partner-loop-'));
  await mkdir(join(dir, 'staging'));
  ledger = openSqliteLedger(join(dir, 'ledger.sqlite'), { create: true });
  intakes = new Map();
  clock = Date.parse('2026-06-01T02:00:00Z');
});
afterEach(async () => {
  await ledger.close();
  await rm(dir, { recursive: true, force: true });
});

/** A partner's settings over a local folder of its own (checked before the first partner runs); its files live in a MemoryIntake. */
async function partner(name: string, extra: Partial<TestSettings> = {}): Promise<TestSettings> {
  const folder = join(dir, name);
  for (const sub of ['intake', 'archive', 'duplicates', 'rejected']) await mkdir(join(folder, sub), { recursive: true });
  intakes.set(name, new MemoryIntake());
  return {
    partner: name,
    intake: join(folder, 'intake'),
    archive: join(folder, 'archive'),
    duplicates: join(folder, 'duplicates'),
    rejected: join(folder, 'rejected'),
    kindSettings: {},
    pattern: 'settle_*.csv',
    ignore: [],
    readyMarker: undefined,
    maxWaitingRuns: 3,
    stableForSeconds: 0,
    maxWaitSeconds: 10,
    claimLeaseSeconds: 3600,
    maxAgeSeconds: 26 * 3600,
    staging: join(dir, 'staging'),
    logFile: undefined,
    metricsFile: join(dir, 'metrics.prom'),
    summaryFile: undefined,
    decode: {
      pgpKeyPath: undefined,
      pgpVerifyKeyPath: undefined,
      pgpPassphrase: undefined,
      maxInflateRatio: 100,
      maxDecodedBytes: 1024 ** 3,
    },
    transferLog: { files: [], root: '/', timeZone: undefined },
    ...extra,
  };
}

/** What the ports saw: the metrics handed over after the last partner, and the partners whose work began. */
interface Seen {
  metrics?: { ran: PartnerRunMetrics[]; processExit: number };
  began: string[];
}

function ports(
  seen: Seen,
  extra: Partial<PartnerLoopPorts<TestSettings, LateDelivery>> & { beforeWork?: (s: TestSettings) => void } = {},
): PartnerLoopPorts<TestSettings, LateDelivery> {
  const stop = new AbortController();
  return {
    withPartner: async (s, work) => {
      seen.began.push(s.partner);
      extra.beforeWork?.(s);
      const resources: PartnerResources = {
        logger: () => pino({ level: 'silent' }),
        ledger: async () => ledger.forPartner(s.partner),
        finance: async () => NO_FINANCE,
        intake: async () => intakes.get(s.partner)!,
      };
      return work(resources);
    },
    overdue: async (_ledger, s) => s.late,
    oldestWaiting: async (intake) => (intake.description === 'memory://intake' ? 7 : undefined),
    afterPartners: async (ran, processExit) => {
      seen.metrics = { ran, processExit };
    },
    now: () => (clock += 1000),
    host: 'loop-host',
    pid: 4242,
    mode: () => 'scheduled',
    stop: stop.signal,
    exitStatusFor: (found) => (found.counts.failed > 0 ? 1 : 0),
    ...extra,
  };
}

describe('the partner loop (pipeline/partnerLoop.ts, over the SQLite ledger)', () => {
  it('works each partner in turn: a run recorded for each, its counts, the metrics after the last', async () => {
    const alpha = await partner('alpha');
    const beta = await partner('beta');
    intakes.get('alpha')!.put('notes.txt', 'x');
    intakes.get('beta')!.put('a.txt', 'x');
    intakes.get('beta')!.put('b.txt', 'x');
    const seen: Seen = { began: [] };
    const outcomes = await runPartners(ports(seen), [alpha, beta]);
    expect(outcomes.map((o) => [o.partner, o.exitStatus, o.result?.counts.ignored])).toEqual([
      ['alpha', 0, 1],
      ['beta', 0, 2],
    ]);
    const runs = await ledger.recentRuns(10);
    expect(runs.map((r) => r.partner).sort()).toEqual(['alpha', 'beta']);
    expect(runs.every((r) => r.host === 'loop-host' && r.status !== 'running')).toBe(true);
    expect(seen.metrics?.processExit).toBe(0);
    expect(seen.metrics?.ran.map((m) => [m.partner, m.runId, m.counts.ignored, m.oldestWaitingSeconds, m.processExitStatus])).toEqual([
      ['alpha', outcomes[0]!.result!.runId, 1, 7, 0],
      ['beta', outcomes[1]!.result!.runId, 2, 7, 0],
    ]);
    expect(seen.metrics!.ran.every((m) => m.endedAt > m.startedAt)).toBe(true);
  });

  it("goes on to the next partner after one's failure: the failed one recorded as not started, the process exit its status", async () => {
    const alpha = await partner('alpha');
    const beta = await partner('beta');
    intakes.get('beta')!.put('notes.txt', 'x');
    const seen: Seen = { began: [] };
    const down = ports(seen);
    const outcomes = await runPartners(
      {
        ...down,
        withPartner: (s, work) =>
          down.withPartner(s, (r) =>
            work({
              ...r,
              intake: async (stop) => {
                if (s.partner === 'alpha') throw new Error('the server of alpha is away');
                return r.intake(stop);
              },
            }),
          ),
      },
      [alpha, beta],
    );
    expect(outcomes.map((o) => [o.partner, o.exitStatus, o.result?.counts.ignored])).toEqual([
      ['alpha', 1, undefined],
      ['beta', 0, 1],
    ]);
    const runs = await ledger.recentRuns(10);
    expect(runs.find((r) => r.partner === 'alpha')).toMatchObject({ status: 'not_started' });
    expect(runs.find((r) => r.partner === 'beta')?.status).not.toBe('not_started');
    expect(seen.metrics?.processExit).toBe(1);
    expect(seen.metrics?.ran.map((m) => [m.partner, m.exitStatus, m.processExitStatus])).toEqual([
      ['alpha', 1, 1],
      ['beta', 0, 1],
    ]);
  });

  it('begins no partner after a stop asked for during the one in hand, which finishes', async () => {
    const alpha = await partner('alpha');
    const beta = await partner('beta');
    const gamma = await partner('gamma');
    const stop = new AbortController();
    const seen: Seen = { began: [] };
    const outcomes = await runPartners(
      ports(seen, {
        stop: stop.signal,
        // SIGTERM arrives while alpha's run works
        beforeWork: (s) => (s.partner === 'alpha' ? stop.abort('SIGTERM') : undefined),
      }),
      [alpha, beta, gamma],
    );
    expect(seen.began).toEqual(['alpha']);
    expect(outcomes.map((o) => [o.partner, o.notBegun === true])).toEqual([
      ['alpha', false],
      ['beta', true],
      ['gamma', true],
    ]);
    expect(outcomes[1]!.exitStatus).toBe(1);
    expect((await ledger.recentRuns(10)).map((r) => r.partner)).toEqual(['alpha']);
    expect(seen.metrics?.ran.map((m) => m.partner)).toEqual(['alpha']);
  });

  it('exits 1 for a delivery past errorAfter while the run itself, as the ledger keeps it, did its work', async () => {
    const alpha = await partner('alpha', { late: [{ level: 'critical', message: 'no delivery for Mon 2026-06-01' }] });
    const beta = await partner('beta', { late: [{ level: 'warning', message: 'no delivery for Mon 2026-06-01' }] });
    const seen: Seen = { began: [] };
    const outcomes = await runPartners(ports(seen), [alpha, beta]);
    expect(outcomes.map((o) => [o.partner, o.exitStatus, o.result?.exitStatus, o.overdue?.length])).toEqual([
      ['alpha', 1, 0, 1],
      ['beta', 0, 0, 1],
    ]);
    expect((await ledger.recentRuns(10)).map((r) => r.exitStatus)).toEqual([0, 0]);
    expect(seen.metrics?.processExit).toBe(1);
    expect(seen.metrics?.ran.map((m) => [m.exitStatus, m.processExitStatus])).toEqual([
      [0, 1],
      [0, 1],
    ]);
  });

  it('runs no partner when one is refused before the first runs: the refused recorded as not started, exit 2', async () => {
    const alpha = await partner('alpha');
    const beta = await partner('beta', { staging: join(dir, 'no-such-staging') });
    const seen: Seen = { began: [] };
    const refused = await runPartners(ports(seen), [alpha, beta]).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(UsageError);
    expect(String((refused as Error).message)).toMatch(/partner "beta": staging folder .*no-such-staging/);
    expect(seen.began).toEqual(['beta']);
    expect(await ledger.recentRuns(10)).toMatchObject([{ partner: 'beta', status: 'not_started' }]);
    expect(seen.metrics?.processExit).toBe(2);
  });
});

describe('refusePartners', () => {
  it("refuses, as runPartners would and without recording anything, what a partner's settings need before any runs", async () => {
    const good = await partner('good');
    const bad = await partner('bad', { staging: join(dir, 'no-such-staging') });
    await expect(refusePartners([good])).resolves.toBeUndefined();
    const refused = refusePartners([good, bad]);
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow(/partner "bad": staging folder .* does not exist .*no partner was run/);
    expect(await ledger.recentRuns(10)).toEqual([]);
  });
});
