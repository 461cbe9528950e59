import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { currentOwner } from '../../src/ledger/owner.js';
import { SqliteLedger } from '../../src/ledger/sqliteLedger.js';

const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);

function freshLedger(): SqliteLedger {
  const l = SqliteLedger.open(join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite'), { create: true });
  const ids = ['r1', 'r1', 'r2']; // the second r1 is taken: startRun asks for another id
  expect(l.startRun({ mode: 'manual', host: 'h', pid: 1 }, () => ids.shift()!)).toBe('r1');
  expect(l.startRun({ mode: 'manual', host: 'h', pid: 2 }, () => ids.shift()!)).toBe('r2');
  return l;
}

const claim = (l: SqliteLedger, name: string, sha256: string, runId = 'r1') =>
  l.claim({ name, sha256, size: 10, runId, owner: currentOwner(), leaseUntil: new Date(Date.now() + 3600_000) });

describe('the claim', () => {
  it('is won once for a (name, content)', () => {
    const l = freshLedger();
    expect(claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
    expect(claim(l, 'settle_a01.csv', SHA_A, 'r2')).toBe(false);
    expect(l.file('settle_a01.csv', SHA_A)).toMatchObject({ state: 'claimed', runId: 'r1' });
  });

  it('cannot be taken by a renamed twin while the content is claimed, nor once it is loaded', () => {
    const l = freshLedger();
    expect(claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
    expect(claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(false);
    expect(l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' }, { state: 'loaded', event: 'loaded', rows: 3 }, {})).toBe(
      true,
    );
    expect(claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(false);
    expect(l.liveHolder(SHA_A)).toMatchObject({ name: 'settle_a01.csv', state: 'loaded' });
  });

  it('does not block other content', () => {
    const l = freshLedger();
    expect(claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
    expect(claim(l, 'settle_b01.csv', SHA_B)).toBe(true);
  });

  it.each(['failed', 'rejected'] as const)('can be taken again after the content ended %s', (state) => {
    const l = freshLedger();
    expect(claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
    l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' }, { state, event: state, reason: 'x' }, {});
    expect(claim(l, 'settle_a01.csv', SHA_A, 'r2')).toBe(true);
    expect(l.file('settle_a01.csv', SHA_A)).toMatchObject({ state: 'claimed', runId: 'r2', reason: null });
  });

  it('lets a held twin claim once the content is released', () => {
    const l = freshLedger();
    claim(l, 'settle_a01.csv', SHA_A);
    l.noteUnclaimed({ name: 'settle_a02.csv', sha256: SHA_A, size: 10, runId: 'r2' }, 'held', 'held', {});
    l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' }, { state: 'failed', event: 'failed', reason: 'db down' }, {});
    expect(claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(true);
  });

  it('finalizes only the claim this run owns', () => {
    const l = freshLedger();
    claim(l, 'settle_a01.csv', SHA_A);
    expect(l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r2' }, { state: 'loaded', event: 'loaded' }, {})).toBe(false);
  });

  it('keeps ledger_events append-only', () => {
    const l = freshLedger();
    claim(l, 'settle_a01.csv', SHA_A);
    l.close();
    // reopen the file raw: the triggers, not the code, refuse the rewrite
    return import('better-sqlite3').then(({ default: Database }) => {
      const db = new Database(l.path);
      expect(() => db.prepare(`UPDATE ledger_events SET event = 'loaded'`).run()).toThrow('append-only');
      expect(() => db.prepare('DELETE FROM ledger_events').run()).toThrow('append-only');
      db.close();
    });
  });

  it('is won by exactly one of eight processes claiming the same content under different names at once', async () => {
    const l = freshLedger();
    const path = l.path;
    l.close();
    const moduleUrl = pathToFileURL(join(process.cwd(), 'dist/ledger/sqliteLedger.js')).href;
    const script = `
      const { SqliteLedger } = await import(${JSON.stringify(moduleUrl)});
      const l = SqliteLedger.open(process.argv[1], { create: false });
      const i = process.argv[2];
      l.startRun({ mode: 'manual', host: 'h', pid: process.pid }, () => 'p' + i);
      const won = l.claim({ name: 'settle_a0' + i + '.csv', sha256: '${SHA_A}', size: 1, runId: 'p' + i,
        owner: { host: 'h', pid: process.pid, startedAt: 'x' }, leaseUntil: new Date(Date.now() + 60000) });
      process.stdout.write(won ? 'won' : 'lost');`;
    const outcomes = await Promise.all(
      Array.from(
        { length: 8 },
        (_, i) =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script, path, String(i)]);
            let out = '';
            let err = '';
            child.stdout.on('data', (d) => (out += d));
            child.stderr.on('data', (d) => (err += d));
            child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(err))));
          }),
      ),
    );
    expect(outcomes.filter((o) => o === 'won')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'lost')).toHaveLength(7);
  });
});
