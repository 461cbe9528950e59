import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd, partnerSftp } from '../support/loggingSshd.js';
import { financeDatabase, Workspace } from '../support/workspace.js';

/**
 * The runs' own moves out of the intake, as the SFTP server logs them (a real chrooted OpenSSH
 * through rsyslogd): never an upload renamed away before a run read it, whether the audit reads
 * the whole log or reads it in a zone an hour off (then the offset is named, with the option).
 */

interface AuditJson {
  discrepancies: number;
  checks: { name: string; discrepancies: { kind: string; message: string }[] }[];
  transfer_log: {
    arrivals: { name: string; outcome: string | null; no_record: string | null; unmatched: boolean; message: string }[];
    unmatched: number;
    clock_offsets: { kind: string; offset_seconds: number; moves: number; of: number; message: string }[];
  };
}

const kindsOf = (doc: AuditJson) => doc.checks.flatMap((c) => c.discrepancies.map((d) => d.kind));

/** `+HH:MM` of this host's zone now, moved by `hours`: the zone the test's rsyslogd writes in, read an hour off. */
function zoneOff(hours: number): string {
  const minutes = -new Date().getTimezoneOffset() + hours * 60;
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

let server: TestLoggingSshd;
beforeAll(async () => {
  server = await TestLoggingSshd.start();
  await mkdir(join(server.jail, 'in'), { mode: 0o755 });
});
afterAll(async () => server?.destroy());

describe("the transfer log audit and the runs' own moves", () => {
  it('names no move of a run as unmatched over the whole log; read an hour off, names the offset and --transfer-log-time-zone; a server clock a year behind is a clock to set right, never a zone; blames no upload', async () => {
    const own = await financeDatabase();
    const ws = await Workspace.create(own.url);
    try {
      const files = await mkdtemp(join(tmpdir(), 'settle-partner-'));
      const texts = {
        a01: sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'OMA' }).text,
        a02: sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: 'OMB' }).text,
        b01: sampleSettlement({ date: '2026-12-02', rows: 4, idPrefix: 'OMC' }).text,
      };
      for (const [name, text] of Object.entries(texts)) await writeFile(join(files, name), text);
      const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
      const intake = server.url('/in');
      const run = () => ws.cli(['run', '--intake', intake, '--ledger', ws.ledger, '--stable-for', '0', ...access, '--json']);

      // two nights: each run loads what came and moves it to /archive (a renamed resend to /duplicates)
      await partnerSftp(server, [
        `put ${join(files, 'a01')} /in/settle_20261201_a01.csv`,
        `put ${join(files, 'a02')} /in/settle_20261201_a02.csv`,
      ]);
      const first = await run();
      expect(JSON.parse(first.stdout), first.stderr).toMatchObject({ loaded: 2 });
      await partnerSftp(server, [
        `put ${join(files, 'b01')} /in/settle_20261202_b01.csv`,
        `put ${join(files, 'a01')} /in/settle_20261201_a03.csv`,
      ]);
      const second = await run();
      expect(JSON.parse(second.stdout), second.stderr).toMatchObject({ loaded: 1, skipped: 1 });
      await server.flushLog();
      expect(await readFile(server.logFile, 'utf8')).toMatch(
        /rename old "\/in\/settle_20261201_a01\.csv" new "\/archive\/settle_20261201_a01\.csv"/,
      );

      const auditArgs = ['audit', '--intake', intake, '--ledger', ws.ledger, ...access, '--transfer-log', server.logFile];
      const outcomes = (doc: AuditJson) => doc.transfer_log.arrivals.map((a) => [a.name, a.outcome ?? a.no_record, a.unmatched]);
      const expected = [
        ['settle_20261201_a01.csv', 'loaded', false],
        ['settle_20261201_a02.csv', 'loaded', false],
        ['settle_20261202_b01.csv', 'loaded', false],
        ['settle_20261201_a03.csv', 'skipped', false],
      ];

      // the whole log, read in the zone it was written in
      const whole = await ws.cli([...auditArgs, '--json']);
      expect(whole.status, whole.stdout).toBe(0);
      const wholeDoc = JSON.parse(whole.stdout) as AuditJson;
      expect(outcomes(wholeDoc)).toEqual(expected);
      expect(wholeDoc.transfer_log.clock_offsets).toEqual([]);

      // the same log read an hour east of where it was written: its times come out an hour early
      const off = [...auditArgs, '--transfer-log-time-zone', zoneOff(1)];
      const shifted = await ws.cli([...off, '--json']);
      expect(shifted.status, shifted.stdout).toBe(1);
      const doc = JSON.parse(shifted.stdout) as AuditJson;
      expect(outcomes(doc)).toEqual(expected); // matched at the offset found: no upload blamed
      expect(doc.transfer_log.unmatched).toBe(0);
      expect(doc.transfer_log.clock_offsets).toEqual([expect.objectContaining({ kind: 'zone', offset_seconds: -3600, moves: 4, of: 4 })]);
      expect(kindsOf(doc)).toEqual(['transfer_log_clock_offset']);
      const text = await ws.cli(off);
      expect(text.status).toBe(1);
      expect(text.stdout).toContain('the transfer log runs 1 h behind the ledger');
      expect(text.stdout).toContain('set --transfer-log-time-zone');
      expect(text.stdout).not.toContain('UNMATCHED');

      // the same lines as a server whose clock runs a year behind writes them (rsyslog's precise format, which holds the year):
      // a clock to set right, never "the wrong zone", and every upload still matched
      const yearBehind = join(ws.root, 'sftp-year-behind.log');
      const thisYear = new Date().getFullYear();
      const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
      let shiftMs = 0;
      const lines = (await readFile(server.logFile, 'utf8')).split('\n').map((line) => {
        const m = /^(\w{3}) +(\d+) (\d\d:\d\d:\d\d) (.*)$/.exec(line);
        if (!m) return line;
        const [month, day] = [MONTHS.indexOf(m[1]!), Number(m[2])];
        shiftMs = Date.UTC(thisYear - 1, month, day) - Date.UTC(thisYear, month, day);
        const date = `${thisYear - 1}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
        return `${date}T${m[3]}.000000${zoneOff(0)} ${m[4]}`;
      });
      await writeFile(yearBehind, lines.join('\n'));
      const yearArgs = ['audit', '--intake', intake, '--ledger', ws.ledger, ...access, '--transfer-log', yearBehind];
      const year = JSON.parse((await ws.cli([...yearArgs, '--json'])).stdout) as AuditJson;
      expect(outcomes(year)).toEqual(expected);
      // the log's times are whole seconds, the ledger's milliseconds: the offset found is the year, or a second past it
      expect(year.transfer_log.clock_offsets).toEqual([expect.objectContaining({ kind: 'skew', moves: 4, of: 4 })]);
      expect([shiftMs / 1000, shiftMs / 1000 - 1]).toContain(year.transfer_log.clock_offsets[0]!.offset_seconds);
      const yearText = await ws.cli(yearArgs);
      expect(yearText.status).toBe(1);
      expect(yearText.stdout).toMatch(new RegExp(`the transfer log runs ${-shiftMs / 86_400_000} d( 1 s)? behind the ledger`));
      expect(yearText.stdout).toContain(
        "the SFTP server's clock and this host's disagree; a clock this far off is set right, not allowed for",
      );
      expect(yearText.stdout).not.toMatch(/wrong zone|--transfer-log-time-zone/);

      // an evidence pack's audit names the uploads of its period alone
      const pack = async (day: string) => {
        const out = join(ws.root, `evidence-${day}`);
        const r = await ws.cli(['report', 'evidence', '--from', day, '--to', day, '--out', out, ...auditArgs.slice(1)]);
        expect(r.status, r.stderr).toBe(0);
        return JSON.parse(await readFile(join(out, 'audit.json'), 'utf8')) as AuditJson;
      };
      const today = new Date().toISOString().slice(0, 10);
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      expect(outcomes(await pack(today))).toEqual(expected);
      expect((await pack(yesterday)).transfer_log.arrivals).toEqual([]);
    } finally {
      await own.close();
    }
  });
});
