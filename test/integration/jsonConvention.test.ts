import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import type { CliResult } from '../support/cli.js';
import { financeDatabase, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/** Every key at any depth, except inside an event's free-form `details` (which the README describes as a whole). */
function keysOf(value: unknown, into: Set<string>, all: Set<string>): void {
  if (Array.isArray(value)) value.forEach((v) => keysOf(v, into, all));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      all.add(k);
      into.add(k);
      keysOf(v, k === 'details' ? new Set() : into, all);
    }
  }
}

describe('--json', () => {
  it('and the JSON log follow one convention: snake_case keys at every depth, ISO 8601 times', async () => {
    const own = await financeDatabase(); // its loads must not show in the other test's audit
    const ws = await Workspace.create(own.url);
    const logFile = join(ws.root, 'run.log');
    const a01 = sampleSettlement({ date: '2026-11-21', rows: 3, idPrefix: 'LOGC' }).text;
    await ws.put('settle_20261121_a01.csv', a01);
    await ws.put('settle_20261121_a02.csv', a01);
    const r = await ws.cli([...ws.runArgs(), '--log-file', logFile, '--json']);
    const run = JSON.parse(r.stdout) as { files: { name: string; outcome: string }[] };
    expect(run.files.map((f) => f.outcome).sort()).toEqual(['loaded', 'skipped']);
    const lines = (await readFile(logFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.event)).toEqual(expect.arrayContaining(['run-started', 'loaded', 'skipped', 'run-finished']));
    const keys = new Set<string>();
    keysOf(lines, new Set(), keys);
    expect([...keys].filter((k) => !SNAKE.test(k))).toEqual([]);
    for (const l of lines) expect(l.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(lines.find((l) => l.event === 'skipped')).toMatchObject({ duplicate_of: { name: 'settle_20261121_a01.csv', match: 'bytes' } });
    await own.close();
  });

  it('is one object with "version": 1 and snake_case keys only, for every command, and docs/JSON.md names every key', async () => {
    const ws = await Workspace.create(db.url, { migrate: false });
    const outputs = new Map<string, CliResult>();
    const json = async (label: string, args: string[], extra: { ledger?: string } = {}) => {
      const r = await ws.cli([...args, '--ledger', extra.ledger ?? ws.ledger, '--json']);
      outputs.set(label, r);
      return r;
    };

    expect((await json('migrate', ['migrate'])).status).toBe(0);
    const a01 = sampleSettlement({ date: '2026-11-20', rows: 6, idPrefix: 'JSON' }).text;
    const bad = sampleSettlement({ date: '2026-11-20', rows: 3, idPrefix: 'JSONB' }).text.replace(/,(-?\d+\.\d\d),/, ',x,');
    await ws.put('settle_20261120_a01.csv', a01);
    await ws.put('settle_20261120_b01.csv', bad);
    await ws.put('settle_20261120_c01.csv.part', 'half');
    await ws.put('notes.txt', 'not ours');
    await json('run', ['run', '--intake', ws.intake, '--stable-for', '0']);
    await ws.put('settle_20261120_a02.csv', a01);
    // a waiting limit of 0 runs puts the half-uploaded file on the waiting-too-long list at once
    await json('run (a skip, a file waiting too long)', ['run', '--intake', ws.intake, '--stable-for', '0', '--max-waiting-runs', '0']);
    const reprocess = ['run', '--intake', ws.intake, '--reprocess', '--reason', 'json check', '--files', 'settle_20261120_a01.csv'];
    await json('run --reprocess --dry-run', [...reprocess, '--dry-run']);
    await json('run --reprocess', reprocess);
    await json('report runs', ['report', 'runs']);
    await json('report run', ['report', 'run']);
    await json('report skips', ['report', 'skips']);
    await json('history', ['history', 'settle_20261120_a02.csv']);
    await writeFile(join(ws.archive, 'settle_20261119_z01.csv'), 'put here by hand\n');
    expect((await json('audit', ['audit', '--intake', ws.intake])).status).toBe(1);
    // the server's uploads as a CSV export: the one loaded, and one no run ever saw
    const uploadedAt = new Date(Date.now() - 3600_000).toISOString();
    const transferLog = join(ws.root, 'uploads.csv');
    await writeFile(
      transferLog,
      `time,path,size\n${uploadedAt},${join(ws.intake, 'settle_20261120_a01.csv')},${Buffer.byteLength(a01)}\n${uploadedAt},${join(ws.intake, 'settle_20261120_x01.csv')},10\nnot a line\n`,
    );
    expect((await json('audit --transfer-log', ['audit', '--intake', ws.intake, '--transfer-log', transferLog])).status).toBe(1);
    const today = new Date().toISOString().slice(0, 10);
    const evidence = ['report', 'evidence', '--from', today, '--to', today, '--out', join(ws.root, 'evidence'), '--intake', ws.intake];
    expect((await json('report evidence', [...evidence, '--transfer-log', transferLog])).status).toBe(1);
    await copyFile(join(ws.archive, 'settle_20261120_a01.csv'), join(ws.archive, 'settle_20261120_a01_copy.csv'));
    const adopter = await Workspace.create(db.url);
    await json('adopt', ['adopt', '--archive', ws.archive], { ledger: adopter.ledger });
    const checkFiles = [join(ws.archive, 'settle_20261120_a01.csv'), join(ws.rejected, 'settle_20261120_b01.csv')];
    outputs.set('check', await ws.cli(['check', ...checkFiles, '--json'])); // no ledger: it reads files only
    const draft = join(ws.root, 'remittance.csv');
    await writeFile(draft, 'Remittance ID;Amount\nRM-1;1,50\nRM-2;2,00\n');
    outputs.set('layout suggest', await ws.cli(['layout', 'suggest', checkFiles[0]!, draft, '--json']));
    await json('status', ['status']);
    await json('status (unknown)', ['status'], { ledger: join(ws.root, 'missing.sqlite') });
    // an error is a JSON object too, on stdout, with the status the process exits with
    const noLedger = await json('run (no ledger: an error)', ['run', '--intake', ws.intake], { ledger: join(ws.root, 'missing.sqlite') });
    const badFlag = await json('report runs --lats (bad usage: an error)', ['report', 'runs', '--lats', '3']);

    const readme = await readFile(new URL('../../docs/JSON.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## JSON output'), readme.indexOf('\n## ', readme.indexOf('## JSON output') + 1));
    expect(section.length).toBeGreaterThan(100);
    for (const [label, r] of outputs) {
      expect(r.stdout.trim().split('\n'), `${label}: one line`).toHaveLength(1);
      const doc = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(Object.keys(doc)[0], label).toBe('version');
      expect(doc.version, label).toBe(1);
      const documented = new Set<string>();
      const all = new Set<string>();
      keysOf(doc, documented, all);
      expect(
        [...all].filter((k) => !SNAKE.test(k)),
        `${label}: keys not in snake_case`,
      ).toEqual([]);
      expect(
        [...documented].filter((k) => !section.includes(`\`${k}\``)),
        `${label}: keys docs/JSON.md does not name`,
      ).toEqual([]);
    }
    for (const [r, words] of [
      [noLedger, 'does not exist: run `settle-ingest migrate` first'],
      [badFlag, "unknown option '--lats'"],
    ] as const) {
      expect(r.status).toBe(2);
      expect(JSON.parse(r.stdout)).toEqual({ version: 1, error: { message: expect.stringContaining(words), exit_status: 2 } });
      expect(r.stderr).toContain(words); // the one line for a person stays where it was
    }
    const waiting = JSON.parse(outputs.get('run (a skip, a file waiting too long)')!.stdout);
    expect(waiting).toMatchObject({ skipped: 1, exit_status: 1 });
    expect(waiting.waiting_too_long).toEqual([
      { name: 'settle_20261120_c01.csv.part', outcome: 'not_ready', runs: 2, since: expect.any(String) },
      // a name that is not ours, left there run after run, is named too (an --ignore would silence it)
      { name: 'notes.txt', outcome: 'ignored', runs: 2, since: expect.any(String) },
    ]);
    // the structured audit discrepancy
    const audit = JSON.parse(outputs.get('audit')!.stdout) as { checks: { discrepancies: Record<string, unknown>[] }[] };
    expect(audit.checks.flatMap((c) => c.discrepancies)).toEqual([
      {
        kind: 'archived_file_unknown',
        partner: 'default',
        file: 'settle_20261119_z01.csv',
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        run: null,
        message: expect.stringContaining('settle_20261119_z01.csv'),
      },
    ]);
  });
});
