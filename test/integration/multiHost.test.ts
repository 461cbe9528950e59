import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import type { CliResult } from '../support/cli.js';
import { canName, startHost as startHostAs, until } from '../support/hosts.js';
import { financeDatabase, putIn, SHARED_DEFAULT_LAYOUT, Workspace } from '../support/workspace.js';

/**
 * Several hosts over one config and one PostgreSQL ledger, each host a process of the built CLI
 * with a host name of its own (test/support/hosts.ts).
 */
const PARTNERS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
const FILES_EACH = 2;
const ROWS_EACH = 3;

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((o) => o.close()));
});

interface Night {
  ws: Workspace;
  client: pg.Client;
  config: string;
  /** every file's name, by partner */
  files: Map<string, string[]>;
  /** every transaction id the files hold */
  ids: string[];
}

/** One config of six partners, each with its own local intake of two files, on a fresh finance database and ledger. */
async function night(): Promise<Night> {
  const db = await financeDatabase();
  opened.push(db);
  const ws = await Workspace.create(db.url, { ledger: 'postgres' });
  const files = new Map<string, string[]>();
  const ids: string[] = [];
  const partners: Record<string, { intake: string }> = {};
  for (const partner of PARTNERS) {
    const intake = join(ws.root, partner, 'intake');
    partners[partner] = { intake };
    const names: string[] = [];
    for (let day = 1; day <= FILES_EACH; day++) {
      const name = `settle_2026070${day}_${partner}.csv`;
      const idPrefix = `${partner.toUpperCase()}${day}`;
      await putIn(intake, name, sampleSettlement({ date: `2026-07-0${day}`, rows: ROWS_EACH, idPrefix }).text);
      names.push(name);
      for (let row = 1; row <= ROWS_EACH; row++) ids.push(`${idPrefix}-${String(row).padStart(7, '0')}`);
    }
    files.set(partner, names);
  }
  const config = join(ws.root, 'config.json');
  await writeFile(config, JSON.stringify({ ledger: ws.ledger, stableFor: 0, layout: SHARED_DEFAULT_LAYOUT, partners }));
  return { ws, client: db.client, config, files, ids: ids.sort() };
}

/** `run --config … --json` as host `host` (test/support/hosts.ts), with the test seams of `env`. */
const startHost = (n: Night, host: string, env: Record<string, string> = {}) =>
  startHostAs({ root: n.ws.root, databaseUrl: n.ws.databaseUrl }, host, ['run', '--config', n.config, '--json'], env);

interface PartnerSummary {
  partner: string;
  status: string;
  loaded: number;
  leased_by?: { host: string };
}
const partnersOf = (r: CliResult) => (JSON.parse(r.stdout) as { partners: PartnerSummary[] }).partners;

interface RunRow {
  partner: string;
  host: string;
  status: string;
  reason: string | null;
  started_at: Date;
  ended_at: Date | null;
  loaded: number | null;
}
const runsOf = async (n: Night) =>
  (
    await n.client.query<RunRow>(
      'SELECT partner, host, status, reason, started_at, ended_at, loaded FROM settle_ledger.runs ORDER BY started_at',
    )
  ).rows;

/** What holds whichever hosts worked the night: each file loaded once, archived once, decided once. */
async function expectEveryFileOnce(n: Night): Promise<void> {
  const rows = await n.client.query<{ transaction_id: string }>('SELECT transaction_id FROM settle.settlement_rows ORDER BY 1');
  expect(rows.rows.map((row) => row.transaction_id)).toEqual(n.ids);
  for (const [partner, names] of n.files) {
    expect(await readdir(join(n.ws.root, partner, 'intake'))).toEqual([]);
    expect((await readdir(join(n.ws.root, partner, 'archive'))).sort()).toEqual(names);
  }
  const decided = await n.client.query<{ name: string; state: string }>(
    'SELECT name, state FROM settle_ledger.processed_files ORDER BY name',
  );
  expect(decided.rows).toEqual(
    [...n.files.values()]
      .flat()
      .sort()
      .map((name) => ({ name, state: 'loaded' })),
  );
  // no host found a content another had loaded, or was loading: no file in two hosts' hands
  const twice = await n.client.query("SELECT name FROM settle_ledger.ledger_events WHERE event IN ('skipped', 'held')");
  expect(twice.rows).toEqual([]);
  // every lease given back
  expect((await n.client.query('SELECT partner FROM settle_ledger.partner_leases')).rows).toEqual([]);
}

describe.skipIf(!canName)('hosts sharing one config on one PostgreSQL ledger (the built CLI, a host name each)', () => {
  it.each([2, 4])(
    '%i hosts at once: every file loaded once and downloaded once, each partner worked by one host at a time',
    async (hosts) => {
      const n = await night();
      const barrier = join(n.ws.root, 'barrier');
      const downloads = join(n.ws.root, 'downloads.txt');
      await mkdir(barrier);
      // at each download: the host and the file noted; the first of each host waits until every host
      // is downloading one, so that the hosts work at the same time, each on a partner of its own
      const hook = [
        'echo "$(hostname) $SETTLE_TEST_HOOK_FILE" >> "$DOWNLOADS"',
        'touch "$BARRIER/$(hostname)"',
        'n=0; until [ "$(ls "$BARRIER" | wc -l)" -ge "$HOSTS" ]; do n=$((n+1)); [ $n -lt 3000 ] || exit 1; sleep 0.02; done',
      ].join('; ');
      const env = {
        SETTLE_TEST_FAULT: 'hook:after-download',
        SETTLE_TEST_HOOK: hook,
        DOWNLOADS: downloads,
        BARRIER: barrier,
        HOSTS: String(hosts),
      };
      const outcomes = await Promise.all(Array.from({ length: hosts }, (_, i) => startHost(n, `host-${i + 1}`, env)));
      for (const r of outcomes) expect(r.status, r.stderr).toBe(0);
      expect((await readdir(barrier)).length).toBe(hosts);

      await expectEveryFileOnce(n);
      // each file downloaded by exactly one host, once
      const downloaded = (await readFile(downloads, 'utf8')).trim().split('\n');
      expect(downloaded.map((line) => line.split(' ')[1]).sort()).toEqual([...n.files.values()].flat().sort());
      expect(new Set(downloaded.map((line) => line.split(' ')[0])).size).toBe(hosts);
      // each partner loaded by the one host whose run took it; a partner's runs never overlap
      const runs = await runsOf(n);
      for (const partner of PARTNERS) {
        const own = runs.filter((run) => run.partner === partner);
        expect(
          own.reduce((sum, run) => sum + (run.loaded ?? 0), 0),
          partner,
        ).toBe(FILES_EACH);
        expect(own.filter((run) => (run.loaded ?? 0) > 0)).toHaveLength(1);
        for (let i = 1; i < own.length; i++) expect(own[i - 1]!.ended_at!.getTime()).toBeLessThanOrEqual(own[i]!.started_at.getTime());
      }
      // and every host's summary says which partners it left to another: each partner worked by exactly one summary
      const worked = outcomes.flatMap((r) =>
        partnersOf(r)
          .filter((p) => p.loaded > 0)
          .map((p) => p.partner),
      );
      expect(worked.sort()).toEqual([...PARTNERS].sort());
    },
  );

  it.each([
    ['on another host, once its lease has run out', 'host-b'],
    ['on its own host, at once (its process is provably gone)', 'host-a'],
  ])('a host killed mid-partner leaves the partner to the next run %s', async (_, other) => {
    const n = await night();
    const signals = join(n.ws.root, 'signals');
    await mkdir(signals);
    // host-a, at its first claim (alpha's first file, claimed, not loaded): says so, waits for the
    // test's go, then dies by SIGKILL as the fault points kill
    const hook = `touch "$SIGNALS/claimed"; until [ -e "$SIGNALS/go" ]; do sleep 0.02; done; kill -9 $PPID`;
    const hostA = startHost(n, 'host-a', { SETTLE_TEST_FAULT: 'hook:after-claim', SETTLE_TEST_HOOK: hook, SIGNALS: signals });
    await until(() => existsSync(join(signals, 'claimed')), 'host-a to claim its first file');

    // while host-a holds alpha, the other host skips it, naming its holder, and works the rest
    const during = await startHost(n, other);
    expect(during.status, during.stderr).toBe(0);
    expect(partnersOf(during)).toEqual(
      PARTNERS.map((partner) =>
        partner === 'alpha'
          ? expect.objectContaining({ partner, status: 'leased', leased_by: expect.objectContaining({ host: 'host-a' }), loaded: 0 })
          : expect.objectContaining({ partner, status: 'finished', loaded: FILES_EACH }),
      ),
    );
    await writeFile(join(signals, 'go'), '');
    expect((await hostA).signal).toBe('SIGKILL');
    expect(await readdir(join(n.ws.root, 'alpha', 'intake'))).toEqual(n.files.get('alpha'));

    if (other !== 'host-a') {
      // another host cannot tell a dead holder from a slow one: alpha waits for its lease
      const waiting = await startHost(n, other);
      expect(partnersOf(waiting)[0]).toMatchObject({ partner: 'alpha', status: 'leased', loaded: 0 });
      // its lease (and the claim taken under it) run out: their end moved to the past, where the
      // clock reaches after --claim-lease (at least 60 s, too long to wait for here)
      await n.client.query("UPDATE settle_ledger.partner_leases SET lease_until = now() - interval '1 second' WHERE owner_host = 'host-a'");
      await n.client.query(
        "UPDATE settle_ledger.processed_files SET lease_until = now() - interval '1 second' WHERE owner_host = 'host-a'",
      );
    }
    const after = await startHost(n, other);
    // exit 1: the stale claim it settled (host-a's, on alpha's first file) is for an operator to look at
    expect(after.status, after.stderr).toBe(1);
    expect(partnersOf(after)[0]).toMatchObject({ partner: 'alpha', status: 'finished', loaded: FILES_EACH });
    await expectEveryFileOnce(n);
    // alpha's loads are the later run's; host-a's run is closed as died by the run that took its
    // lease over, on whichever host: a host that never comes back leaves no run `running` forever
    const alphaRuns = (await runsOf(n)).filter((run) => run.partner === 'alpha');
    expect(alphaRuns[0]).toMatchObject({ host: 'host-a', loaded: null, status: 'died' });
    expect(alphaRuns[0]!.reason).toMatch(/stopped renewing its partner lease/);
    // the runs that found alpha leased recorded none for it
    expect(alphaRuns.slice(1).map((run) => ({ host: run.host, loaded: run.loaded }))).toEqual([{ host: other, loaded: FILES_EACH }]);
  });
});
