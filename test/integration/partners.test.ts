import { chmod, mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import pg from 'pg';
import { finished, startCli } from '../support/cli.js';
import { freePort } from '../support/postgresServer.js';
import { TestSshd } from '../support/sshd.js';
import { sharedFinanceDatabase, putIn, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
let sshd: TestSshd;
beforeAll(async () => {
  sshd = await TestSshd.start();
});
afterAll(async () => sshd?.destroy());

const files = async (folder: string) => (await readdir(folder).catch(() => [])).sort();

describe('several partners in one config', () => {
  it('run: a partner whose SFTP server is away does not stop the other, which loads; a line each, then the total; exit 1', async () => {
    const ws = await Workspace.create(db.url);
    const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
    await putIn(
      join(remote, 'intake'),
      'settle_20260701_a01.csv',
      sampleSettlement({ date: '2026-07-01', rows: 20, idPrefix: 'PARTA' }).text,
    );
    const away = await freePort(); // nothing listens there: the partner's server is away
    const config = await ws.partnersConfig(
      {
        adyen: { intake: sshd.url(join(remote, 'intake')) },
        stripe: { intake: `sftp://${sshd.user}@127.0.0.1:${away}/outbox` },
      },
      { sftpKey: sshd.clientKey, knownHosts: sshd.knownHosts },
    );

    const r = await ws.cli(['run', '--config', config]);
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^adyen: run r-\S+ done: loaded=1 skipped=0 held=0 rejected=0 failed=0 not_ready=0 ignored=0 stale=0 move_failed=0 rows=20$/,
    );
    expect(lines[1]).toMatch(/^stripe: run r-\S+ not started: loaded=0 .* rows=0 \(could not start: .*127\.0\.0\.1.*\)$/);
    expect(lines[2]).toBe(
      'total (2 partners) done: loaded=1 skipped=0 held=0 rejected=0 failed=0 not_ready=0 ignored=0 stale=0 move_failed=0 rows=20 (not started: stripe)',
    );
    expect(await files(join(remote, 'archive'))).toEqual(['settle_20260701_a01.csv']);
    expect(ws.runs().map((run) => [run.partner, run.status, run.exit_status])).toEqual([
      ['adyen', 'finished', 0],
      ['stripe', 'not_started', 1],
    ]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([['settle_20260701_a01.csv', 'loaded']]);
    expect(ws.query<{ partner: string }>('SELECT DISTINCT partner FROM ledger_events')).toEqual([{ partner: 'adyen' }]);

    // status judges each partner on its own: adyen's success does not hide stripe's failure
    const status = await ws.cli(['status', '--config', config]);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(
      /^SETTLE-INGEST CRITICAL - stripe: no successful run recorded; adyen: OK, last success \d+[sm] ago \(run r-\S+\) \| /,
    );
    const adyenOnly = await ws.cli(['status', '--config', config, '--partner', 'adyen', '--json']);
    expect(adyenOnly.status).toBe(0);
    expect(JSON.parse(adyenOnly.stdout)).toMatchObject({ state: 'ok', partners: [{ partner: 'adyen', state: 'ok' }] });

    // the JSON holds one object per partner and the totals
    const j = JSON.parse((await ws.cli(['run', '--config', config, '--json'])).stdout);
    expect(j.partners.map((p: { partner: string; status: string }) => [p.partner, p.status])).toEqual([
      ['adyen', 'finished'],
      ['stripe', 'not_started'],
    ]);
    expect(j).toMatchObject({ version: 1, loaded: 0, exit_status: 1 });
    expect(j.partners[1].error).toMatch(/127\.0\.0\.1/);

    // --partner takes some: the one that is reachable alone runs clean
    const one = await ws.cli(['run', '--config', config, '--partner', 'adyen']);
    expect(one.status, one.stderr).toBe(0);
    expect(one.stdout.trim().split('\n')).toHaveLength(2);
    expect(one.stdout.trim().split('\n')[1]).toMatch(/^total \(1 partner\) done: loaded=0 /);
  });

  it('a resend of one partner’s content by another is a duplicate naming the partner, file and run of the original', async () => {
    const ws = await Workspace.create(db.url);
    const text = sampleSettlement({ date: '2026-07-02', rows: 5, idPrefix: 'CROSS' }).text;
    const adyen = join(ws.root, 'adyen', 'intake');
    const stripe = join(ws.root, 'stripe', 'intake');
    await putIn(adyen, 'settle_20260702_a01.csv', text);
    await mkdir(stripe, { recursive: true });
    const config = await ws.partnersConfig({ adyen: { intake: adyen }, stripe: { intake: stripe } });
    const first = await ws.cli(['run', '--config', config, '--json']);
    expect(first.status, first.stderr).toBe(0);
    const original = JSON.parse(first.stdout).partners[0].run;
    await putIn(stripe, 'settle_20260702_s01.csv', text);

    const second = JSON.parse((await ws.cli(['run', '--config', config, '--json'])).stdout);
    expect(second.partners[1]).toMatchObject({ partner: 'stripe', loaded: 0, skipped: 1 });
    expect(second.partners[1].files[0].duplicate_of).toMatchObject({ name: 'settle_20260702_a01.csv', run: original, partner: 'adyen' });
    expect(await files(join(ws.root, 'stripe', 'duplicates'))).toEqual(['settle_20260702_s01.csv']);

    const skips = await ws.cli(['report', 'skips', '--config', config, '--partner', 'stripe']);
    expect(skips.stdout).toMatch(/settle_20260702_s01\.csv .*same bytes as settle_20260702_a01\.csv of adyen \(run r-/);
    const history = await ws.cli(['history', 'settle_20260702_s01.csv', '--config', config]);
    expect(history.stdout).toMatch(/skipped .*same bytes as settle_20260702_a01\.csv of adyen, run r-/);

    // report runs --partner shows only that partner's runs, with the partner named
    const runs = JSON.parse((await ws.cli(['report', 'runs', '--config', config, '--partner', 'stripe', '--json'])).stdout).runs;
    expect(runs.map((run: { partner: string }) => run.partner)).toEqual(['stripe', 'stripe']);
    const text2 = (await ws.cli(['report', 'runs', '--config', config])).stdout.split('\n');
    expect(text2[0]).toMatch(/^partner\s+run\s+/);
    expect(
      text2
        .slice(1)
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(['stripe', 'adyen', 'stripe', 'adyen']);
  });
});

describe('migrate with several partners', () => {
  it("creates every partner's layout table, and says which partners' files go to each", async () => {
    const ws = await Workspace.create(db.url);
    const config = await ws.partnersConfig({
      adyen: { intake: join(ws.root, 'adyen', 'intake'), layout: 'adyen-settlement-details' },
      stripe: { intake: join(ws.root, 'stripe', 'intake'), layout: 'stripe-itemized-payout-reconciliation' },
      bank: { intake: join(ws.root, 'bank', 'intake') },
    });
    const r = await ws.cli(['migrate', '--config', config, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const tables = JSON.parse(r.stdout).tables as { table: string; partners: string[] }[];
    expect(tables.map((t) => [t.table.replace(/^settle\./, ''), t.partners])).toEqual([
      [expect.stringMatching(/adyen/), ['adyen']],
      [expect.stringMatching(/stripe/), ['stripe']],
      ['settlement_rows', ['bank']],
    ]);
    for (const { table } of tables) {
      expect((await db.client.query('SELECT to_regclass($1) AS t', [table])).rows[0].t, table).not.toBeNull();
    }
  });
});

describe('status only reads', () => {
  it('answers for a monitoring user who may read the SQLite ledger and nothing more', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260703_a01.csv', sampleSettlement({ date: '2026-07-03', rows: 2, idPrefix: 'RO' }).text);
    expect((await ws.run()).status).toBe(0);
    // the ledger's folder is the settle user's own: the monitoring user may read the file, write nothing there
    await chmod(ws.root, 0o755);
    await chmod(ws.ledger, 0o644);
    const nobody = { uid: 65534, gid: 65534 };
    for (const args of [
      ['status', '--ledger', ws.ledger],
      ['report', 'runs', '--ledger', ws.ledger],
    ]) {
      const r = await finished(startCli(args, {}, { cwd: '/', as: nobody }));
      expect({ args, status: r.status, stderr: r.stderr }).toMatchObject({ args, status: 0, stderr: '' });
      expect(r.stdout).toMatch(args[0] === 'status' ? /^SETTLE-INGEST OK - last success \d+[sm] ago/ : /^run\s+mode/);
    }
  });

  it('answers for a PostgreSQL role with SELECT on the ledger and nothing more', async () => {
    const ws = await Workspace.create(db.url, { ledger: 'postgres' });
    await ws.put('settle_20260704_a01.csv', sampleSettlement({ date: '2026-07-04', rows: 2, idPrefix: 'ROPG' }).text);
    expect((await ws.run()).status).toBe(0);
    const role = `settle_monitor_${process.pid}`;
    await db.client.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    await db.client.query(`GRANT USAGE ON SCHEMA settle_ledger TO ${role}`);
    await db.client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA settle_ledger TO ${role}`);
    const url = new URL(db.url);
    url.username = role;
    url.password = 'pw';
    const r = await ws.cli(['status', '--ledger', url.toString()]);
    expect(r.stdout + r.stderr).toMatch(/^SETTLE-INGEST OK - last success \d+[sm] ago/);
    expect(r.status).toBe(0);
    // and it could not have written: the role has no INSERT anywhere in the ledger
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    await expect(
      c.query(`INSERT INTO settle_ledger.runs (run_id, mode, host, pid, started_at) VALUES ('x', 'manual', 'h', 1, now())`),
    ).rejects.toThrow(/permission denied/);
    await c.end();
  });
});
