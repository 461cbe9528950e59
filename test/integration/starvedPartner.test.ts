import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { promtool, sample } from '../support/promtool.js';
import { putIn, SHARED_DEFAULT_LAYOUT, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

/**
 * A starved lane is never quiet (seed: "a permanently-open duplicate blocks its lane forever: pair
 * it with staleness alerting"): a partner whose lease another host's run holds, and has held while
 * no run of it succeeded within --max-age, is judged by its last success whoever holds the lease.
 */

const db = sharedFinanceDatabase();

/** Two partners on one PostgreSQL ledger, each of whose first file loaded 30.5 hours ago (the world's clock then). */
async function loadedLongAgo() {
  const ws = await Workspace.create(db.url, { ledger: 'postgres' });
  const tag = `p${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  const [alpha, beta] = [`alpha${tag}`, `beta${tag}`];
  const intakeOf = (partner: string) => join(ws.root, partner, 'intake');
  const put = (partner: string, day: string, prefix: string) =>
    putIn(
      intakeOf(partner),
      `settle_${day.replaceAll('-', '')}_${prefix.toLowerCase()}.csv`,
      sampleSettlement({ date: day, rows: 2, idPrefix: `${prefix}${tag}` }).text,
    );
  const metricsFile = join(ws.root, 'settle.prom');
  const config = join(ws.root, 'config.json');
  const partners = { [alpha]: { intake: intakeOf(alpha) }, [beta]: { intake: intakeOf(beta) } };
  await writeFile(config, JSON.stringify({ ledger: ws.ledger, stableFor: 0, metricsFile, layout: SHARED_DEFAULT_LAYOUT, partners }));
  await put(alpha, '2026-07-01', 'A1');
  await put(beta, '2026-07-01', 'B1');
  const first = await ws.cli(['run', '--config', config], { SETTLE_TEST_NOW: new Date(Date.now() - 30.5 * 3600_000).toISOString() });
  expect(first.status, first.stderr).toBe(0);
  return { ws, config, metricsFile, alpha, beta, intakeOf, put };
}

describe('a partner another host holds (PostgreSQL ledger)', () => {
  it('past --max-age without a success: the run that skips it says so and exits 1; status is CRITICAL naming the holder, its lease and the waiting files; the metrics name them', async () => {
    const { ws, config, metricsFile, alpha, beta, intakeOf, put } = await loadedLongAgo();
    // since 28 hours ago host-b's run r-stuck has held alpha's lease, renewing it and never finishing
    await db.client.query(
      `INSERT INTO settle_ledger.partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
       VALUES ($1, 'host-b:4242:feed', 'host-b', 4242, '1', 'r-stuck', now() - interval '28 hours', now() + interval '1 hour')`,
      [alpha],
    );
    await put(alpha, '2026-07-02', 'A2');
    await put(alpha, '2026-07-03', 'A3');
    await put(beta, '2026-07-02', 'B2');

    const night = await ws.cli(['run', '--config', config]);
    expect(night.status, night.stderr).toBe(1);
    const lines = night.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(
        `^${alpha}: skipped: leased to run r-stuck on host-b \\(pid 4242\\) until \\S+ ` +
          `\\(starved: no successful run for 30h, past --max-age 26h; 2 files waiting: settle_20260702_a2.csv, settle_20260703_a3.csv\\)$`,
      ),
    );
    expect(lines[1]).toMatch(new RegExp(`^${beta}: run \\S+ done: loaded=1 `));
    expect(lines[2]).toMatch(/\(leased elsewhere: alpha\S+\) \(starved: alpha\S+\)$/);
    // its files are left for the holder: not downloaded, not moved
    expect((await readdir(intakeOf(alpha))).sort()).toEqual(['settle_20260702_a2.csv', 'settle_20260703_a3.csv']);

    const status = await ws.cli(['status', '--config', config]);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(
      new RegExp(
        `^SETTLE-INGEST CRITICAL - ${alpha}: no successful run for 30h \\(run r-\\S+\\); its lease is held by run r-stuck on host-b \\(pid 4242\\), ` +
          `taken at \\S+, until \\S+; 2 files waiting in its intake \\(settle_20260702_a2.csv, settle_20260703_a3.csv, the oldest since \\S+\\), ` +
          `as \\S+ \\(pid \\d+\\) found skipping it at \\S+; ${beta}: OK, last success`,
      ),
    );
    const json = JSON.parse((await ws.cli(['status', '--config', config, '--json'])).stdout) as {
      partners: {
        partner: string;
        state: string;
        lease: { host: string; run: string; holds: boolean; skipped: { waiting: { count: number } } } | null;
      }[];
    };
    expect(json.partners.map((p) => [p.partner, p.state, p.lease?.host ?? null])).toEqual([
      [alpha, 'critical', 'host-b'],
      [beta, 'ok', null],
    ]);
    expect(json.partners[0]!.lease).toMatchObject({ run: 'r-stuck', holds: true, skipped: { waiting: { count: 2 } } });

    // the metrics file: the holder, its lease's end and the waiting files, for the alert rule that names them
    const metrics = await readFile(metricsFile, 'utf8');
    expect(promtool(['check', 'metrics'], metrics)).toMatchObject({ status: 0 });
    expect(sample(metrics, `settle_ingest_partner_lease_holder{partner="${alpha}",holder_host="host-b",holder_run="r-stuck"}`)).toBe(1);
    expect(sample(metrics, `settle_ingest_starved_waiting_files{partner="${alpha}"}`)).toBe(2);
    const leaseEnd = sample(metrics, `settle_ingest_partner_lease_until_timestamp_seconds{partner="${alpha}"}`);
    expect(Math.abs(leaseEnd - (Date.now() / 1000 + 3600))).toBeLessThan(120);
    expect(sample(metrics, `settle_ingest_partner_lease_until_timestamp_seconds{partner="${beta}"}`)).toBe(0);
    expect(metrics).not.toMatch(new RegExp(`settle_ingest_partner_lease_holder\\{partner="${beta}"`));

    // host-b's run ends and gives the lease back: the next run works alpha, and status is OK again
    await db.client.query('DELETE FROM settle_ledger.partner_leases WHERE partner = $1', [alpha]);
    const after = await ws.cli(['run', '--config', config]);
    expect(after.status, after.stderr).toBe(0);
    expect(after.stdout).toMatch(new RegExp(`^${alpha}: run \\S+ done: loaded=2 `));
    expect((await ws.cli(['status', '--config', config])).status).toBe(0);
  });

  it('watch says so too: its cycle that skips the starved partner prints the line, notes the waiting files, and the service goes on', async () => {
    const { ws, config, metricsFile, alpha, put } = await loadedLongAgo();
    await db.client.query(
      `INSERT INTO settle_ledger.partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
       VALUES ($1, 'host-b:4242:feed', 'host-b', 4242, '1', 'r-stuck', now() - interval '28 hours', now() + interval '1 hour')`,
      [alpha],
    );
    await put(alpha, '2026-07-02', 'A2');
    const child = ws.startRunWith(['watch', '--config', config, '--poll', '0.2', '--rescan', '0.5']);
    const done = finished(child);
    try {
      // waits for what watch does (the skip noted on the lease), never for a fixed time
      for (const end = Date.now() + 60_000; ;) {
        const noted = await db.client.query(
          'SELECT waiting FROM settle_ledger.partner_leases WHERE partner = $1 AND skipped_at IS NOT NULL',
          [alpha],
        );
        if (noted.rows.length > 0) break;
        if (Date.now() > end) throw new Error('watch never skipped the starved partner');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      child.kill('SIGTERM');
    }
    const ended = await done;
    expect(ended.status, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(
      new RegExp(
        `^${alpha}: skipped: leased to run r-stuck on host-b .*\\(starved: no successful run for 30h, past --max-age 26h; 1 file waiting: settle_20260702_a2.csv\\)$`,
        'm',
      ),
    );
    expect(await readdir(join(ws.root, alpha, 'intake'))).toEqual(['settle_20260702_a2.csv']);
    // the metrics of its last cycle name the holder and the waiting file
    const metrics = await readFile(metricsFile, 'utf8');
    expect(sample(metrics, `settle_ingest_partner_lease_holder{partner="${alpha}",holder_host="host-b",holder_run="r-stuck"}`)).toBe(1);
    expect(sample(metrics, `settle_ingest_starved_waiting_files{partner="${alpha}"}`)).toBe(1);
  });

  it('within --max-age it is skipped at once, exit 0, and status judges it by its last success alone', async () => {
    const { ws, config, alpha, put } = await loadedLongAgo();
    await db.client.query(
      `INSERT INTO settle_ledger.partner_leases (partner, holder, owner_host, owner_pid, owner_started_at, run_id, taken_at, lease_until)
       VALUES ($1, 'host-b:4242:feed', 'host-b', 4242, '1', 'r-busy', now() - interval '5 minutes', now() + interval '1 hour')`,
      [alpha],
    );
    await put(alpha, '2026-07-02', 'A2');
    // a max age of 40 hours: the last success, 30.5 hours ago, is within it
    const night = await ws.cli(['run', '--config', config, '--max-age', '40h']);
    expect(night.status, night.stderr).toBe(0);
    expect(night.stdout).toMatch(new RegExp(`^${alpha}: skipped: leased to run r-busy on host-b \\(pid 4242\\) until \\S+$`, 'm'));
    const lease = await db.client.query('SELECT skipped_at FROM settle_ledger.partner_leases WHERE partner = $1', [alpha]);
    expect(lease.rows).toEqual([{ skipped_at: null }]); // a healthy skip lists nothing and notes nothing
    const status = await ws.cli(['status', '--config', config, '--max-age', '40h']);
    expect(status.status).toBe(0);
    // past the max age, status names the holder even before any run skipped it
    const strict = await ws.cli(['status', '--config', config]);
    expect(strict.status).toBe(2);
    expect(strict.stdout).toMatch(
      /its lease is held by run r-busy on host-b \(pid 4242\), taken at \S+, until \S+; no run has looked at its intake while it is held/,
    );
  });
});
