import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/ledger.js';
import { openPgLedger } from '../../src/ledger/pgLedger.js';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { finished } from '../support/cli.js';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { financeDatabase, putIn, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((o) => o.close()));
});

async function freshPgLedger(): Promise<{ ledger: Ledger; url: string }> {
  const db = await financeDatabase();
  opened.push(db);
  const ledger = await openPgLedger(db.url, { create: true });
  opened.push(ledger);
  return { ledger, url: db.url };
}

const hostA = { holder: 'host-a:100:aaaa', host: 'host-a', pid: 100, startedAt: '1' };
const hostB = { holder: 'host-b:200:bbbb', host: 'host-b', pid: 200, startedAt: '1' };
const anHour = { leaseSeconds: 3600, takeRunOut: true };

describe('partner leases on the PostgreSQL ledger', () => {
  it('gives a partner to one host at a time: the other is told which host and run hold it, and takes it once released', async () => {
    const { ledger } = await freshPgLedger();
    const alpha = ledger.forPartner('alpha');
    expect(await alpha.takePartnerLease(hostA, anHour)).toEqual({ taken: true });
    expect(await alpha.renewPartnerLease(hostA.holder, 3600, 'run-a1')).toBe(true);
    const refused = await alpha.takePartnerLease(hostB, anHour);
    expect(refused).toMatchObject({ taken: false, heldBy: { host: 'host-a', pid: 100, runId: 'run-a1' } });
    // another partner is free for host-b meanwhile
    expect(await ledger.forPartner('beta').takePartnerLease(hostB, anHour)).toEqual({ taken: true });
    // host-b cannot renew or release what it does not hold
    expect(await alpha.renewPartnerLease(hostB.holder, 3600)).toBe(false);
    await alpha.releasePartnerLease(hostB.holder);
    expect(await alpha.takePartnerLease(hostB, anHour)).toMatchObject({ taken: false });
    await alpha.releasePartnerLease(hostA.holder);
    expect(await alpha.takePartnerLease(hostB, anHour)).toEqual({ taken: true });
  });

  it("gives a crashed host's partner to another once its lease has expired", async () => {
    const { ledger } = await freshPgLedger();
    const alpha = ledger.forPartner('alpha');
    // host-a took the partner and died: its lease was never renewed and has run out
    expect(await alpha.takePartnerLease(hostA, { leaseSeconds: -1, takeRunOut: true })).toEqual({ taken: true });
    expect(await alpha.takePartnerLease(hostB, anHour)).toEqual({ taken: true });
    // host-a, back, finds it lost
    expect(await alpha.renewPartnerLease(hostA.holder, 3600)).toBe(false);
    expect(await alpha.takePartnerLease(hostA, anHour)).toMatchObject({ taken: false, heldBy: { host: 'host-b' } });
  });

  it.each([2, 4])('shares four partners among %i hosts asking at once: each partner to exactly one', async (hosts) => {
    const { url } = await freshPgLedger();
    const moduleUrl = pathToFileURL(join(process.cwd(), 'dist/ledger/pgLedger.js')).href;
    const script = `
      const { openPgLedger } = await import(${JSON.stringify(moduleUrl)});
      const l = await openPgLedger(process.argv[1], { create: false });
      const host = 'host-' + process.argv[2];
      const won = [];
      for (const partner of ['alpha', 'beta', 'gamma', 'delta']) {
        const answer = await l.forPartner(partner).takePartnerLease({ holder: host + ':' + process.pid, host, pid: process.pid, startedAt: '1' }, { leaseSeconds: 60, takeRunOut: true });
        if (answer.taken) won.push(partner);
      }
      await l.close();
      process.stdout.write(JSON.stringify(won));`;
    const outcomes = await Promise.all(
      Array.from({ length: hosts }, (_, i) => finished(spawn(process.execPath, ['--input-type=module', '-e', script, url, String(i)]))),
    );
    expect(outcomes.map((o) => o.stderr)).toEqual(Array(hosts).fill(''));
    const won = outcomes.flatMap((o) => JSON.parse(o.stdout) as string[]);
    expect(won.sort()).toEqual(['alpha', 'beta', 'delta', 'gamma']);
  });
});

describe('partner leases on a local (SQLite) ledger', () => {
  it('are granted to every run, as before leases existed: one host, nothing to share', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-leases-'));
    try {
      const ledger = openSqliteLedger(join(dir, 'ledger.sqlite'), { create: true });
      const alpha = ledger.forPartner('alpha');
      expect(await alpha.takePartnerLease(hostA, anHour)).toEqual({ taken: true });
      expect(await alpha.takePartnerLease(hostB, anHour)).toEqual({ taken: true });
      await ledger.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const db = sharedFinanceDatabase();

describe('run over partners another host holds (the partner loop, PostgreSQL ledger)', () => {
  it('skips a leased partner at once, naming the host and run, and loads the next; the partner loads once the lease is released', async () => {
    const ws = await Workspace.create(db.url, { ledger: 'postgres' });
    const tag = `p${process.pid}`;
    const [held, free] = [`held${tag}`, `free${tag}`];
    for (const [partner, prefix] of [
      [held, 'HELD'],
      [free, 'FREE'],
    ] as const) {
      await putIn(
        join(ws.root, partner, 'intake'),
        'settle_20260701_a01.csv',
        sampleSettlement({ date: '2026-07-01', rows: 3, idPrefix: `${prefix}${tag}` }).text,
      );
    }
    const config = await ws.partnersConfig({
      [held]: { intake: join(ws.root, held, 'intake') },
      [free]: { intake: join(ws.root, free, 'intake') },
    });
    const other = await openPgLedger(ws.ledger, { create: true });
    opened.push(other);
    expect(await other.forPartner(held).takePartnerLease(hostB, anHour)).toEqual({ taken: true });
    expect(await other.forPartner(held).renewPartnerLease(hostB.holder, 3600, 'run-on-b')).toBe(true);

    const r = await ws.cli(['run', '--config', config, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.partners).toMatchObject([
      { partner: held, status: 'leased', leased_by: { host: 'host-b', pid: 200, run: 'run-on-b' }, loaded: 0 },
      { partner: free, status: 'finished', loaded: 1 },
    ]);
    // the held partner's file is left alone for its holder: not downloaded, no run recorded for it here
    expect(await readdir(join(ws.root, held, 'intake'))).toEqual(['settle_20260701_a01.csv']);
    const runs = await db.client.query<{ partner: string }>('SELECT partner FROM settle_ledger.runs WHERE partner IN ($1, $2)', [
      held,
      free,
    ]);
    expect(runs.rows.map((row) => row.partner)).toEqual([free]);

    await other.forPartner(held).releasePartnerLease(hostB.holder);
    const next = await ws.cli(['run', '--config', config, '--json']);
    expect(next.status, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).partners).toMatchObject([
      { partner: held, status: 'finished', loaded: 1 },
      { partner: free, status: 'finished', loaded: 0 },
    ]);
    // the lease is released at the run's end: free for the next host
    expect(await other.forPartner(held).takePartnerLease(hostA, anHour)).toEqual({ taken: true });
  });
});
