import { createWriteStream } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';
import { name, writeLedger, writeLog } from '../../bench/scaling/transferLogFixture.mjs';

// What a year's volume needs of memory, held by a heap limit on the CLI's process (NODE_OPTIONS'
// --max-old-space-size): a bound that fails as "heap out of memory" (exit 134), with no clock in it.

const db = sharedFinanceDatabase();

/** A file of `rows` rows in the default layout (the demo's rows), whose last row repeats line 2's natural key. */
async function settlementWithRepeat(path: string, rows: number): Promise<string> {
  const out = createWriteStream(path);
  let first = '';
  for (let done = 0, block = 0; done < rows - 1; done += 200_000, block++) {
    const text = sampleSettlement({ date: '2026-09-01', rows: Math.min(200_000, rows - 1 - done), idPrefix: `M${block}` }).text;
    const body = text.slice(text.indexOf('\n') + 1);
    if (block === 0) first = body.slice(0, body.indexOf('\n') + 1);
    if (!out.write(block === 0 ? text : body)) await once(out, 'drain');
  }
  out.end(first);
  await finished(out);
  return first.split(',')[1]!;
}

describe('a year of volume in bounded memory', () => {
  it('check of a 1,000,000-row file in a 32 MiB heap names the repeated key and both its lines (exit 1); its keys were a 100 MiB Map', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    const file = join(await mkdtemp(join(tmpdir(), 'settle-million-')), 'settle_20260901_million.csv');
    const id = await settlementWithRepeat(file, 1_000_000);
    const r = await ws.cli(['check', file], { NODE_OPTIONS: '--max-old-space-size=32' });
    expect(r.stderr).not.toMatch(/heap out of memory/);
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toContain(`line 1000001: "${id}" repeats line 2 of this file`);
  });

  it('the transfer log audit of 150,000 uploads into the intake (none in the ledger yet) names each as waiting (exit 1), in a 512 MiB heap', async () => {
    const ws = await Workspace.create(db.url);
    const log = join(await mkdtemp(join(tmpdir(), 'settle-year-log-')), 'uploads.csv');
    const out = createWriteStream(log);
    out.write('time,path,size\n');
    for (let i = 0; i < 150_000; i++) {
      const at = new Date(Date.parse('2026-01-01T00:00:00Z') + i * 60_000).toISOString();
      if (!out.write(`${at},${ws.intake}/settle_${String(i).padStart(6, '0')}.csv,${1000 + (i % 997)}\n`)) await once(out, 'drain');
    }
    out.end();
    await finished(out);
    // a list of 150,000 uploads spread into one call's arguments overflowed the stack (RangeError) before
    const r = await ws.cli(
      ['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--transfer-log', log, '--transfer-log-time-zone', 'UTC', '--json'],
      { NODE_OPTIONS: '--max-old-space-size=512' },
    );
    expect(r.stderr).not.toMatch(/heap out of memory|RangeError/);
    expect(r.status).toBe(1);
    const doc = JSON.parse(r.stdout) as { transfer_log: { arrivals: { name: string; no_record: string }[]; unmatched: number } };
    expect(doc.transfer_log.arrivals).toHaveLength(150_000);
    expect(doc.transfer_log.unmatched).toBe(150_000);
    expect(new Set(doc.transfer_log.arrivals.map((a) => a.no_record))).toEqual(new Set(['waiting']));
    expect(doc.transfer_log.arrivals.at(-1)!.name).toBe('settle_149999.csv');
  });

  describe('the audit of uploads the ledger accounts, each written out as it is accounted', () => {
    // 200,000 uploads, each recorded `ignored` by a run (a run per 1,000): a ledger of no loaded
    // file, so the whole command is the transfer log's audit. The audit kept every accounted upload
    // (and the log's events, and each one's ledger record) until it printed: about 2 KiB an upload,
    // 400 MiB here, out of a 192 MiB heap. Each is written out as it is accounted now.
    const uploads = 200_000;
    let ws: Workspace;
    let log: string;
    const audit = (extra: string[]) =>
      ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--transfer-log', log, '--transfer-log-time-zone', 'UTC', ...extra], {
        NODE_OPTIONS: '--max-old-space-size=192',
      });

    it("as JSON: the one document as before, every upload in transfer_log.arrivals in the log's order, clean (exit 0), in a 192 MiB heap", async () => {
      ws = await Workspace.create(db.url);
      log = join(await mkdtemp(join(tmpdir(), 'settle-year-log-')), 'uploads.csv');
      await writeLog(log, uploads, ws.intake);
      await writeLedger(ws.ledger, uploads, { outcome: 'ignored' });
      const r = await audit(['--json']);
      expect(r.stderr).not.toMatch(/heap out of memory/);
      expect(r.status).toBe(0);
      const doc = JSON.parse(r.stdout) as {
        version: number;
        discrepancies: number;
        transfer_log: {
          arrivals: { name: string; outcome: string; run: string; unmatched: boolean }[];
          counts: Record<string, number>;
          unmatched: number;
        };
      };
      expect(doc.version).toBe(1);
      expect(doc.discrepancies).toBe(0);
      expect(doc.transfer_log.counts).toEqual({ ignored: uploads });
      expect(doc.transfer_log.unmatched).toBe(0);
      expect(doc.transfer_log.arrivals).toHaveLength(uploads);
      expect(doc.transfer_log.arrivals.every((a, i) => a.name === name(i) && a.outcome === 'ignored' && !a.unmatched)).toBe(true);
      expect(doc.transfer_log.arrivals.at(-1)!.run).toBe(`r-${(uploads - 1 - ((uploads - 1) % 1000)) / 1000}`);
    });

    it('as text: the counts, then each upload\'s line, then "audit clean" last (exit 0), in a 192 MiB heap', async () => {
      const r = await audit([]);
      expect(r.stderr).not.toMatch(/heap out of memory/);
      expect(r.status).toBe(0);
      const lines = r.stdout.trimEnd().split('\n');
      const counts = lines.findIndex((line) => line.startsWith('transfer log: '));
      expect(lines[counts]).toBe(`transfer log: ${uploads} uploads into the intakes: ignored=${uploads}; unmatched=0`);
      const listed = lines.slice(counts + 1, -1);
      expect(listed).toHaveLength(uploads);
      expect(listed[0]).toMatch(new RegExp(`^  default: ${name(0)} \\(\\d+ bytes, 2026-01-01 00:00:00 UTC\\): ignored by run r-0$`));
      expect(lines.at(-1)).toMatch(/^audit clean: \d+ checks, 0 discrepancies$/);
    });

    it('killed while it writes its answer, it leaves no verdict: the text never says "clean", the JSON does not parse', async () => {
      // audit-output@3: killed as its third batch of 64 KiB is about to go out, two of them written
      const text = await ws.cli(
        ['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--transfer-log', log, '--transfer-log-time-zone', 'UTC'],
        { SETTLE_TEST_FAULT: 'audit-output@3' },
      );
      expect(text.signal).toBe('SIGKILL');
      expect(text.stdout.length).toBeGreaterThan(64 * 1024);
      expect(text.stdout).toContain('transfer log: 200000 uploads into the intakes');
      expect(text.stdout).not.toMatch(/^audit (clean|found problems)/m);
      const json = await ws.cli(
        ['audit', '--intake', ws.intake, '--ledger', ws.ledger, '--transfer-log', log, '--transfer-log-time-zone', 'UTC', '--json'],
        { SETTLE_TEST_FAULT: 'audit-output@3' },
      );
      expect(json.signal).toBe('SIGKILL');
      expect(json.stdout.length).toBeGreaterThan(64 * 1024);
      expect(() => JSON.parse(json.stdout) as unknown).toThrow();
    });
  });
});
