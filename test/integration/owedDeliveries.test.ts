import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { promtool, sample } from '../support/promtool.js';
import { SHARED_DEFAULT_LAYOUT, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** Stripe's files are due every Dutch business day by 04:00 Amsterdam time; each name carries its day. */
const EXPECT = { every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam', holidays: 'NL', warnAfter: '1h', errorAfter: '24h' };

/** Adyen's are due on Mondays and Thursdays by 09:00 UTC; its names carry no day, so a file is for the day it loaded. */
const ADYEN = { every: ['Mon', 'Thu'], by: '09:00', timeZone: 'UTC' };

async function partnersConfig(ws: Workspace): Promise<string> {
  const path = join(ws.root, 'config.json');
  const metricsFile = join(ws.root, 'settle.prom');
  const partners = {
    stripe: { intake: ws.intake, pattern: 'stripe_{yyyyMMdd}_*.csv', expect: EXPECT },
    adyen: { intake: adyenIntake(ws), expect: ADYEN },
  };
  await writeFile(path, JSON.stringify({ ledger: ws.ledger, stableFor: 0, metricsFile, layout: SHARED_DEFAULT_LAYOUT, partners }));
  return path;
}

const adyenIntake = (ws: Workspace) => join(ws.root, 'adyen', 'intake');

async function putAdyen(ws: Workspace, name: string, text: string): Promise<void> {
  await mkdir(adyenIntake(ws), { recursive: true });
  await writeFile(join(adyenIntake(ws), name), text);
  const old = new Date(Date.now() - 3600_000);
  await utimes(join(adyenIntake(ws), name), old, old);
}

const file = (day: string, prefix: string) => sampleSettlement({ date: day, rows: 3, idPrefix: prefix }).text;
const bad = (day: string, prefix: string) => file(day, prefix).replace(/,(-?\d+\.\d\d),/, ',12.5O,');

describe('the deliveries a partner owes', () => {
  it('a business-day partner: a missing weekday and a rejected file are CRITICAL, by name; a late file closes its day; weekends and a public holiday are never owed', async () => {
    const ws = await Workspace.create(db.url);
    const config = await partnersConfig(ws);
    // the clock of each command: the test places it on the days the scenario is about
    const at = (now: string, args: string[]) => ws.cli([...args, '--config', config], { SETTLE_TEST_NOW: now });

    // Mon 20 April 2026, 03:00 in Amsterdam: Monday's file loads on time
    await ws.put('stripe_20260420_a01.csv', file('2026-04-20', 'MON'));
    await putAdyen(ws, 'settle_20260420_x01.csv', file('2026-04-20', 'AMON'));
    const monday = await at('2026-04-20T03:00:00+02:00', ['run']);
    expect(monday.status, monday.stderr).toBe(0);

    // Thu 23, 03:00: Tuesday's file arrives two days late, Thursday's is rejected; Wednesday's never came
    await ws.put('stripe_20260421_a01.csv', file('2026-04-21', 'TUE'));
    await ws.put('stripe_20260423_a01.csv', bad('2026-04-23', 'THU'));
    await putAdyen(ws, 'settle_20260423_x01.csv', file('2026-04-23', 'ATHU'));
    const thursday = await at('2026-04-23T03:00:00+02:00', ['run']);
    expect(thursday.status).toBe(1); // the reject
    expect(thursday.stdout).toContain('(overdue: no delivery for Wed 2026-04-22, due by 04:00 Europe/Amsterdam, 23h late)');

    // Sat 25, 10:00: Friday's file, 30 h late, closes Friday; Wednesday and Thursday are past errorAfter: exit 1
    await ws.put('stripe_20260424_a01.csv', file('2026-04-24', 'FRI'));
    const saturday = await at('2026-04-25T10:00:00+02:00', ['run', '--json']);
    expect(saturday.status).toBe(1);
    const sat = JSON.parse(saturday.stdout).partners[0];
    expect(sat).toMatchObject({ partner: 'stripe', loaded: 1, rejected: 0, exit_status: 1 });
    expect(sat.overdue_deliveries.map((d: { day: string; level: string; rejected: number }) => [d.day, d.level, d.rejected])).toEqual([
      ['2026-04-22', 'critical', 0],
      ['2026-04-23', 'critical', 1],
    ]);
    // the runs did their work (the ledger keeps their own exit status); the command's exit says the rest
    expect(ws.runs().map((r) => [r.partner, r.exit_status])).toEqual([
      ['stripe', 0],
      ['adyen', 0],
      ['stripe', 1],
      ['adyen', 0],
      ['stripe', 0],
      ['adyen', 0],
    ]);

    // the metrics: every series labelled with its partner, the overdue deliveries and the last one that came
    const metrics = await readFile(join(ws.root, 'settle.prom'), 'utf8');
    expect(promtool(['check', 'metrics'], metrics)).toMatchObject({ status: 0 });
    expect(sample(metrics, 'settle_ingest_overdue_deliveries{partner="stripe",level="critical"}')).toBe(2);
    expect(sample(metrics, 'settle_ingest_overdue_deliveries{partner="stripe",level="warning"}')).toBe(0);
    expect(sample(metrics, 'settle_ingest_last_delivery_timestamp_seconds{partner="stripe"}')).toBeCloseTo(
      Date.parse('2026-04-25T08:00:00Z') / 1000,
      -2,
    );

    // Mon 27 April, noon: King's Day, a public holiday in the Netherlands; the weekend before it is not owed either
    const status = await at('2026-04-27T12:00:00+02:00', ['status', '--partner', 'stripe', '--max-age', '4d', '--json']);
    expect(status.status).toBe(2);
    const s = JSON.parse(status.stdout);
    expect(s.overdue_deliveries.map((d: { day: string }) => d.day)).toEqual(['2026-04-22', '2026-04-23']);
    expect(s.line).toMatch(
      /^SETTLE-INGEST CRITICAL - stripe: no delivery for Wed 2026-04-22, due by 04:00 Europe\/Amsterdam, 5d late; stripe: no delivery for Thu 2026-04-23 \(1 file rejected\), due by 04:00 Europe\/Amsterdam, 4d late \| .* overdue_deliveries=2$/,
    );

    // without --partner, adyen is judged too: Monday's file, due by 09:00 UTC, is an hour late (no warnAfter)
    const both = await at('2026-04-27T12:00:00+02:00', ['status', '--max-age', '4d']);
    expect(both.stdout).toContain('adyen: no delivery for Mon 2026-04-27, due by 09:00 UTC, 1h late');

    // report deliveries: each due day as it stands
    const report = await at('2026-04-27T12:00:00+02:00', ['report', 'deliveries', '--weeks', '2', '--json']);
    expect(report.status, report.stderr).toBe(0);
    const days = JSON.parse(report.stdout).partners[0].days as {
      day: string;
      state: string;
      not_owed_because: string | null;
      late_seconds: number | null;
    }[];
    const from20 = days.filter((d) => d.day >= '2026-04-20');
    expect(from20.map((d) => [d.day, d.state, d.not_owed_because])).toEqual([
      ['2026-04-20', 'on_time', null],
      ['2026-04-21', 'late', null],
      ['2026-04-22', 'missing', null],
      ['2026-04-23', 'rejected', null],
      ['2026-04-24', 'late', null],
      ['2026-04-25', 'not_owed', 'weekend'],
      ['2026-04-26', 'not_owed', 'weekend'],
      ['2026-04-27', 'not_owed', 'Koningsdag'],
    ]);
    // loaded a moment after the run began: late by the hours the scenario says, to the minute
    expect(Math.round(from20[1]!.late_seconds! / 60)).toBe(47 * 60);
    expect(Math.round(from20[4]!.late_seconds! / 60)).toBe(30 * 60);

    // the page: every partner, its missing day, in a real browser that runs no script and fetches nothing
    const page = join(ws.root, 'deliveries.html');
    const html = await at('2026-04-27T12:00:00+02:00', ['report', 'deliveries', '--weeks', '2', '--html', page]);
    expect(html.status, html.stderr).toBe(0);
    const seen = await inChromium(page);
    expect(seen.requests).toEqual([`file://${page}`]);
    expect(seen.partners).toEqual(['stripe', 'adyen']);
    expect(seen.stripeMissing).toContain('Wed 2026-04-22');
    expect(seen.stripeMissing).toContain('MISSING');
    expect(seen.adyenMissing).toContain('Mon 2026-04-27');
    expect(seen.calendarDays).toBeGreaterThanOrEqual(8);
    // a page for people who need not learn where the ledger is
    expect(await readFile(page, 'utf8')).not.toContain(ws.ledger);
  });
});

/**
 * Opens the page in Debian's Chromium, headless, JavaScript off, with a fresh profile: every
 * request it makes (there must be one, the page itself), the partners it shows, the rows of their
 * missing days, and how many days its stripe calendar draws.
 */
async function inChromium(page: string) {
  const profile = await mkdtemp(join(tmpdir(), 'settle-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    javaScriptEnabled: false,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const requests: string[] = [];
    browser.on('request', (r) => requests.push(r.url()));
    const tab = await browser.newPage();
    await tab.goto(`file://${page}`);
    await tab.screenshot({ path: join(page, '..', 'deliveries.png'), fullPage: true });
    return {
      requests,
      partners: await tab.locator('section.partner h2').allTextContents(),
      stripeMissing: (await tab.locator('#partner-stripe tr.missing').allTextContents()).join(' '),
      adyenMissing: (await tab.locator('#partner-adyen tr.missing').allTextContents()).join(' '),
      calendarDays: await tab.locator('#partner-stripe svg g.day').count(),
    };
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}
