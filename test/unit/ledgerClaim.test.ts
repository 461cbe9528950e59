import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteLedger } from '../../src/ledger/sqliteLedger.js';
import { claim, claimSemantics, SHA_A, withTwoRuns } from '../support/claimScenarios.js';

const freshLedger = () => withTwoRuns(openSqliteLedger(join(mkdtempSync(join(tmpdir(), 'settle-ledger-')), 'l.sqlite'), { create: true }));

claimSemantics('SQLite', freshLedger);

describe('the SQLite ledger', () => {
  it('keeps ledger_events append-only', async () => {
    const l = await freshLedger();
    await claim(l, 'settle_a01.csv', SHA_A);
    await l.close();
    // reopen the file raw: the triggers, not the code, refuse the rewrite
    const db = new Database(l.location);
    expect(() => db.prepare(`UPDATE ledger_events SET event = 'loaded'`).run()).toThrow('append-only');
    expect(() => db.prepare('DELETE FROM ledger_events').run()).toThrow('append-only');
    db.close();
  });

  it('gives the claim to exactly one of eight processes claiming the same content under different names at once', async () => {
    const l = await freshLedger();
    const path = l.location;
    await l.close();
    const moduleUrl = pathToFileURL(join(process.cwd(), 'dist/ledger/sqliteLedger.js')).href;
    // each process opens the ledger and starts its run, says `ready`, and waits at the barrier
    // (a line on its stdin); released, it says `claiming` and claims in the same turn
    const script = `
      const { writeSync } = await import('node:fs');
      const { once } = await import('node:events');
      const { openSqliteLedger } = await import(${JSON.stringify(moduleUrl)});
      const l = openSqliteLedger(process.argv[1], { create: false });
      const i = process.argv[2];
      await l.startRun({ mode: 'manual', host: 'h', pid: process.pid }, () => 'p' + i);
      writeSync(1, 'ready\\n');
      await once(process.stdin, 'data');
      process.stdin.destroy();
      writeSync(1, 'claiming\\n');
      const won = await l.claim({ name: 'settle_a0' + i + '.csv', sha256: '${SHA_A}', size: 1, arrival: '1:1', runId: 'p' + i,
        owner: { host: 'h', pid: process.pid, startedAt: 'x' }, leaseSeconds: 60 });
      writeSync(1, won === true ? 'won' : won === false ? 'lost' : 'neither');`;
    const children = Array.from({ length: 8 }, (_, i) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, path, String(i)]);
      let out = '';
      let err = '';
      const said = (word: string) =>
        new Promise<void>((resolve, reject) => {
          const seen = () => out.split('\n').includes(word) && resolve();
          child.stdout.on('data', seen);
          child.on('close', () => reject(new Error(`process ${i} ended before it said ${word}: ${err}`)));
        });
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const outcome = new Promise<string>((resolve, reject) =>
        child.on('close', (code) => (code === 0 ? resolve(out.split('\n').at(-1)!) : reject(new Error(`process ${i}: ${err}`)))),
      );
      outcome.catch(() => undefined); // awaited below, after the barrier
      return { child, ready: said('ready'), claiming: said('claiming'), outcome };
    });
    await Promise.all(children.map((c) => c.ready));
    // all eight are at the barrier: this process holds the ledger's write lock while they are
    // released, so every claim starts while the others are pending and waits for the lock
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      for (const { child } of children) child.stdin.end('go\n');
      await Promise.all(children.map((c) => c.claiming));
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    const outcomes = await Promise.all(children.map((c) => c.outcome));
    expect(outcomes.filter((o) => o === 'won')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'lost')).toHaveLength(7);
  });
});
