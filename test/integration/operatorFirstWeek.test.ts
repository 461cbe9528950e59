import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { runCli } from '../support/cli.js';
import { onTerminal } from '../support/terminal.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

describe("the operator's first week", () => {
  it('a manual run on a terminal says what it waits for, and shows a load as share, rows, bytes and rate', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261210_a01.csv', sampleSettlement({ date: '2026-12-10', rows: 20_000, idPrefix: 'TTY' }).text, { fresh: true });
    const r = await onTerminal(
      ['run', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '2s', '--mode', 'manual'],
      { DATABASE_URL: ws.databaseUrl },
      ws.root,
    );
    expect(r.status, r.screen).toBe(0);
    expect(r.screen).toMatch(/waiting for settle_20261210_a01\.csv to stay unchanged for 2s \(--stable-for\): \ds to go/);
    // throttled to a few redraws a second: some share of the file, its rows, bytes of the whole
    expect(r.screen).toMatch(/settle_20261210_a01\.csv: \d{1,3}% · [\d,]+ rows · [\d.]+ of 1\.\d MB/);
    expect(r.screen).toMatch(/run \S+ done: loaded=1 .* rows=20000/);
    expect(await ws.files('archive')).toEqual(['settle_20261210_a01.csv']);
  });

  it('--help of each command lists the options it uses, and only those', async () => {
    const help = async (...cmd: string[]) => (await runCli([...cmd, '--help'])).stdout;
    for (const cmd of [['status'], ['report', 'runs'], ['report', 'run'], ['history']]) {
      const text = await help(...cmd);
      expect(text, cmd.join(' ')).toContain('--ledger');
      for (const unused of ['--database-url', '--schema', '--db-timeout', '--layout', '--max-record-bytes', '--log-file']) {
        expect(text, `${cmd.join(' ')} lists ${unused}`).not.toContain(unused);
      }
    }
    expect(await help('run')).toContain('--database-url');
    expect(await help('audit')).toContain('--schema');
  });

  it('a mistyped flag is not answered with another command’s option, and --dry-run outside reprocessing says what to use', async () => {
    const last = await runCli(['report', 'run', '--last', '3']);
    expect(last.status).toBe(2);
    expect(last.stderr).toContain("unknown option '--last'");
    expect(last.stderr).not.toContain('--layout');
    const dry = await runCli(['run', '--intake', '/nonexistent', '--dry-run']);
    expect(dry.status).toBe(2);
    expect(dry.stderr).toContain('--dry-run goes with --reprocess');
    expect(dry.stderr).toContain('settle-ingest check FILE');
  });

  it('a name the pattern does not take, left in the intake run after run, is named as waiting too long; a known neighbour is not', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261212.CSV', 'the partner changed its names\n'); // the pattern takes .csv only
    await ws.put('README.txt', 'a known neighbour\n');
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await ws.run(['--max-waiting-runs', '2', '--ignore', 'README.txt']));
    expect(runs.map((r) => r.status)).toEqual([0, 0, 1]);
    expect(parseSummary(runs[2]!.stdout)).toMatchObject({ ignored: 1 });
    expect(runs[2]!.stdout).toMatch(/\(waiting too long: settle_20261212\.CSV for 3 runs\)/);
    const status = await ws.cli(['status', '--ledger', ws.ledger, '--max-waiting-runs', '2']);
    expect(status.status).toBe(1);
    expect(status.stdout).toMatch(/^SETTLE-INGEST WARNING - settle_20261212\.CSV waiting for 3 runs \(ignored\)/);
    expect(status.stdout).not.toContain('README.txt');
    // once it is moved away, the next sighting starts a new streak
    await rm(join(ws.intake, 'settle_20261212.CSV'));
    expect((await ws.run(['--max-waiting-runs', '2'])).status).toBe(0);
    await ws.put('settle_20261212.CSV', 'the partner changed its names\n');
    expect((await ws.run(['--max-waiting-runs', '2'])).status).toBe(0);
    expect(await ws.files('intake')).toEqual(['README.txt', 'settle_20261212.CSV']);
  });

  it('report run of a dry run’s id says it was a dry run, which the ledger never records', async () => {
    const ws = await Workspace.create(db.url);
    await ws.put('settle_20261211_a01.csv', sampleSettlement({ date: '2026-12-11', rows: 3, idPrefix: 'DRY' }).text);
    expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 1 });
    const dry = await ws.run(['--reprocess', '--reason', 'look', '--files', 'settle_20261211_a01.csv', '--dry-run']);
    expect(dry.status, dry.stderr).toBe(0);
    const dryId = /^run (\S+) reprocess dry run/.exec(dry.stdout)![1]!;
    expect(dryId).toMatch(/^dry-/);
    const report = await ws.cli(['report', 'run', dryId, '--ledger', ws.ledger]);
    expect(report.status).toBe(1);
    expect(report.stdout).toContain(`${dryId} is a dry run's id: a dry run (--dry-run) records nothing in the ledger`);
  });
});
