import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import type { CliResult } from '../support/cli.js';
import { canName, startHost, until } from '../support/hosts.js';
import { financeDatabase, putIn, SHARED_DEFAULT_LAYOUT, Workspace } from '../support/workspace.js';

/**
 * One clock for a shared ledger: several hosts (each a process of the built CLI with a host name
 * of its own, test/support/hosts.ts) over one PostgreSQL ledger, some with clocks that are wrong
 * (the test build's SETTLE_TEST_CLOCK_SKEW, this host's clock alone; SETTLE_TEST_NOW moves the
 * world, the ledger server's clock with it). Every time the ledger keeps is its server's, and a
 * lease is judged by it alone.
 */

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((o) => o.close()));
});

interface Shared {
  ws: Workspace;
  client: pg.Client;
  config: string;
  /** alpha's file, and its rows' ids */
  alphaFile: string;
  /** beta's file: the same bytes as alpha's under another name when `twin`, else its own */
  betaFile: string;
}

/**
 * Two partners, alpha then beta, each with one file in a local intake of its own, over one
 * PostgreSQL ledger and finance database. `twin`: beta's file is alpha's content under another
 * name, so that a run working beta meets alpha's claim (content identity is the ledger's).
 */
async function twoPartners(opts: { twin: boolean }): Promise<Shared> {
  const db = await financeDatabase();
  opened.push(db);
  const ws = await Workspace.create(db.url, { ledger: 'postgres' });
  const alphaText = sampleSettlement({ date: '2026-07-01', rows: 3, idPrefix: 'ALPHA' }).text;
  const betaText = opts.twin ? alphaText : sampleSettlement({ date: '2026-07-01', rows: 3, idPrefix: 'BETA' }).text;
  const [alphaFile, betaFile] = ['settle_20260701_alpha.csv', 'settle_20260701_beta.csv'];
  await putIn(join(ws.root, 'alpha', 'intake'), alphaFile, alphaText);
  await putIn(join(ws.root, 'beta', 'intake'), betaFile, betaText);
  const partners = { alpha: { intake: join(ws.root, 'alpha', 'intake') }, beta: { intake: join(ws.root, 'beta', 'intake') } };
  const config = join(ws.root, 'config.json');
  await writeFile(config, JSON.stringify({ ledger: ws.ledger, stableFor: 0, layout: SHARED_DEFAULT_LAYOUT, partners }));
  return { ws, client: db.client, config, alphaFile, betaFile };
}

const run = (s: Shared, host: string, env: Record<string, string> = {}) =>
  startHost({ root: s.ws.root, databaseUrl: s.ws.databaseUrl }, host, ['run', '--config', s.config, '--json'], env);

interface PartnerJson {
  partner: string;
  status: string;
  loaded: number;
  held: number;
  skipped: number;
  exit_status: number;
  clock_skew_seconds?: number;
  leased_by?: { host: string; run: string | null; lease_until: string; run_out?: string };
  files: { name: string; outcome: string }[];
}
const partnersOf = (r: CliResult) => (JSON.parse(r.stdout) as { partners: PartnerJson[] }).partners;
const intake = (s: Shared, partner: string) => readdir(join(s.ws.root, partner, 'intake'));

/** Seconds from the ledger server's now to a time it holds: how far ahead (or, negative, behind) a row stands. */
async function aheadOfServer(s: Shared, sql: string): Promise<number[]> {
  const r = await s.client.query<{ ahead: number }>(`SELECT extract(epoch FROM t - now())::float8 AS ahead FROM (${sql}) AS rows (t)`);
  return r.rows.map((row) => row.ahead);
}

/** host-a at its first claim (alpha's file, claimed, not loaded): says so and waits for the test's `go`, then goes on, or dies. */
async function hostAMidLoad(s: Shared, then: 'go on' | 'die'): Promise<{ done: Promise<CliResult>; go: () => Promise<void> }> {
  const signals = join(s.ws.root, 'signals');
  await mkdir(signals, { recursive: true });
  const end = then === 'die' ? '; kill -9 $PPID' : '';
  const hook = `touch "$SIGNALS/claimed"; until [ -e "$SIGNALS/go" ]; do sleep 0.02; done${end}`;
  const done = run(s, 'host-a', { SETTLE_TEST_FAULT: 'hook:after-claim', SETTLE_TEST_HOOK: hook, SIGNALS: signals });
  await until(() => existsSync(join(signals, 'claimed')), 'host-a to claim its first file');
  return { done, go: () => writeFile(join(signals, 'go'), '') };
}

describe.skipIf(!canName)('hosts with wrong clocks on one PostgreSQL ledger (the built CLI, a host name and a clock each)', () => {
  it("a host 3 h fast takes neither the partner lease nor the claim of a host mid-load, writes the server's times, and says so on its run", async () => {
    const s = await twoPartners({ twin: true });
    const hostA = await hostAMidLoad(s, 'go on');

    const fast = await run(s, 'host-b', { SETTLE_TEST_CLOCK_SKEW: '3h' });
    // exit 1: a clock three hours off is for an operator to set right
    expect(fast.status, fast.stderr).toBe(1);
    const [alpha, beta] = partnersOf(fast);
    // alpha's lease (two hours long, taken by host-a) holds by the ledger's clock: skipped, naming host-a
    expect(alpha).toMatchObject({ partner: 'alpha', status: 'leased', leased_by: { host: 'host-a' }, loaded: 0 });
    expect(alpha!.leased_by!.run_out).toBeUndefined();
    expect(alpha!.clock_skew_seconds).toBeGreaterThan(3 * 3600 - 5);
    // beta's file is alpha's content, which host-a holds claimed: held, never claimed over it
    expect(beta).toMatchObject({ partner: 'beta', status: 'finished', held: 1, loaded: 0 });
    expect(beta!.clock_skew_seconds).toBeGreaterThan(3 * 3600 - 5);
    expect(await intake(s, 'beta')).toEqual([s.betaFile]);
    const claims = await s.client.query<{ name: string; state: string; owner_host: string }>(
      'SELECT name, state, owner_host FROM settle_ledger.processed_files WHERE state = $1',
      ['claimed'],
    );
    expect(claims.rows).toEqual([{ name: s.alphaFile, state: 'claimed', owner_host: 'host-a' }]);
    expect((await s.client.query('SELECT owner_host FROM settle_ledger.partner_leases')).rows).toEqual([{ owner_host: 'host-a' }]);
    // what host-b wrote carries the server's clock, not its own three hours ahead
    const written = await aheadOfServer(
      s,
      `SELECT started_at FROM settle_ledger.runs WHERE host = 'host-b' UNION ALL SELECT ended_at FROM settle_ledger.runs WHERE host = 'host-b'
       UNION ALL SELECT at FROM settle_ledger.ledger_events WHERE run_id IN (SELECT run_id FROM settle_ledger.runs WHERE host = 'host-b')`,
    );
    expect(written.length).toBeGreaterThan(2);
    for (const ahead of written) expect(Math.abs(ahead)).toBeLessThan(120);

    // host-a goes on: alpha loads once; beta's twin is a duplicate of it
    await hostA.go();
    const a = await hostA.done;
    expect(a.status, a.stderr).toBe(0);
    expect(partnersOf(a).map((p) => [p.partner, p.loaded, p.skipped])).toEqual([
      ['alpha', 1, 0],
      ['beta', 0, 1],
    ]);
    const rows = await s.client.query('SELECT transaction_id FROM settle.settlement_rows');
    expect(rows.rows).toHaveLength(3);
  });

  it("a host whose clock is off takes over no lease or claim that ran out; a host whose clock agrees with the server's does", async () => {
    const s = await twoPartners({ twin: true });
    const hostA = await hostAMidLoad(s, 'die');
    await hostA.go();
    expect((await hostA.done).signal).toBe('SIGKILL');
    // host-a is gone and its lease and claim have run out: their end moved to the past, where the
    // server's clock reaches after --claim-lease (two hours, too long to wait for here)
    await s.client.query("UPDATE settle_ledger.partner_leases SET lease_until = now() - interval '1 second'");
    await s.client.query("UPDATE settle_ledger.processed_files SET lease_until = now() - interval '1 second' WHERE state = 'claimed'");

    const slow = await run(s, 'host-b', { SETTLE_TEST_CLOCK_SKEW: '-3h' });
    expect(slow.status, slow.stderr).toBe(1);
    const [alpha, beta] = partnersOf(slow);
    expect(alpha).toMatchObject({ partner: 'alpha', status: 'leased', leased_by: { host: 'host-a' }, loaded: 0 });
    expect(alpha!.leased_by!.run_out).toMatch(/ran out at/);
    expect(alpha!.clock_skew_seconds).toBeLessThan(-3 * 3600 + 5);
    expect(beta).toMatchObject({ partner: 'beta', held: 1, loaded: 0 });
    expect(await intake(s, 'alpha')).toEqual([s.alphaFile]);
    expect(await intake(s, 'beta')).toEqual([s.betaFile]);
    const claimed = await s.client.query("SELECT owner_host FROM settle_ledger.processed_files WHERE state = 'claimed'");
    expect(claimed.rows).toEqual([{ owner_host: 'host-a' }]);
    // the skewed run said so on its summary line too
    const line = await startHost({ root: s.ws.root, databaseUrl: s.ws.databaseUrl }, 'host-b', ['run', '--config', s.config], {
      SETTLE_TEST_CLOCK_SKEW: '-3h',
    });
    expect(line.stdout).toMatch(
      /^alpha: skipped: leased to run \S+ on host-a .*its lease ran out at .*not taken over, this host's clock is off the ledger's/m,
    );
    expect(line.stdout).toMatch(/^alpha: .*\(clock: this host's is 10\d{3}\.\d s \(3h\) behind the ledger server's, past the 5 s allowed/m);

    // a host whose clock agrees takes alpha over, settles host-a's claim (exit 1: a stale claim is worth a look), and loads it once
    const right = await run(s, 'host-b');
    expect(right.status, right.stderr).toBe(1);
    expect(partnersOf(right).map((p) => [p.partner, p.status, p.loaded, p.skipped])).toEqual([
      ['alpha', 'finished', 1, 0],
      ['beta', 'finished', 0, 1],
    ]);
    expect(await intake(s, 'alpha')).toEqual([]);
    const expired = await s.client.query("SELECT details->>'claimRun' AS run FROM settle_ledger.ledger_events WHERE event = 'expired'");
    expect(expired.rows).toHaveLength(1);
  });

  it('a host a year fast, killed mid-load, leaves its partner leased for --claim-lease by the server, not a year', async () => {
    const s = await twoPartners({ twin: false });
    const killed = await run(s, 'host-b', { SETTLE_TEST_CLOCK_SKEW: '365d', SETTLE_TEST_FAULT: 'after-claim' });
    expect(killed.signal).toBe('SIGKILL');
    // the lease and the claim end two hours (--claim-lease) after the server's now, whatever host-b's clock said
    const ends = await aheadOfServer(
      s,
      "SELECT lease_until FROM settle_ledger.partner_leases UNION ALL SELECT lease_until FROM settle_ledger.processed_files WHERE state = 'claimed'",
    );
    expect(ends).toHaveLength(2);
    for (const ahead of ends) expect(Math.abs(ahead - 7200)).toBeLessThan(120);
    const started = await aheadOfServer(s, "SELECT started_at FROM settle_ledger.runs WHERE host = 'host-b'");
    expect(Math.abs(started[0]!)).toBeLessThan(120);

    // two hours and five minutes on (the world moved, the server's clock with it), another host takes the partner over
    const later = { SETTLE_TEST_NOW: new Date(Date.now() + (2 * 3600 + 300) * 1000).toISOString() };
    const next = await run(s, 'host-a', later);
    expect(next.status, next.stderr).toBe(1); // host-b's stale claim, settled
    expect(partnersOf(next).map((p) => [p.partner, p.status, p.loaded])).toEqual([
      ['alpha', 'finished', 1],
      ['beta', 'finished', 1],
    ]);
    const died = await s.client.query<{ status: string }>("SELECT status FROM settle_ledger.runs WHERE host = 'host-b'");
    expect(died.rows).toEqual([{ status: 'died' }]);
  });
});

describe('leases no run could have written hold nothing (PostgreSQL ledger)', () => {
  it.each([
    ['infinity', "'infinity'"],
    ['next year', "now() + interval '1 year'"],
  ])('a lease row held until %s by a host that does not exist: the next run takes the partner over at once', async (_, end) => {
    const s = await twoPartners({ twin: false });
    await s.client.query(
      `INSERT INTO settle_ledger.partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
       VALUES ('alpha', 'ghost:1:x', 'ghost', 1, '1', 'r-ghost', now() - interval '2 days', ${end})`,
    );
    const r = await s.ws.cli(['run', '--config', s.config, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(partnersOf(r).map((p) => [p.partner, p.status, p.loaded])).toEqual([
      ['alpha', 'finished', 1],
      ['beta', 'finished', 1],
    ]);
    expect(await intake(s, 'alpha')).toEqual([]);
    expect((await s.client.query('SELECT partner FROM settle_ledger.partner_leases')).rows).toEqual([]);
  });

  it('a claim held until infinity by a host that does not exist is stale: status says so, and the next run settles it', async () => {
    const s = await twoPartners({ twin: false });
    const text = sampleSettlement({ date: '2026-07-01', rows: 3, idPrefix: 'ALPHA' }).text;
    const sha = createHash('sha256').update(text).digest('hex');
    await s.client.query(
      `INSERT INTO settle_ledger.runs (run_id, mode, host, pid, started_at, partner) VALUES ('r-ghost', 'scheduled', 'ghost', 1, now(), 'alpha')`,
    );
    await s.client.query(
      `INSERT INTO settle_ledger.processed_files (name, sha256, state, run_id, size, owner_host, owner_pid, owner_started_at, lease_until, first_seen_at, updated_at, partner)
       VALUES ($1, $2, 'claimed', 'r-ghost', 1, 'ghost', 1, '1', 'infinity', $3, $3, 'alpha')`,
      [s.alphaFile, sha, new Date().toISOString()],
    );
    const status = await s.ws.cli(['status', '--config', s.config, '--partner', 'alpha']);
    expect(status.stdout).toMatch(/^SETTLE-INGEST CRITICAL - .*1 stale claim: settle_20260701_alpha.csv of run r-ghost/);
    const r = await s.ws.cli(['run', '--config', s.config, '--json']);
    expect(r.status, r.stderr).toBe(1); // the stale claim, settled: worth a look
    expect(partnersOf(r)[0]).toMatchObject({ partner: 'alpha', loaded: 1 });
  });
});

describe('deliveries and runs by the ledger server’s clock (PostgreSQL ledger)', () => {
  it('a file loaded two hours before its due time by a host 3 h fast is on time in report deliveries', async () => {
    const db = await financeDatabase();
    opened.push(db);
    const ws = await Workspace.create(db.url, { ledger: 'postgres' });
    const config = join(ws.root, 'config.json');
    const expectDaily = { every: 'day', by: '03:00', timeZone: 'UTC' };
    await writeFile(
      config,
      JSON.stringify({
        ledger: ws.ledger,
        stableFor: 0,
        partners: { stripe: { intake: ws.intake, pattern: 'settle_{yyyyMMdd}_*.csv', expect: expectDaily } },
      }),
    );
    await ws.put('settle_20260316_a01.csv', sampleSettlement({ date: '2026-03-16', rows: 2, idPrefix: 'ONTIME' }).text);
    // 01:00 UTC by the world's clock, 04:00 by this host's, an hour past the due time
    const night = await ws.cli(['run', '--config', config, '--json'], {
      SETTLE_TEST_NOW: '2026-03-16T01:00:00Z',
      SETTLE_TEST_CLOCK_SKEW: '3h',
    });
    expect(night.status, night.stderr).toBe(1); // the clock, said
    expect(partnersOf(night)[0]).toMatchObject({ loaded: 1 });
    const report = await ws.cli(['report', 'deliveries', '--config', config, '--weeks', '1', '--json'], {
      SETTLE_TEST_NOW: '2026-03-16T12:00:00Z',
    });
    expect(report.status, report.stderr).toBe(0);
    const day = (
      JSON.parse(report.stdout) as { partners: { days: { day: string; state: string; delivered_at: string }[] }[] }
    ).partners[0]!.days.find((d) => d.day === '2026-03-16')!;
    expect(day.state).toBe('on_time');
    expect(Math.abs(Date.parse(day.delivered_at) - Date.parse('2026-03-16T01:00:00Z'))).toBeLessThan(120_000);
  });

  it('a run recorded as ending a year ahead (by a host whose clock ran ahead) makes status judge by the true last success', async () => {
    const s = await twoPartners({ twin: false });
    const day1 = await s.ws.cli(['run', '--config', s.config, '--partner', 'alpha'], {
      SETTLE_TEST_NOW: new Date(Date.now() - 30 * 3600_000).toISOString(),
    });
    expect(day1.status, day1.stderr).toBe(0);
    await s.client.query(
      `INSERT INTO settle_ledger.runs (run_id, mode, host, pid, started_at, ended_at, status, exit_status, partner)
       VALUES ('r-future', 'scheduled', 'fast', 1, now() + interval '1 year', now() + interval '1 year', 'finished', 0, 'alpha')`,
    );
    const status = await s.ws.cli(['status', '--config', s.config, '--partner', 'alpha']);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(/^SETTLE-INGEST CRITICAL - alpha: no successful run for 30h \(run r-\d{8}-/);
  });
});
