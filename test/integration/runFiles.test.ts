import { chmod, chown, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished, startCli } from '../support/cli.js';
import { financeDatabase, rowsWithPrefix, Workspace, type FinanceDatabase } from '../support/workspace.js';

/**
 * The metrics and summary files are written after a run's last partner: one the service user
 * cannot write is refused at the run's start (exit 2, nothing loaded, nothing moved, no run
 * recorded), by the same check doctor makes (pipeline/runPreparation.ts), not found after a
 * night's loads. `watch` refuses it at its start too.
 */

const isRoot = process.getuid?.() === 0;
const nobody = { uid: 65534, gid: 65534 };

describe.skipIf(!isRoot)('a metrics or summary file the run cannot write is refused at its start', () => {
  let db: FinanceDatabase;
  beforeAll(async () => {
    db = await financeDatabase();
  });
  afterAll(async () => {
    await db.close();
  });

  /** A workspace the service user (nobody) owns, a file in its intake, and a folder in it only root may write in. */
  async function night(prefix: string) {
    const ws = await Workspace.create(db.url);
    const locked = join(ws.root, 'locked');
    await mkdir(locked, { mode: 0o755 });
    for (const path of [ws.root, ws.intake, ws.ledger]) await chown(path, nobody.uid, nobody.gid);
    await chmod(ws.root, 0o755);
    const name = 'settle_20261205_a01.csv';
    await ws.put(name, sampleSettlement({ date: '2026-12-05', rows: 3, idPrefix: prefix }).text);
    await chown(join(ws.intake, name), nobody.uid, nobody.gid);
    const asService = (command: 'run' | 'watch', extra: string[]) =>
      finished(
        startCli(
          [command, '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--staging', ws.root, ...extra],
          { DATABASE_URL: db.url, HOME: ws.root },
          { cwd: ws.root, as: nobody },
        ),
      );
    return { ws, locked, name, asService };
  }

  const cases: [string, (locked: string, root: string) => string[], RegExp][] = [
    [
      'a metrics file in a folder the user may not write',
      (locked) => ['--metrics-file', join(locked, 'settle.prom')],
      /^settle-ingest: metrics file .*locked\/settle\.prom cannot be written: the user nobody may not make files in .*locked .*chown nobody .*locked, or name another path \(--metrics-file, SETTLE_METRICS_FILE\)$/,
    ],
    [
      'a metrics file in a folder that does not exist',
      (_locked, root) => ['--metrics-file', join(root, 'textfile', 'settle.prom')],
      /^settle-ingest: metrics file .*textfile\/settle\.prom cannot be written: its folder .*textfile does not exist \(mkdir -p .*textfile\) \(--metrics-file, SETTLE_METRICS_FILE\)$/,
    ],
    [
      'a summary file in a folder the user may not write',
      (locked) => ['--summary-file', join(locked, 'summary.log')],
      /^settle-ingest: summary file .*locked\/summary\.log cannot be written: the user nobody may not make files in .*locked .*\(--summary-file, SETTLE_SUMMARY_FILE\)$/,
    ],
    [
      'a summary file in a folder that does not exist, under one the user may not write',
      (locked) => ['--summary-file', join(locked, 'summaries', 'summary.log')],
      /^settle-ingest: summary file .*locked\/summaries\/summary\.log cannot be written: the user nobody may not make files in .*locked .*\(--summary-file, SETTLE_SUMMARY_FILE\)$/,
    ],
  ];
  for (const [what, args, message] of cases) {
    it(`run: ${what}: exit 2, no row loaded, the file still in the intake, no run recorded`, async () => {
      const { ws, locked, name, asService } = await night('RFR');
      const r = await asService('run', args(locked, ws.root));
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr.trim()).toMatch(message);
      expect(await rowsWithPrefix(db, 'RFR')).toBe(0);
      expect(await ws.files('intake')).toEqual([name]);
      expect(await ws.files('archive')).toEqual([]);
      expect(ws.query('SELECT run_id FROM runs')).toEqual([]);
      expect(await readdir(locked)).toEqual([]);
    });
  }

  it('watch: a metrics file in a folder the user may not write is refused at its start (exit 2), nothing loaded', async () => {
    const { ws, locked, name, asService } = await night('RFW');
    const r = await asService('watch', ['--metrics-file', join(locked, 'settle.prom')]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/metrics file .*locked\/settle\.prom cannot be written: .*\(--metrics-file, SETTLE_METRICS_FILE\)/);
    expect(await rowsWithPrefix(db, 'RFW')).toBe(0);
    expect(await ws.files('intake')).toEqual([name]);
    expect(ws.query('SELECT run_id FROM runs')).toEqual([]);
  });

  it('a summary file in a folder not there yet, where the user may make it: the run makes it and writes the summary', async () => {
    const { ws, name, asService } = await night('RFS');
    const summary = join(ws.root, 'summaries', 'summary.log');
    const r = await asService('run', ['--summary-file', summary, '--metrics-file', join(ws.root, 'settle.prom')]);
    expect(r.status, r.stderr).toBe(0);
    expect(await rowsWithPrefix(db, 'RFS')).toBe(3);
    expect(await ws.files('archive')).toEqual([name]);
    expect(await readFile(summary, 'utf8')).toMatch(/^\S+Z run \S+ done: loaded=1/);
    expect(await readFile(join(ws.root, 'settle.prom'), 'utf8')).toMatch(/settle_ingest_/);
  });
});
