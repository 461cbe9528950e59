import { createWriteStream } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

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
});
