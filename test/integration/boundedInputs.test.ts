import { createWriteStream } from 'node:fs';
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

// Inputs past any sensible size, made here: each gets a named answer and its exit status, never a crash.

const db = sharedFinanceDatabase();

/** A stack trace in what a command printed: an unexpected error, which every bound here is meant to prevent. */
const STACK_TRACE = /^\s+at /m;

const xferlog = (path: string) => `Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 ${path} b _ i r adyen sftp 0 * c`;

interface LogReport {
  file: string;
  format: string;
  lines: number;
  transfer_lines: number;
  over_long: number;
  over_long_quoted: { line: number; bytes: number }[];
  stopped: { line: number; reason: string } | null;
}

interface AuditDoc {
  discrepancies: number;
  checks: { name: string; discrepancies: { kind: string; file: string | null; message: string }[] }[];
  transfer_log: { logs: LogReport[]; outside_intakes: { path: string }[]; unread: { file: string; line: number }[] };
}

async function audit(ws: Workspace, logs: string): Promise<{ status: number | null; stderr: string; doc: AuditDoc }> {
  const r = await ws.cli([
    'audit',
    '--intake',
    ws.intake,
    '--ledger',
    ws.ledger,
    '--transfer-log',
    logs,
    '--transfer-log-time-zone',
    'UTC',
    '--json',
  ]);
  expect(r.stderr).not.toMatch(STACK_TRACE);
  return { status: r.status, stderr: r.stderr, doc: JSON.parse(r.stdout) as AuditDoc };
}

describe('the transfer log audit within bounds', () => {
  it('a gzip bomb in a rotated log (2 MB on disk, 2 GiB without a newline) and a line of 300 KB: both named discrepancies (exit 1), the lines around them read', async () => {
    const ws = await Workspace.create(db.url);
    const dir = await mkdtemp(join(tmpdir(), 'settle-bomb-'));
    // one upload, then 128 gzip members of 16 MiB of one letter each: zlib reads them all, as it does a rotated log's
    const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, 'A'), { level: 9 });
    const rotated = join(dir, 'xferlog.1.gz');
    await writeFile(
      rotated,
      Buffer.concat([gzipSync(`${xferlog('/elsewhere/before-bomb.csv')}\n`), ...Array.from({ length: 128 }, () => member)]),
    );
    expect((await stat(rotated)).size).toBeLessThan(3 * 1024 * 1024);
    const long = xferlog(`/elsewhere/${'x'.repeat(300_000)}.csv`);
    const current = join(dir, 'xferlog');
    await writeFile(current, [xferlog('/elsewhere/one.csv'), long, xferlog('/elsewhere/two.csv')].map((l) => `${l}\n`).join(''));

    const { status, stderr, doc } = await audit(ws, join(dir, 'xferlog*'));
    expect(stderr).toBe('');
    expect(status).toBe(1);
    const unread = doc.checks.find((c) => c.name === 'every line of the transfer log was read')!.discrepancies;
    expect(unread.map((d) => [d.kind, d.file])).toEqual([
      ['transfer_log_unread', rotated],
      ['transfer_log_unread', current],
    ]);
    expect(doc.discrepancies).toBe(2);
    const [bombed, withLong] = doc.transfer_log.logs;
    expect(bombed).toMatchObject({ file: rotated, format: 'xferlog', lines: 1, transfer_lines: 1, over_long: 0 });
    expect(bombed!.stopped!.line).toBe(2);
    expect(bombed!.stopped!.reason).toMatch(/^it inflates more than 500:1 \(\d+ bytes from \d+ compressed\): a decompression bomb$/);
    expect(withLong).toMatchObject({ file: current, lines: 3, transfer_lines: 2, over_long: 1, stopped: null });
    expect(withLong!.over_long_quoted).toEqual([{ line: 2, bytes: Buffer.byteLength(long) }]);
    expect(doc.transfer_log.unread.map((u) => [u.file, u.line])).toEqual([
      [rotated, 2],
      [current, 2],
    ]);
    // what could be read was: the upload before the bomb, and the two around the long line
    expect(doc.transfer_log.outside_intakes.map((s) => s.path)).toEqual([
      '/elsewhere/before-bomb.csv',
      '/elsewhere/one.csv',
      '/elsewhere/two.csv',
    ]);
  });

  it('an xferlog of 200,000 uploads outside every intake: each listed, the audit clean (exit 0)', async () => {
    const ws = await Workspace.create(db.url);
    const log = join(await mkdtemp(join(tmpdir(), 'settle-wide-log-')), 'xferlog');
    const out = createWriteStream(log);
    for (let i = 0; i < 200_000; i++) out.write(`${xferlog(`/elsewhere/f${i}.csv`)}\n`);
    out.end();
    await finished(out);

    const { status, stderr, doc } = await audit(ws, log);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(doc.discrepancies).toBe(0);
    expect(doc.transfer_log.outside_intakes).toHaveLength(200_000);
    expect(doc.transfer_log.outside_intakes.at(-1)!.path).toBe('/elsewhere/f199999.csv');
  });
});

/** The default layout's columns, then `extra` more (`c1`, `c2`, …), and two rows. */
function wideSettlement(extra: number, ids: [string, string]): string {
  const header = [
    'settlement_date',
    'transaction_id',
    'merchant_id',
    'card_brand',
    'transaction_type',
    'gross_amount',
    'fee_amount',
    'net_amount',
    'currency',
  ];
  for (let i = 1; i <= extra; i++) header.push(`c${i}`);
  const row = (id: string) => [
    '2026-03-14',
    id,
    'm1',
    'VISA',
    'sale',
    '10.00',
    '0.20',
    '9.80',
    'EUR',
    ...Array.from({ length: extra }, (_, i) => String(i % 10)),
  ];
  return `${[header, row(ids[0]), row(ids[1])].map((r) => r.join(',')).join('\n')}\n`;
}

describe('a header of 100,000 columns', () => {
  it('suggest says why no layout is drafted (exit 1); check and run read it by a layout of its own columns; a layout of 100,000 columns is refused (exit 2), the file left where it is', async () => {
    const ws = await Workspace.create(db.url);
    const dir = await mkdtemp(join(tmpdir(), 'settle-wide-csv-'));
    const bare = join(dir, 'export.csv');
    const header = Array.from({ length: 100_000 }, (_, i) => `c${i + 1}`);
    await writeFile(bare, `${header.join(',')}\n${header.map((_, i) => String(i % 10)).join(',')}\n`);

    const suggested = await ws.cli(['layout', 'suggest', bare, '--json']);
    expect(suggested.stderr).toBe('');
    expect(suggested.status).toBe(1);
    const [file] = (JSON.parse(suggested.stdout) as { files: { preset: string | null; why: string; config: string }[] }).files;
    expect(file).toMatchObject({ preset: null, config: '{}' });
    expect(file!.why).toBe(
      'its records are 100000 fields wide: more columns than a table holds (1598), so no layout loads it and none is drafted',
    );
    const text = await ws.cli(['layout', 'suggest', bare]);
    expect(text.stderr).not.toMatch(STACK_TRACE);
    expect(text.status).toBe(1);

    // the default layout's columns among 100,000 others: read by them, the rest ignored
    const wide = await ws.put('settle_wide_20260314.csv', wideSettlement(100_000, ['WIDE-1', 'WIDE-2']));
    const fits = await ws.cli(['layout', 'suggest', wide, '--json']);
    expect(fits.status).toBe(0);
    expect((JSON.parse(fits.stdout) as { files: { preset: string }[] }).files[0]!.preset).toBe('default');
    const checked = await ws.cli(['check', wide]);
    expect(checked.stdout.trim()).toBe(`${wide}: ok, 2 rows`);
    expect(checked.status).toBe(0);
    const ran = await ws.run();
    expect(ran.stderr).not.toMatch(STACK_TRACE);
    expect(ran.status).toBe(0);
    const loaded = await db.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'WIDE-%'`,
    );
    expect(loaded.rows[0]!.n).toBe(2);
    expect(await ws.files('archive')).toEqual(['settle_wide_20260314.csv']);

    // a layout as wide as the file: more columns than a table holds
    const config = join(dir, 'wide.json');
    const columns = header.map((h) => ({ name: h, type: 'integer' }));
    await writeFile(config, JSON.stringify({ layout: { table: 'wide_rows', columns, naturalKey: 'c1' } }));
    const refused = await ws.cli(['check', '--config', config, bare]);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('"columns" has 100000: a table holds at most 1598');
    await ws.put('settle_wide_20260315.csv', wideSettlement(100_000, ['WIDE-3', 'WIDE-4']));
    const notRun = await ws.run(['--config', config]);
    expect(notRun.status).toBe(2);
    expect(notRun.stderr).toContain('"columns" has 100000: a table holds at most 1598');
    expect(notRun.stderr).not.toMatch(STACK_TRACE);
    expect(await ws.files('intake')).toEqual(['settle_wide_20260315.csv']);
    expect(ws.ledgerFile('settle_wide_20260315.csv')).toBeUndefined();
  });
});
