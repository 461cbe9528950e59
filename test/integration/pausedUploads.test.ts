import { appendFile, utimes } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { remoteIntake } from '../support/remoteIntake.js';
import { TestSshd } from '../support/sshd.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** A sample file cut the way a throttled upload pauses: inside its last line's third field, no line end. */
function pausedAt(rows: number, prefix: string, date: string) {
  const whole = sampleSettlement({ date, rows, idPrefix: prefix }).text;
  const lastLineStart = whole.lastIndexOf('\n', whole.length - 2) + 1;
  const cutAt = lastLineStart + whole.slice(lastLineStart).split(',').slice(0, 2).join(',').length + 3;
  // header + rows lines, the last one cut: its line is rows + 1
  return { whole, head: whole.slice(0, cutAt), rest: whole.slice(cutAt), line: rows + 1 };
}

/** The not-ready reasons the ledger has for a name, oldest first. */
const notReadyReasons = (ws: Workspace, name: string) =>
  ws
    .events()
    .filter((e) => e.name === name && e.event === 'not_ready')
    .map((e) => String(e.details.reason));

describe('a paused upload is not ready', () => {
  it('a file cut mid-line waits in the intake, unclaimed, and loads whole once the partner finishes it', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261110_a01.csv';
    const upload = pausedAt(40, 'PAUSE', '2026-11-10');
    const path = await ws.put(name, upload.head);

    const paused = await ws.run(['--json']);
    expect(paused.status, paused.stderr).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ not_ready: 1, rejected: 0, loaded: 0, exit_status: 0 });
    expect(await ws.files('intake')).toEqual([name]);
    expect(await ws.files('rejected')).toEqual([]);
    expect(ws.ledgerFile(name)).toBeUndefined(); // never claimed, never rejected
    expect(ws.events().filter((e) => e.name === name && e.event !== 'not_ready')).toEqual([]);
    expect(notReadyReasons(ws, name)).toEqual([expect.stringContaining(`the upload stopped mid-line ${upload.line} (3 of 9 fields`)]);

    // the partner's connection resumes and writes the rest
    await appendFile(path, upload.rest);
    const finished = await ws.run();
    expect(finished.status, finished.stderr).toBe(0);
    expect(parseSummary(finished.stdout)).toMatchObject({ loaded: 1, not_ready: 0, rejected: 0, rows: 40 });
    expect(await rowsWithPrefix(db, 'PAUSE')).toBe(40);
    expect(await ws.files('archive')).toEqual([name]);
  });

  it('a file cut mid-line that never changes is rejected as incomplete after --max-waiting-runs runs, and moved to rejected/', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261111_a01.csv';
    const upload = pausedAt(12, 'NEVER', '2026-11-11');
    await ws.put(name, upload.head);

    for (const run of [1, 2]) {
      const waiting = await ws.run(['--max-waiting-runs', '2']);
      expect(waiting.status, `run ${run}: ${waiting.stderr}`).toBe(0);
      expect(parseSummary(waiting.stdout)).toMatchObject({ not_ready: 1, rejected: 0 });
      expect(await ws.files('intake')).toEqual([name]);
      expect(ws.ledgerFile(name)).toBeUndefined();
    }
    const given = await ws.run(['--max-waiting-runs', '2']);
    expect(given.status).toBe(1);
    expect(parseSummary(given.stdout)).toMatchObject({ not_ready: 0, rejected: 1, loaded: 0 });
    expect(await ws.files('intake')).toEqual([]);
    expect(await ws.files('rejected')).toEqual([name]);
    expect(ws.ledgerFile(name)).toMatchObject({ state: 'rejected' });
    expect(ws.ledgerFile(name)!.reason).toMatch(new RegExp(`^the upload stopped mid-line ${upload.line} and has not changed for 2 runs`));
    expect(await rowsWithPrefix(db, 'NEVER')).toBe(0);
  });

  it('counts only runs that saw it exactly so: an upload that grew, still cut, starts its wait again', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261112_a01.csv';
    const upload = pausedAt(8, 'GROW', '2026-11-12');
    const path = await ws.put(name, upload.head.slice(0, -1));
    expect(parseSummary((await ws.run(['--max-waiting-runs', '1'])).stdout)).toMatchObject({ not_ready: 1 });

    // one more byte arrived (the same line, still cut): a new shape, so the wait starts over
    await appendFile(path, upload.head.slice(-1));
    expect(parseSummary((await ws.run(['--max-waiting-runs', '1'])).stdout)).toMatchObject({ not_ready: 1, rejected: 0 });
    // the same size with another mtime is another shape too
    const later = new Date(Date.now() - 60_000);
    await utimes(path, later, later);
    expect(parseSummary((await ws.run(['--max-waiting-runs', '1'])).stdout)).toMatchObject({ not_ready: 1, rejected: 0 });
    expect(await ws.files('intake')).toEqual([name]);

    const given = await ws.run(['--max-waiting-runs', '1']);
    expect(parseSummary(given.stdout)).toMatchObject({ rejected: 1 });
    expect(ws.ledgerFile(name)!.reason).toMatch(/and has not changed for 1 runs/);
  });

  it('a last line with all its fields but no final newline is whole: it loads at once', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261113_a01.csv';
    await ws.put(name, sampleSettlement({ date: '2026-11-13', rows: 6, idPrefix: 'NOEOL' }).text.trimEnd());
    const r = await ws.run();
    expect(r.status, r.stderr).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, not_ready: 0, rows: 6 });
    expect(await rowsWithPrefix(db, 'NOEOL')).toBe(6);
  });

  it('a gzip delivery cut short is judged by its own framing: rejected as an unreadable gzip stream, as before', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261114_a01.csv.gz';
    const gz = gzipSync(sampleSettlement({ date: '2026-11-14', rows: 50, idPrefix: 'GZCUT' }).text);
    await ws.put(name, gz.subarray(0, Math.floor(gz.length / 2)));
    const r = await ws.run(['--pattern', 'settle_*.csv.gz']);
    expect(parseSummary(r.stdout)).toMatchObject({ rejected: 1, not_ready: 0 });
    expect(await ws.files('rejected')).toEqual([name]);
    expect(ws.ledgerFile(name)!.reason).toMatch(/not a readable gzip stream/);
  });

  describe('on an SFTP intake (a real OpenSSH server)', () => {
    let sshd: TestSshd;
    beforeAll(async () => {
      sshd = await TestSshd.start();
    });
    afterAll(async () => sshd?.destroy());

    it('a file cut mid-line stays on the server, unclaimed, and loads once the partner finishes it', async () => {
      const r = await remoteIntake(sshd, db.url);
      const name = 'settle_20261115_a01.csv';
      const upload = pausedAt(30, 'SPAUSE', '2026-11-15');
      await r.put(name, upload.head);

      const paused = await r.run();
      expect(paused.status, paused.stderr).toBe(0);
      expect(parseSummary(paused.stdout)).toMatchObject({ not_ready: 1, rejected: 0, loaded: 0 });
      expect(await r.files('intake')).toEqual([name]);
      expect(await r.files('rejected')).toEqual([]);
      expect(r.ws.ledgerFile(name)).toBeUndefined();

      await appendFile(join(r.intake, name), upload.rest);
      const finished = await r.run();
      expect(finished.status, finished.stderr).toBe(0);
      expect(parseSummary(finished.stdout)).toMatchObject({ loaded: 1, rows: 30 });
      expect(await r.files('archive')).toEqual([name]);
      expect(await rowsWithPrefix(db, 'SPAUSE')).toBe(30);
    });
  });
});
