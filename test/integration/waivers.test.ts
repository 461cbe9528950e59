import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, startCli } from '../support/cli.js';
import { promtool, sample } from '../support/promtool.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** The bank owes a file every Wednesday and Thursday by 04:00 UTC; past 24 h a missing day is critical. */
const EXPECT = { every: ['Wed', 'Thu'], by: '04:00', timeZone: 'UTC', warnAfter: '1h', errorAfter: '24h' };

const file = (day: string, prefix: string) => sampleSettlement({ date: day, rows: 3, idPrefix: prefix }).text;

const REASON = 'the bank confirmed: no settlement on Thursday (system migration), ticket BANK-4411';

interface RunJson {
  run: string;
  partner: string;
  exit_status: number | null;
  process_exit_status: number | null;
}

describe.each(['sqlite', 'postgres'] as const)('waiving an owed day (%s ledger)', (store) => {
  it("a bank that never sends Thursday: exit 1 (report runs and the metrics say the process's 1 beside the loads' 0) and CRITICAL until the day is waived, then exit 0, OK, no overdue metric, the reports name who and why; --undo brings it back; bad calls exit 2 and write nothing", async () => {
    const ws = await Workspace.create(db.url, { ledger: store });
    const config = join(ws.root, 'config.json');
    const metricsFile = join(ws.root, 'settle.prom');
    await writeFile(
      config,
      JSON.stringify({
        ledger: ws.ledger,
        stableFor: 0,
        metricsFile,
        partners: { bank: { intake: ws.intake, pattern: 'bank_{yyyyMMdd}_*.csv', expect: EXPECT } },
      }),
    );
    // each command's clock, placed on the night the scenario is about; the operator is the person behind sudo (the tests run as root)
    const at = (now: string, args: string[]) =>
      ws.cli([...args, '--config', config], { SETTLE_TEST_NOW: now, SUDO_USER: 'alice', SUDO_UID: '1000' });
    const metric = async (series: string) => sample(await readFile(metricsFile, 'utf8'), series);

    // Wed 22 April 2026, 03:00 UTC: Wednesday's file, on time
    // rows of their own in the finance database the two stores' scenarios share: never a resend of the other's
    await ws.put('bank_20260422_01.csv', file('2026-04-22', `${store.toUpperCase()}-WED`));
    expect((await at('2026-04-22T03:00:00Z', ['run'])).status).toBe(0);

    // Fri 24, 10:00: Thursday's file never came, 30 h past its due time: the run loads nothing wrong and exits 1
    const friday = await at('2026-04-24T10:00:00Z', ['run']);
    expect(friday.status, friday.stderr).toBe(1);
    expect(friday.stdout).toContain('no delivery for Thu 2026-04-23, due by 04:00 UTC, 30h late');
    const status = await at('2026-04-24T10:05:00Z', ['status']);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(/^SETTLE-INGEST CRITICAL - bank: no delivery for Thu 2026-04-23/);

    // the exit status the scheduler saw, beside the loads' own: in report runs, its JSON and the metrics
    const runs = await at('2026-04-24T10:05:00Z', ['report', 'runs', '--json']);
    const [latest] = JSON.parse(runs.stdout).runs as RunJson[];
    expect(latest).toMatchObject({ partner: 'bank', exit_status: 0, process_exit_status: 1 });
    expect(ws.runs().map((r) => [r.exit_status, r.process_exit_status])).toEqual([
      [0, 0],
      [0, 1],
    ]);
    const runsText = await at('2026-04-24T10:05:00Z', ['report', 'runs']);
    const [header, newest] = runsText.stdout.split('\n');
    const column = (name: string) => newest!.slice(header!.indexOf(name)).split(/\s+/)[0];
    expect([column('exit'), column('loads')]).toEqual(['1', '0']);
    expect(promtool(['check', 'metrics'], await readFile(metricsFile, 'utf8'))).toMatchObject({ status: 0 });
    expect(await metric('settle_ingest_last_run_exit_status{partner="bank"}')).toBe(1);
    expect(await metric('settle_ingest_last_run_loads_exit_status{partner="bank"}')).toBe(0);
    expect(await metric('settle_ingest_overdue_deliveries{partner="bank",level="critical"}')).toBe(1);
    // nothing waived yet: the partner is accounted for up to its last file
    const lastDelivery = await metric('settle_ingest_last_delivery_timestamp_seconds{partner="bank"}');
    expect(lastDelivery).toBeGreaterThan(0);
    expect(await metric('settle_ingest_last_accounted_timestamp_seconds{partner="bank"}')).toBe(lastDelivery);

    // bad calls: each exit 2 with one line, and the ledger keeps not one event more
    const eventsBefore = ws.events().length;
    const refusals: [string[], RegExp][] = [
      [['waive', '--partner', 'nobody', '--day', '2026-04-23', '--reason', REASON], /nobody/],
      [['waive', '--partner', 'bank', '--day', '2026-04-23'], /--reason is required/],
      [['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', '  '], /--reason is required/],
      [['waive', '--partner', 'bank', '--day', '2026-04-24', '--reason', REASON], /Fri 2026-04-24 is not a due day of partner "bank"/],
      [['waive', '--partner', 'bank', '--day', '2026-02-30', '--reason', REASON], /is not a day/],
      [['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', REASON, '--undo'], /is not waived: nothing to undo/],
    ];
    for (const [args, says] of refusals) {
      const r = await at('2026-04-24T10:10:00Z', args);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(says);
    }
    expect(ws.events()).toHaveLength(eventsBefore);

    // the waiver: one append-only event with who and why
    const waive = await at('2026-04-24T10:15:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', REASON, '--json']);
    expect(waive.status, waive.stderr).toBe(0);
    expect(JSON.parse(waive.stdout)).toMatchObject({ version: 1, partner: 'bank', day: '2026-04-23', action: 'waived', operator: 'alice' });
    const waived = ws.events().slice(eventsBefore);
    expect(waived.map((e) => [e.event, e.name, e.run_id, e.details.reason, e.details.operator])).toEqual([
      ['waived', '2026-04-23', null, REASON, 'alice'],
    ]);
    // a day waived once is not waived twice
    const again = await at('2026-04-24T10:16:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', REASON]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already waived by alice at 2026-04-24 10:15 UTC: the bank confirmed/);
    expect(ws.events()).toHaveLength(eventsBefore + 1);

    // the next run exits 0, status is OK, the metrics count no overdue day and say exit 0
    const after = await at('2026-04-24T11:00:00Z', ['run']);
    expect(after.status, after.stdout).toBe(0);
    expect(after.stdout).not.toContain('overdue');
    const ok = await at('2026-04-24T11:05:00Z', ['status']);
    expect(ok.status, ok.stdout).toBe(0);
    expect(ok.stdout).toMatch(/^SETTLE-INGEST OK/);
    expect(promtool(['check', 'metrics'], await readFile(metricsFile, 'utf8'))).toMatchObject({ status: 0 });
    expect(await metric('settle_ingest_overdue_deliveries{partner="bank",level="critical"}')).toBe(0);
    expect(await metric('settle_ingest_overdue_deliveries{partner="bank",level="warning"}')).toBe(0);
    expect(await metric('settle_ingest_last_run_exit_status{partner="bank"}')).toBe(0);
    // the waived Thursday accounts for the partner from its due time (SettleIngestNoDeliveryForDays counts from there)
    expect(await metric('settle_ingest_last_delivery_timestamp_seconds{partner="bank"}')).toBe(lastDelivery);
    expect(await metric('settle_ingest_last_accounted_timestamp_seconds{partner="bank"}')).toBe(Date.parse('2026-04-23T04:00:00Z') / 1000);

    // report deliveries: waived, with the reason, the operator and when, in text, JSON and the page
    const text = await at('2026-04-24T11:05:00Z', ['report', 'deliveries', '--weeks', '1']);
    expect(text.status, text.stderr).toBe(0);
    const thursdayLine = text.stdout.split('\n').find((l) => l.startsWith('Thu 2026-04-23'));
    expect(thursdayLine).toContain(`waived by alice at 2026-04-24 10:15 UTC: ${REASON}`);
    const json = await at('2026-04-24T11:05:00Z', ['report', 'deliveries', '--weeks', '1', '--json']);
    const days = JSON.parse(json.stdout).partners[0].days as { day: string; state: string; level: string | null; waiver: unknown }[];
    expect(days.find((d) => d.day === '2026-04-23')).toMatchObject({
      state: 'waived',
      level: null,
      waiver: { reason: REASON, operator: 'alice', at: expect.stringMatching(/^2026-04-24T10:15:/) },
    });
    expect(days.find((d) => d.day === '2026-04-22')).toMatchObject({ state: 'on_time', waiver: null });
    expect(JSON.parse(json.stdout).partners[0].weeks).toEqual([expect.objectContaining({ on_time: 1, missing: 0, waived: 1 })]);
    const page = join(ws.root, 'deliveries.html');
    expect((await at('2026-04-24T11:05:00Z', ['report', 'deliveries', '--weeks', '1', '--html', page])).status).toBe(0);
    const html = await readFile(page, 'utf8');
    expect(html).toContain('<span class="chip waived">waived</span>');
    expect(html).toContain(`waived by alice at 2026-04-24 10:15 UTC: ${REASON}`);

    // --undo (with its own reason) takes it back: the day is overdue again, the run exits 1, status CRITICAL
    const undo = await at('2026-04-24T12:00:00Z', [
      'waive',
      '--partner',
      'bank',
      '--day',
      '2026-04-23',
      '--undo',
      '--reason',
      'wrong day: the migration was on Friday',
    ]);
    expect(undo.status, undo.stderr).toBe(0);
    expect(
      ws
        .events()
        .slice(-1)
        .map((e) => [e.event, e.name, e.details.operator]),
    ).toEqual([['unwaived', '2026-04-23', 'alice']]);
    // nothing of the ledger's history is lost: the waiver stays, the undo follows it
    expect(
      ws
        .events()
        .filter((e) => e.name === '2026-04-23')
        .map((e) => e.event),
    ).toEqual(['waived', 'unwaived']);
    const back = await at('2026-04-24T13:00:00Z', ['run']);
    expect(back.status).toBe(1);
    expect(back.stdout).toContain('no delivery for Thu 2026-04-23');
    expect((await at('2026-04-24T13:05:00Z', ['status'])).status).toBe(2);
    expect(await metric('settle_ingest_overdue_deliveries{partner="bank",level="critical"}')).toBe(1);
    const history = await at('2026-04-24T13:05:00Z', ['history', '2026-04-23', '--json']);
    expect(JSON.parse(history.stdout).events.map((e: { event: string }) => e.event)).toEqual(['waived', 'unwaived']);
  });
});

describe('who waived what, and which days can be waived', () => {
  // a reason written to take over the terminal that prints it: a title (OSC), a clear screen, a colour, a right-to-left override
  const HOSTILE = 'confirmed\x1b]0;all clear\x07\x1b[2J\x1b[31m red \u202eevil';
  const RAW = /[\x1b\x07\u202e]/;

  it("the operator is the real user (SUDO_USER is believed only from root, as sudo sets it); a hostile reason is spelled out wherever it is printed; a day before the partner's first run is never due (exit 2, why)", async () => {
    const ws = await Workspace.create(db.url, { ledger: 'postgres' });
    const config = join(ws.root, 'config.json');
    await writeFile(
      config,
      JSON.stringify({
        ledger: ws.ledger,
        stableFor: 0,
        partners: { lender: { intake: ws.intake, pattern: 'bank_{yyyyMMdd}_*.csv', expect: EXPECT } },
      }),
    );
    // another user of the host may read the config (a PostgreSQL ledger needs no file of ours)
    await chmod(ws.root, 0o755);
    await chmod(config, 0o644);
    const at = (now: string, args: string[], env: Record<string, string> = {}) =>
      ws.cli([...args, '--config', config], { SETTLE_TEST_NOW: now, ...env });
    const asNobody = (now: string, args: string[], env: Record<string, string>) =>
      finished(
        startCli(
          [...args, '--config', config],
          { DATABASE_URL: ws.databaseUrl, SETTLE_TEST_NOW: now, ...env },
          { cwd: '/', as: { uid: 65534, gid: 65534 } },
        ),
      );

    // the bank's first run: Wed 22 April 2026
    await ws.put('bank_20260422_02.csv', file('2026-04-22', 'WHO-WED'));
    expect((await at('2026-04-22T03:00:00Z', ['run'])).status).toBe(0);

    // a Wednesday before it was never owed (status never counts it): refused, nothing written
    const events = ws.events().filter((e) => e.partner === 'lender').length;
    const early = await at('2026-04-24T10:00:00Z', ['waive', '--partner', 'lender', '--day', '2001-01-03', '--reason', REASON]);
    expect(early.status, early.stderr).toBe(2);
    expect(early.stderr).toMatch(/Wed 2001-01-03 was never due: partner "lender" first ran on 2026-04-22/);
    expect(ws.events().filter((e) => e.partner === 'lender')).toHaveLength(events);

    // another user, not root, says it is the CFO: the ledger records who it is
    const forged = await asNobody('2026-04-24T10:15:00Z', ['waive', '--partner', 'lender', '--day', '2026-04-23', '--reason', HOSTILE], {
      SUDO_USER: 'the-cfo',
      SUDO_UID: '0',
    });
    expect(forged.status, forged.stderr).toBe(0);
    const [waived] = ws
      .events()
      .filter((e) => e.partner === 'lender')
      .slice(events);
    expect([waived!.event, waived!.name, waived!.details.operator, waived!.details.reason]).toEqual([
      'waived',
      '2026-04-23',
      'nobody',
      HOSTILE,
    ]);
    // its own line spells the reason out
    expect(forged.stdout).not.toMatch(RAW);
    expect(forged.stdout).toContain('confirmed\\x1b]0;all clear\\x07\\x1b[2J\\x1b[31m red \\u202eevil');

    // the refusal of a second waiver quotes the first one's reason: spelled out too
    const again = await at('2026-04-24T10:16:00Z', ['waive', '--partner', 'lender', '--day', '2026-04-23', '--reason', REASON], {
      SUDO_USER: 'alice',
      SUDO_UID: '1000',
    });
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already waived by nobody at 2026-04-24 10:15 UTC: confirmed\\x1b\]0;all clear/);
    expect(again.stderr).not.toMatch(RAW);

    // report deliveries, as text and as the page: spelled out, never raw
    const text = await at('2026-04-24T11:00:00Z', ['report', 'deliveries', '--weeks', '1']);
    expect(text.stdout).toContain('waived by nobody at 2026-04-24 10:15 UTC: confirmed\\x1b]0;all clear');
    expect(text.stdout).not.toMatch(RAW);
    const page = join(ws.root, 'deliveries.html');
    expect((await at('2026-04-24T11:00:00Z', ['report', 'deliveries', '--weeks', '1', '--html', page])).status).toBe(0);
    const html = await readFile(page, 'utf8');
    expect(html).toContain('waived by nobody at 2026-04-24 10:15 UTC: confirmed\\x1b]0;all clear\\x07');
    expect(html).not.toMatch(RAW);

    // root with SUDO_USER that sudo did not set (no SUDO_UID beside it) is root; with sudo's pair, the person
    const undo = await at(
      '2026-04-24T12:00:00Z',
      ['waive', '--partner', 'lender', '--day', '2026-04-23', '--undo', '--reason', 'wrong day'],
      {
        SUDO_USER: 'the-cfo',
      },
    );
    expect(undo.status, undo.stderr).toBe(0);
    const redo = await at('2026-04-24T12:05:00Z', ['waive', '--partner', 'lender', '--day', '2026-04-23', '--reason', REASON], {
      SUDO_USER: 'alice',
      SUDO_UID: '1000',
    });
    expect(redo.status, redo.stderr).toBe(0);
    expect(
      ws
        .events()
        .filter((e) => e.partner === 'lender' && e.name === '2026-04-23')
        .map((e) => [e.event, e.details.operator]),
    ).toEqual([
      ['waived', 'nobody'],
      ['unwaived', 'root'],
      ['waived', 'alice'],
    ]);
  });

  it('a day already delivered is not waived (exit 2, naming its file and run; nothing recorded); a day whose only file was rejected is, and the answer names that file', async () => {
    const ws = await Workspace.create(db.url);
    const config = await ws.partnersConfig({ bank: { intake: ws.intake, pattern: 'bank_{yyyyMMdd}_*.csv', expect: EXPECT } });
    const at = (now: string, args: string[]) => ws.cli([...args, '--config', config], { SETTLE_TEST_NOW: now });
    // Wednesday's file on time; Thursday's is rejected (a bad amount)
    await ws.put('bank_20260422_03.csv', file('2026-04-22', 'DONE-WED'));
    const bad = file('2026-04-23', 'DONE-THU').split('\n');
    bad[2] = bad[2]!.replace(/,(-?\d+\.\d\d),/, ',12.5O,');
    await ws.put('bank_20260423_03.csv', bad.join('\n'));
    expect((await at('2026-04-22T03:00:00Z', ['run', '--partner', 'bank'])).status).toBe(1);
    const waivers = () => ws.events().filter((e) => e.event === 'waived' || e.event === 'unwaived');

    // the operator means another day (or partner): the ledger says Wednesday came
    const delivered = await at('2026-04-24T10:00:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-22', '--reason', REASON]);
    expect(delivered.status).toBe(2);
    expect(delivered.stderr.trim()).toMatch(
      /^settle-ingest: Wed 2026-04-22 of partner "bank" was delivered: bank_20260422_03\.csv loaded at 2026-04-22 03:00:\d\d UTC by run r-\S+-bank\. A waiver says the day's files will never come: nothing to waive/,
    );
    expect(waivers()).toEqual([]);
    const report = JSON.parse((await at('2026-04-24T10:01:00Z', ['report', 'deliveries', '--weeks', '1', '--json'])).stdout);
    const day = (d: string) => report.partners[0].days.find((x: { day: string }) => x.day === d);
    expect(day('2026-04-22')).toMatchObject({ state: 'on_time', waiver: null });

    // Thursday's file was rejected: the bank confirms there is no settlement after all; waived, and said what came
    const rejected = await at('2026-04-24T10:02:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', REASON, '--json']);
    expect(rejected.status, rejected.stderr).toBe(0);
    expect(JSON.parse(rejected.stdout)).toMatchObject({
      action: 'waived',
      arrived: [{ name: 'bank_20260423_03.csv', outcome: 'rejected' }],
    });
    expect(waivers().map((e) => [e.event, e.name])).toEqual([['waived', '2026-04-23']]);
    const undone = await at('2026-04-24T10:03:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', 'wrong', '--undo']);
    expect(undone.status).toBe(0);
    const line = await at('2026-04-24T10:04:00Z', ['waive', '--partner', 'bank', '--day', '2026-04-23', '--reason', REASON]);
    expect(line.stdout.trim()).toMatch(
      /^bank: Thu 2026-04-23 waived by \S+: .*; its files that came did not deliver it: bank_20260423_03\.csv \(rejected\); --undo takes it back\)$/,
    );
  });
});
