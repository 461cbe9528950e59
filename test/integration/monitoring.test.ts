import { spawnSync } from 'node:child_process';
import { appendFile, copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/postgresServer.js';
import { HEADER, sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { RULES, alertAt, promtool, rulesUnderTest, sample } from '../support/promtool.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

// every series names its partner: a config without "partners" is the one partner `default`
const LAST_SUCCESS = 'settle_ingest_last_success_timestamp_seconds{partner="default"}';
const EXIT_STATUS = 'settle_ingest_last_run_exit_status{partner="default"}';

/** The status check as a monitoring system runs it: its exit status and its one line. */
async function status(
  ws: Workspace,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ status: number | null; line: string }> {
  const r = await ws.cli(['status', '--ledger', ws.ledger, ...extra], env);
  const lines = r.stdout.split('\n').filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  return { status: r.status, line: lines[0]! };
}

describe('a run that cannot start', () => {
  it('leaves a runs row with its reason, a line in the log file and a metrics file with exit status 1 and the last success unchanged', async () => {
    const ws = await Workspace.create(db.url);
    const metrics = join(ws.root, 'settle.prom');
    const log = join(ws.root, 'run.log');
    const args = ['--metrics-file', metrics, '--log-file', log];
    await ws.put('settle_20261101_a01.csv', sampleSettlement({ date: '2026-11-01', rows: 5, idPrefix: 'MET' }).text);
    expect((await ws.run(args)).status).toBe(0);
    const good = await readFile(metrics, 'utf8');
    expect(promtool(['check', 'metrics'], good)).toMatchObject({ status: 0 });
    expect(sample(good, EXIT_STATUS)).toBe(0);
    const lastSuccess = sample(good, LAST_SUCCESS);
    expect(lastSuccess).toBeGreaterThan(0);

    await ws.put('settle_20261102_a01.csv', sampleSettlement({ date: '2026-11-02', rows: 5, idPrefix: 'MET2' }).text);
    const down = await ws.run(args, { DATABASE_URL: `postgres://postgres:x@127.0.0.1:${await freePort()}/finance` });
    expect(down.status).toBe(1);
    const failed = await readFile(metrics, 'utf8');
    expect(promtool(['check', 'metrics'], failed)).toMatchObject({ status: 0 });
    expect(sample(failed, EXIT_STATUS)).toBe(1);
    expect(sample(failed, LAST_SUCCESS)).toBe(lastSuccess);
    const notStarted = ws.runs().at(-1) as unknown as { run_id: string; status: string; reason: string; exit_status: number };
    expect(notStarted).toMatchObject({ status: 'not_started', exit_status: 1, reason: expect.stringMatching(/unreachable/) });
    const logged = (await readFile(log, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event?: string; run?: string });
    expect(logged).toContainEqual(expect.objectContaining({ event: 'run-not-started', run: notStarted.run_id }));
    expect(await ws.files('intake')).toEqual(['settle_20261102_a01.csv']);

    // not even a ledger: exit 2, and the metrics still say so without forgetting the last success
    const noLedger = await ws.cli(['run', '--intake', ws.intake, '--ledger', join(ws.root, 'nowhere.sqlite'), ...args]);
    expect(noLedger.status).toBe(2);
    const unconfigured = await readFile(metrics, 'utf8');
    expect(promtool(['check', 'metrics'], unconfigured)).toMatchObject({ status: 0 });
    expect(sample(unconfigured, EXIT_STATUS)).toBe(2);
    expect(sample(unconfigured, LAST_SUCCESS)).toBe(lastSuccess);
  });
});

describe('a run killed outright', () => {
  it('is shown died, with why, once the next run has looked', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261103_a01.csv', sampleSettlement({ date: '2026-11-03', rows: 5, idPrefix: 'DIED' }).text);
    expect((await ws.run([], { SETTLE_TEST_FAULT: 'after-claim' })).signal).toBe('SIGKILL');
    const next = parseSummary((await ws.run()).stdout);
    const runs = JSON.parse((await ws.cli(['report', 'runs', '--ledger', ws.ledger, '--json'])).stdout).runs;
    expect(runs.map((r: { run: string; status: string }) => r.status)).toEqual(['finished', 'died']);
    expect(runs[0]).toMatchObject({ run: next.run, stale: 1, loaded: 1, exit_status: 1 });
    expect(runs[1]).toMatchObject({ exit_status: null, duration_seconds: null, host: hostname() });
    expect(runs[1].reason).toMatch(new RegExp(`ended without closing the run; closed by run ${next.run}`));
    const text = (await ws.cli(['report', 'runs', '--ledger', ws.ledger])).stdout;
    expect(text.split('\n')[2]).toMatch(/\bdied\b.*ended without closing the run/);
  });
});

describe('a growing file', () => {
  it('is not ready for three runs: the third run exits 1 and says why, status warns, and it loads once complete', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261104_a01.csv';
    const rows = sampleSettlement({ date: '2026-11-04', rows: 3, idPrefix: 'GROW' }).text.split('\n').slice(1);
    await ws.put(name, `${HEADER}\n`, { fresh: true });
    const watch = ['--stable-for', '3600', '--max-wait', '0']; // a fresh mtime is never an hour old: not ready, at once
    const exits: (number | null)[] = [];
    for (const row of rows.slice(0, 2)) {
      await appendFile(join(ws.intake, name), `${row}\n`);
      const r = await ws.run([...watch, '--json']);
      exits.push(r.status);
      expect(JSON.parse(r.stdout)).toMatchObject({ not_ready: 1, waiting_too_long: [] });
    }
    await appendFile(join(ws.intake, name), `${rows[2]}\n`);
    const third = await ws.run(watch);
    exits.push(third.status);
    expect(exits).toEqual([0, 0, 1]);
    expect(third.stdout.trim()).toMatch(new RegExp(`not_ready=1 .* \\(waiting too long: ${name} for 3 runs\\)$`));
    expect(await ws.files('intake')).toEqual([name]);

    const warn = await status(ws);
    expect(warn.status).toBe(1);
    expect(warn.line).toMatch(new RegExp(`^SETTLE-INGEST WARNING - ${name} waiting for 3 runs \\(not_ready\\); last success \\d+[sm] ago`));
    expect((await status(ws, ['--max-waiting-runs', '3'])).status).toBe(0);

    const done = await ws.run();
    expect(parseSummary(done.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    expect(done.status).toBe(0);
    expect((await status(ws)).status).toBe(0);
  });
});

describe('status', () => {
  it('is CRITICAL before any successful run, OK after one, CRITICAL once it is older than --max-age or a claim is stale', async () => {
    const ws = await Workspace.create(db.url);
    expect(await status(ws)).toEqual({ status: 2, line: expect.stringMatching(/^SETTLE-INGEST CRITICAL - no successful run recorded \|/) });

    await ws.put('settle_20261105_a01.csv', sampleSettlement({ date: '2026-11-05', rows: 5, idPrefix: 'STAT' }).text);
    const run = parseSummary((await ws.run()).stdout).run;
    const ok = await status(ws);
    expect(ok).toEqual({
      status: 0,
      line: expect.stringMatching(/^SETTLE-INGEST OK - last success \d+s ago \(run r-\S+\) \| last_success_age=\d+s/),
    });
    expect(ok.line).toContain(run);

    ws.withLedger((l) => l.prepare(`UPDATE runs SET ended_at = ?`).run(new Date(Date.now() - 30 * 3600_000).toISOString()));
    expect(await status(ws)).toEqual({ status: 2, line: expect.stringMatching(/^SETTLE-INGEST CRITICAL - no successful run for 30h/) });
    expect((await status(ws, ['--max-age', '31h'])).status).toBe(0);
    expect((await status(ws, [], { SETTLE_MAX_AGE: '2d' })).status).toBe(0);

    ws.stageDeadClaim('settle_20261105_b01.csv');
    const stale = await status(ws, ['--max-age', '31h', '--json']);
    expect(stale.status).toBe(2);
    expect(JSON.parse(stale.line)).toMatchObject({
      state: 'critical',
      exit_status: 2,
      stale_claims: [{ name: 'settle_20261105_b01.csv', run: 'r-dead' }],
      message: expect.stringContaining('1 stale claim: settle_20261105_b01.csv of run r-dead'),
    });
  });

  it('is UNKNOWN (3) when the ledger cannot be read or a flag is wrong, never a false CRITICAL', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    const missing = await status(ws);
    expect(missing).toEqual({ status: 3, line: expect.stringMatching(/^SETTLE-INGEST UNKNOWN - ledger .* does not exist/) });
    await writeFile(ws.ledger, 'not a database at all, just text that is long enough to be looked at by SQLite\n'.repeat(20));
    expect((await status(ws)).status).toBe(3);
    expect(await status(ws, ['--max-age', 'soon'])).toEqual({
      status: 3,
      line: expect.stringMatching(/^SETTLE-INGEST UNKNOWN - --max-age/),
    });
    expect(await status(ws, ['--bogus'])).toEqual({
      status: 3,
      line: expect.stringMatching(/^SETTLE-INGEST UNKNOWN - unknown option '--bogus'/),
    });
  });
});

describe('the Prometheus alert rules in ops/', () => {
  it('are valid rules', () => {
    expect(promtool(['check', 'rules', RULES])).toMatchObject({ status: 0 });
  });

  it("installed by the one line their header gives for another place, send every alert's reader there, and stay valid", async () => {
    const text = await readFile(RULES, 'utf8');
    const header = text
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .map((line) => line.replace(/^# ?/, ''));
    const first = header.findIndex((line) => line.trim().startsWith('sed '));
    expect(header[first]).toMatch(/\\$/);
    // npm's global root elsewhere (prefix /usr/local, or a prefix of one's own), the package installed there
    const dir = await mkdtemp(join(tmpdir(), 'settle-rules-'));
    const root = join(dir, 'lib', 'node_modules');
    await mkdir(join(root, 'settle-ingest', 'ops'), { recursive: true });
    await copyFile(RULES, join(root, 'settle-ingest', 'ops', 'settle-ingest.rules.yml'));
    const installedRules = join(dir, 'settle-ingest.rules.yml');
    const line = `${header[first]}\n${header[first + 1]}`.replace('/etc/prometheus/rules/settle-ingest.rules.yml', installedRules);
    const installed = spawnSync('/bin/sh', ['-c', `npm() { echo '${root}'; }\n${line}`], { encoding: 'utf8' });
    expect(installed.status, installed.stderr).toBe(0);
    const rules = await readFile(installedRules, 'utf8');
    const urls = [...rules.matchAll(/^ +runbook_url: '([^']+)'$/gm)].map((m) => m[1]!);
    expect(urls).toHaveLength([...text.matchAll(/^ +- alert: /gm)].length);
    for (const url of urls) expect(url).toMatch(new RegExp(`^file://${root}/settle-ingest/ops/RUNBOOK\\.md#[a-z-]+$`));
    // nothing else changed
    expect(rules.replaceAll(`file://${root}/settle-ingest`, 'file:///usr/lib/node_modules/settle-ingest')).toBe(text);
    expect(promtool(['check', 'rules', installedRules])).toMatchObject({ status: 0 });
  });

  it('fire on no success in 26 h, a stale claim, a file waiting more than two runs, a failed last run, a stalled watch, missing metrics, and per partner on a late or missing delivery and on days without any', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-rules-'));
    await rulesUnderTest(dir);
    const series = (name: string, values: string) => `      - series: '${name}{instance="h"}'\n        values: '${values}'`;
    const fires = (at: string, alert: string, severity: string) => alertAt(at, alert, [[`severity: ${severity}`, 'instance: h']]);
    const partnerSeries = (name: string, partner: string, values: string, more = '') =>
      `      - series: '${name}{instance="h",partner="${partner}"${more}}'\n        values: '${values}'`;
    const partnerFires = (at: string, alert: string, severity: string, partner: string, more = '') =>
      alertAt(at, alert, [[`severity: ${severity}`, 'instance: h', `partner: ${partner}${more}`]]);
    const quiet = (at: string, alert: string) => alertAt(at, alert, []);
    // hourly samples: the last success at 1h and never again; a stale claim at 3h; a file waiting 1, 2, 3 runs; exit 1 at 4h
    await writeFile(
      join(dir, 'test.yml'),
      [
        'rule_files: [rules.yml]',
        'evaluation_interval: 1m',
        'tests:',
        '  - interval: 1h',
        '    input_series:',
        series('settle_ingest_last_run_timestamp_seconds', '3600+3600x30'),
        series('settle_ingest_last_success_timestamp_seconds', '3600x30'),
        series('settle_ingest_stale_claims', '0 0 0 1 0'),
        series('settle_ingest_longest_waiting_runs', '0 1 2 3 0'),
        series('settle_ingest_last_run_exit_status', '0 0 0 0 1 0'),
        // watch's last cycle at 1h and none after it: stalled once a quarter of an hour has passed
        series('settle_ingest_watch_last_cycle_timestamp_seconds', '0 3600x30'),
        '    alert_rule_test:',
        quiet('1h', 'SettleIngestWatchStalled'),
        fires('2h', 'SettleIngestWatchStalled', 'critical'),
        quiet('26h', 'SettleIngestNoSuccessfulRun'),
        fires('28h', 'SettleIngestNoSuccessfulRun', 'critical'),
        quiet('2h', 'SettleIngestStaleClaim'),
        fires('3h', 'SettleIngestStaleClaim', 'critical'),
        quiet('2h', 'SettleIngestFileWaitingTooLong'),
        fires('3h', 'SettleIngestFileWaitingTooLong', 'warning'),
        quiet('3h', 'SettleIngestLastRunFailed'),
        fires('4h', 'SettleIngestLastRunFailed', 'warning'),
        quiet('2h', 'SettleIngestMetricsMissing'),
        // per partner: stripe late at 2h, missing at 3h (past errorAfter), delivered again at 4h; adyen's last file at 1h, none since
        '  - interval: 1h',
        '    input_series:',
        partnerSeries('settle_ingest_overdue_deliveries', 'stripe', '0 0 1 0 0', ',level="warning"'),
        partnerSeries('settle_ingest_overdue_deliveries', 'stripe', '0 0 0 1 0', ',level="critical"'),
        partnerSeries('settle_ingest_last_delivery_timestamp_seconds', 'adyen', '0 3600x200'),
        partnerSeries('settle_ingest_last_delivery_timestamp_seconds', 'stripe', '0x200'),
        partnerSeries('settle_ingest_last_accounted_timestamp_seconds', 'adyen', '0 3600x200'),
        partnerSeries('settle_ingest_last_accounted_timestamp_seconds', 'stripe', '0x200'),
        // bank: its last file at 1h too, then a day waived as never coming, due at 50h
        partnerSeries('settle_ingest_last_delivery_timestamp_seconds', 'bank', '0 3600x200'),
        partnerSeries('settle_ingest_last_accounted_timestamp_seconds', 'bank', '0 3600x48 180000x150'),
        '    alert_rule_test:',
        quiet('1h', 'SettleIngestDeliveryLate'),
        partnerFires('2h', 'SettleIngestDeliveryLate', 'warning', 'stripe', ', level: warning'),
        quiet('2h', 'SettleIngestDeliveryMissing'),
        partnerFires('3h', 'SettleIngestDeliveryMissing', 'critical', 'stripe', ', level: critical'),
        quiet('4h', 'SettleIngestDeliveryMissing'),
        // four days after adyen's last file (at 1h), and never for stripe, which never delivered at all (status says that),
        // nor for bank, whose waived day (due at 50h) accounts for it
        quiet('96h', 'SettleIngestNoDeliveryForDays'),
        partnerFires('98h', 'SettleIngestNoDeliveryForDays', 'warning', 'adyen'),
        // the waived day accounts for the bank until four days after it
        [
          '      - eval_time: 148h',
          '        alertname: SettleIngestNoDeliveryForDays',
          '        exp_alerts:',
          '          - exp_labels: { severity: warning, instance: h, partner: adyen }',
          '          - exp_labels: { severity: warning, instance: h, partner: bank }',
        ].join('\n'),
        '  - interval: 1h',
        '    input_series: []',
        '    alert_rule_test:',
        '      - eval_time: 2h',
        '        alertname: SettleIngestMetricsMissing',
        '        exp_alerts:',
        '          - exp_labels: { severity: critical }',
        '',
      ].join('\n'),
    );
    const r = promtool(['test', 'rules', join(dir, 'test.yml')]);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.status).toBe(0);
  });

  it('judge a partner whose lease another run holds by its last success: starved past 26 h, naming the holder, its lease and the waiting files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-rules-'));
    const series = (name: string, labels: string, values: string) =>
      `      - series: '${name}{instance="h",partner="alpha"${labels}}'\n        values: '${values}'`;
    // alpha's last success at 1h; from 2h on host-b's run r-9 holds its lease (until 100h), and two files wait
    await writeFile(
      join(dir, 'test.yml'),
      [
        `rule_files: [${JSON.stringify(RULES)}]`,
        'evaluation_interval: 1m',
        'tests:',
        '  - interval: 1h',
        '    input_series:',
        series('settle_ingest_last_success_timestamp_seconds', '', '3600x40'),
        series('settle_ingest_partner_lease_holder', ',holder_host="host-b",holder_run="r-9"', '_ 1x40'),
        series('settle_ingest_partner_lease_until_timestamp_seconds', '', '0 360000x40'),
        series('settle_ingest_starved_waiting_files', '', '0 0x25 2x14'),
        '    alert_rule_test:',
        '      - eval_time: 26h',
        '        alertname: SettleIngestPartnerStarved',
        '        exp_alerts: []',
        '      - eval_time: 28h',
        '        alertname: SettleIngestPartnerStarved',
        '        exp_alerts:',
        '          - exp_labels: { severity: critical, instance: h, partner: alpha, holder_host: host-b, holder_run: r-9 }',
        '            exp_annotations:',
        "              summary: 'settle-ingest alpha: starved, no successful run for 1d 3h 0m 0s while run r-9 on host-b holds its lease'",
        "              description: 'Runs on h skip partner alpha because run r-9 on host-b holds its lease (until 1970-01-05 04:00:00 +0000 UTC), and no run of it has succeeded for 1d 3h 0m 0s; 2 file(s) wait in its intake. `settle-ingest status` names them; see to that run and its host.'",
        "              runbook_url: 'file:///usr/lib/node_modules/settle-ingest/ops/RUNBOOK.md#a-partner-is-starved'",
        // the holder named, the alert without one stays quiet: one alert for one starved lane
        '      - eval_time: 28h',
        '        alertname: SettleIngestNoSuccessfulRun',
        '        exp_alerts: []',
        '',
      ].join('\n'),
    );
    const r = promtool(['test', 'rules', join(dir, 'test.yml')]);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.status).toBe(0);
  });
});
