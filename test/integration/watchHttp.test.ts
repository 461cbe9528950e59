import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rename, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { DatabaseRelay } from '../support/databaseRelay.js';
import { until } from '../support/until.js';
import { freePort } from '../support/postgresServer.js';
import { alertAt, promtool, rulesUnderTest, sample } from '../support/promtool.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const QUICK = ['--poll', '0.2', '--rescan', '0.5'];

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** One HTTP request as a scraper or a kubelet sends it; a refused connection is `status: 0`. */
function fetchText(host: string, port: number, path: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
    });
    req.on('error', () => resolve({ status: 0, type: '', body: '' }));
    req.end();
  });
}

const started = new Set<ChildProcess>();
afterEach(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
});

/** `watch` over the workspace's intake and ledger, serving on 127.0.0.1:port, with quick cycles. */
function watchListening(ws: Workspace, port: number, extra: string[] = [], env: Record<string, string> = {}) {
  const args = ['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--listen', `127.0.0.1:${port}`];
  const child = ws.startRunWith([...args, ...QUICK, ...extra], env);
  started.add(child);
  return { child, done: finished(child) };
}

/** The families of a Prometheus text: each `# TYPE` line. */
const families = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('# TYPE '))
    .sort();

/** A scrape's samples as Prometheus stores them: the target's `instance` and `job` labels added to each series. */
function scraped(text: string, target: Record<string, string>): { series: string; value: number }[] {
  const extra = Object.entries(target)
    .map(([name, value]) => `${name}="${value}"`)
    .join(',');
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const at = line.lastIndexOf(' ');
      const name = line.slice(0, at);
      const series = name.endsWith('}') ? `${name.slice(0, -1)},${extra}}` : `${name}{${extra}}`;
      return { series, value: Number(line.slice(at + 1)) };
    });
}

describe('watch --listen: metrics and health over HTTP', () => {
  it('serves /metrics (the metrics file, checked by promtool), /healthz and /readyz on the address it is given, 404 elsewhere, no secret in any answer', async () => {
    const ws = await Workspace.create(db.url);
    const relay = await DatabaseRelay.start(new URL(db.url));
    const password = new URL(db.url).password;
    expect(password).not.toBe('');
    const metricsFile = join(ws.root, 'settle.prom');
    const port = await freePort();
    const get = (path: string, method?: string) => fetchText('127.0.0.1', port, path, method);
    const w = watchListening(ws, port, ['--metrics-file', metricsFile], { DATABASE_URL: relay.url(db.url) });
    await ws.put('settle_20260901_h01.csv', sampleSettlement({ date: '2026-09-01', rows: 5, idPrefix: 'HTTP1' }).text);
    const metrics = await until('a worked cycle served', async () => {
      const answer = await get('/metrics');
      return answer.status === 200 && answer.body.includes('settle_ingest_watch_worked_cycles_total 1') && answer;
    });
    expect(metrics.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(promtool(['check', 'metrics'], metrics.body)).toMatchObject({ status: 0 });
    expect(sample(metrics.body, 'settle_ingest_last_run_rows{partner="default"}')).toBe(5);
    expect(sample(metrics.body, 'settle_ingest_last_run_files{partner="default",outcome="loaded"}')).toBe(1);
    // the same families as the metrics file, from the one renderer
    expect(families(metrics.body)).toEqual(families(await readFile(metricsFile, 'utf8')));
    expect(families(metrics.body)).toContain('# TYPE settle_ingest_watch_last_cycle_timestamp_seconds gauge');

    expect(await get('/healthz')).toMatchObject({ status: 200, body: expect.stringMatching(/^live: /) });
    expect(await get('/readyz')).toMatchObject({ status: 200, body: 'ready\n' });
    expect((await get('/readyz', 'HEAD')).status).toBe(200);
    for (const path of ['/', '/metrics/', '/debug/pprof', '/healthz/x', '/favicon.ico', '/../metrics']) {
      expect((await get(path)).status, path).toBe(404);
    }
    expect((await get('/metrics', 'POST')).status).toBe(405);
    expect((await get('/metrics?name[]=up')).status).toBe(200);

    // bound to the address given: another address of this host is not served
    const other = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && !address.internal && address.family === 'IPv4');
    if (other) expect((await fetchText(other.address, port, '/metrics')).status).toBe(0);

    // the finance database away: not ready, saying which, without its password; the loop lives on
    await relay.cut();
    const notReady = await until('not ready', async () => {
      const answer = await get('/readyz');
      return answer.status === 503 && answer;
    });
    expect(notReady.body).toMatch(/^not ready: finance database: /);
    expect((await get('/healthz')).status).toBe(200);
    await relay.restore();
    await until('ready again', async () => (await get('/readyz')).status === 200);

    // the ledger away: not ready, naming it
    const ledgerMoved = `${ws.ledger}.away`;
    await rename(ws.ledger, ledgerMoved);
    const noLedger = await until('not ready without the ledger', async () => {
      const answer = await get('/readyz');
      return answer.status === 503 && answer;
    });
    expect(noLedger.body).toMatch(/^not ready: ledger: /);
    await rename(ledgerMoved, ws.ledger);
    await until('ready with the ledger back', async () => (await get('/readyz')).status === 200);

    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const answer = await get(path);
      expect(answer.body, path).not.toContain(password);
      expect(answer.body, path).not.toContain(relay.url(db.url));
    }
    expect(notReady.body + noLedger.body).not.toContain(password);

    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);
    // the port is let go with the process
    expect((await get('/healthz')).status).toBe(0);
    await relay.cut();
  });

  it('refuses an address it cannot bind or that is not said, with exit 2 before anything is touched', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20260902_h01.csv', sampleSettlement({ date: '2026-09-02', rows: 2, idPrefix: 'HTTP2' }).text);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const busy = (taken.address() as { port: number }).port;
    try {
      for (const [listen, why] of [
        [`127.0.0.1:${busy}`, /cannot listen: the port is in use/],
        ['9475', /expected ADDRESS:PORT/],
        [':9475', /name the address/],
        ['127.0.0.1:0', /port must be from 1 to 65535/],
        ['::1:9475', /IPv6 address goes in brackets/],
        ['[127.0.0.1]:9475', /not an IPv6 address/],
        ['192.0.2.1:9475', /no interface of this host has that address/],
      ] as const) {
        const r = await ws.cli(['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--listen', listen]);
        expect(r.status, listen).toBe(2);
        expect(r.stderr, listen).toMatch(why);
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    expect(ws.runs()).toEqual([]);
    expect(await ws.files('intake')).toEqual(['settle_20260902_h01.csv']);
  });

  it('the alert rules of ops/ work unchanged on the scraped metrics: a failed last run and a stalled loop fire, nothing else', async () => {
    const ws = await Workspace.create(db.url);
    const port = await freePort();
    const w = watchListening(ws, port);
    // one good file, then one rejected: the last run exits 1
    await ws.put('settle_20260903_h01.csv', sampleSettlement({ date: '2026-09-03', rows: 3, idPrefix: 'HTTP3' }).text);
    await until('the first file archived', async () => (await ws.files('archive')).length === 1);
    await ws.put('settle_20260903_h02.csv', 'no settlement at all\n');
    const scrape = await until('the rejecting run served', async () => {
      const answer = await fetchText('127.0.0.1', port, '/metrics');
      return answer.status === 200 && answer.body.includes('settle_ingest_last_run_exit_status{partner="default"} 1') && answer.body;
    });
    const scrapedAt = Date.now() / 1000;
    w.child.kill('SIGTERM');
    expect((await w.done).status).toBe(0);

    // the scrape as Prometheus stores it (instance and job added), held for 20 minutes: the loop's last cycle
    // stays where it was, as when it stalls; times moved onto promtool's clock, which starts at 0
    const target = { instance: `watch:${port}`, job: 'settle-ingest' };
    const inputs = scraped(scrape, target).map(({ series, value }) => {
      const onTestClock = series.includes('_timestamp_seconds') && value > 0 ? Math.round(value - scrapedAt) : value;
      return `      - series: '${series}'\n        values: '${onTestClock}+0x20'`;
    });
    const labels = [`instance: "${target.instance}"`, `job: ${target.job}`];
    const dir = await mkdtemp(join(tmpdir(), 'settle-scraped-rules-'));
    await rulesUnderTest(dir);
    await writeFile(
      join(dir, 'test.yml'),
      [
        'rule_files: [rules.yml]',
        'evaluation_interval: 1m',
        'tests:',
        '  - interval: 1m',
        '    input_series:',
        ...inputs,
        '    alert_rule_test:',
        alertAt('1m', 'SettleIngestLastRunFailed', [['severity: warning', 'partner: default', ...labels]]),
        alertAt('10m', 'SettleIngestWatchStalled', []),
        alertAt('16m', 'SettleIngestWatchStalled', [['severity: critical', ...labels]]),
        ...[
          'SettleIngestMetricsMissing',
          'SettleIngestNoSuccessfulRun',
          'SettleIngestStaleClaim',
          'SettleIngestFileWaitingTooLong',
          'SettleIngestDeliveryLate',
          'SettleIngestDeliveryMissing',
          'SettleIngestNoDeliveryForDays',
        ].map((alert) => alertAt('20m', alert, [])),
        '',
      ].join('\n'),
    );
    const r = promtool(['test', 'rules', join(dir, 'test.yml')]);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.status).toBe(0);
  });
});
