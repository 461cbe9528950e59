import { describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/config/settings.js';
import { UsageError } from '../../src/errors.js';
import type { FileRow, RunRow } from '../../src/ledger/types.js';
import { judgePartners, judgeStatus, LINE_PARTNERS, statusLine, type StatusFacts } from '../../src/report/status.js';

const NOW = Date.parse('2026-03-15T05:00:00Z');
const limits = { maxAgeSeconds: 26 * 3600, maxWaitingRuns: 2, claimLeaseSeconds: 7200 };
const succeeded = (hoursAgo: number) => ({ runId: 'r-ok', endedAt: new Date(NOW - hoursAgo * 3600_000).toISOString() }) as RunRow;
const facts = (f: Partial<StatusFacts>): StatusFacts => ({ lastSuccess: succeeded(3), staleClaims: [], waitingTooLong: [], ...f });
const line = (f: Partial<StatusFacts>) => {
  const c = judgeStatus(facts(f), limits, NOW);
  return statusLine(c.state, c.message, c);
};

describe('the status check', () => {
  it('is OK with a recent success, naming it', () => {
    expect(line({})).toBe(
      'SETTLE-INGEST OK - last success 3h ago (run r-ok) | last_success_age=10800s stale_claims=0 files_waiting_too_long=0',
    );
  });

  it('is CRITICAL past the max age or without any success, and with a stale claim; critical problems come first', () => {
    expect(line({ lastSuccess: succeeded(30) })).toMatch(/^SETTLE-INGEST CRITICAL - no successful run for 30h \(run r-ok\) \|/);
    expect(line({ lastSuccess: succeeded(25.9) })).toMatch(/^SETTLE-INGEST OK/);
    // a limit of seconds says seconds, never "for 0m"
    const strict = judgeStatus(facts({ lastSuccess: succeeded(6 / 3600) }), { ...limits, maxAgeSeconds: 5 }, NOW);
    expect(strict.message).toBe('no successful run for 6s (run r-ok)');
    expect(line({ lastSuccess: undefined })).toBe(
      'SETTLE-INGEST CRITICAL - no successful run recorded | last_success_age=U stale_claims=0 files_waiting_too_long=0',
    );
    const stale = { name: 'settle_b.csv', runId: 'r-dead' } as FileRow;
    const waiting = { name: 'settle_c.csv', outcome: 'not_ready', runs: 3, since: '2026-03-13T02:00:00Z' };
    expect(line({ staleClaims: [stale], waitingTooLong: [waiting] })).toMatch(
      /^SETTLE-INGEST CRITICAL - 1 stale claim: settle_b.csv of run r-dead; settle_c.csv waiting for 3 runs \(not_ready\) \|/,
    );
  });

  it("past the max age, names whoever holds the partner's lease, its end, and the files a skipping run found waiting", () => {
    const lease = {
      holder: 'host-b:1:x',
      host: 'host-b',
      pid: 4242,
      runId: 'r-stuck',
      takenAt: '2026-03-14T01:00:00.000Z',
      leaseUntil: '2026-03-15T06:00:00.000Z',
      ledgerNowMs: NOW,
      skipped: {
        at: '2026-03-15T04:00:00.000Z',
        by: 'host-a (pid 7)',
        waiting: { count: 23, names: ['settle_a.csv', 'settle_b.csv'], oldestAt: '2026-03-14T02:00:00.000Z' },
      },
    };
    expect(line({ lastSuccess: succeeded(30), lease })).toBe(
      'SETTLE-INGEST CRITICAL - no successful run for 30h (run r-ok); its lease is held by run r-stuck on host-b (pid 4242), ' +
        'taken at 2026-03-14T01:00:00.000Z, until 2026-03-15T06:00:00.000Z; 23 files waiting in its intake (settle_a.csv, settle_b.csv and 21 more, ' +
        'the oldest since 2026-03-14T02:00:00.000Z), as host-a (pid 7) found skipping it at 2026-03-15T04:00:00.000Z ' +
        '| last_success_age=108000s stale_claims=0 files_waiting_too_long=0',
    );
    // a lease no run could have written holds nothing: the next run takes the partner over
    expect(line({ lastSuccess: undefined, lease: { ...lease, leaseUntil: 'infinity', skipped: null } })).toMatch(
      /^SETTLE-INGEST CRITICAL - no successful run recorded; its lease, taken by run r-stuck on host-b \(pid 4242\) at 2026-03-14T01:00:00.000Z, no longer holds \(its lease runs to infinity, past the ledger's now plus --claim-lease \(2h\), longer than any lease is given\): the next run takes the partner over; no run has looked at its intake while it is held \|/,
    );
    // within the max age, whoever holds the lease, the partner is OK
    expect(line({ lease })).toMatch(/^SETTLE-INGEST OK - last success 3h ago/);
  });

  it('is WARNING for a file waiting too long, and still says when the job last worked', () => {
    const waiting = { name: 'settle_c.csv', outcome: 'held', runs: 4, since: '2026-03-12T02:00:00Z' };
    expect(line({ waitingTooLong: [waiting] })).toMatch(
      /^SETTLE-INGEST WARNING - settle_c.csv waiting for 4 runs \(held\); last success 3h ago \(run r-ok\) \|/,
    );
  });

  it('keeps one line and its performance data whatever a file name holds', () => {
    const waiting = { name: 'a|b\ncsv', outcome: 'held', runs: 3, since: '' };
    const l = line({ waitingTooLong: [waiting] });
    expect(l.split('\n')).toHaveLength(1);
    expect(l.split('|')).toHaveLength(2);
  });

  it('takes --max-age as seconds or with a unit, from a flag or SETTLE_MAX_AGE, default 26 h', () => {
    expect(resolveSettings({}, {}).maxAgeSeconds).toBe(26 * 3600);
    expect(resolveSettings({ maxAge: '90m' }, {}).maxAgeSeconds).toBe(5400);
    expect(resolveSettings({}, { SETTLE_MAX_AGE: '2d' }).maxAgeSeconds).toBe(172_800);
    expect(resolveSettings({ maxAge: '3600' }, {}).maxAgeSeconds).toBe(3600);
    expect(() => resolveSettings({ maxAge: 'soon' }, {})).toThrow(UsageError);
  });
});

describe('the status check of many partners', () => {
  const judged = (count: number, failing: (i: number) => boolean) =>
    judgePartners(
      Array.from({ length: count }, (_, i) => ({
        partner: `p${i}`,
        check: judgeStatus(facts(failing(i) ? { lastSuccess: undefined } : {}), limits, NOW),
      })),
    );

  it('names every partner on its one line up to LINE_PARTNERS, as the message does', () => {
    const c = judged(LINE_PARTNERS, (i) => i % 2 === 0);
    expect(c.line).toBe(c.message);
    expect(c.line.split('; ')).toHaveLength(LINE_PARTNERS);
  });

  it('names the worst partners and counts the rest by their state; the message (and --json) names every one', () => {
    // 20,000 partners, 1,000 of them without a success: the line was 820 kB when none had one
    const c = judged(20_000, (i) => i % 20 === 7);
    expect(c.state).toBe('CRITICAL');
    const named = c.line.split('; ');
    expect(named).toHaveLength(LINE_PARTNERS + 1);
    expect(named.slice(0, LINE_PARTNERS).every((part) => /^p\d+: no successful run recorded$/.test(part))).toBe(true);
    expect(named.at(-1)).toBe('and 19,980 more partners (980 CRITICAL, 19,000 OK): settle-ingest status --json names each');
    expect(statusLine(c.state, c.line, c).length).toBeLessThan(1000);
    expect(c.message.split('; ')).toHaveLength(20_000);
  });
});
