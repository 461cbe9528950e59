import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN, runCli } from '../support/cli.js';
import { OutputMask } from '../support/maskOutput.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** Stored beside this file: a change of the CLI's human output shows as a diff to review (`vitest -u` to accept it). */
const snapshot = (name: string) => `__snapshots__/cliOutput/${name}.txt`;

describe('the human output of every command', () => {
  it('is pinned for a night with a load, a renamed resend, a reject and a neighbour, and the run after it', async () => {
    const ws = await Workspace.create(db.url);
    const a01 = sampleSettlement({ date: '2026-06-01', rows: 3, idPrefix: 'SNAPA' }).text;
    await ws.put('settle_20260601_a01.csv', a01);
    await ws.put('settle_20260601_a02.csv', a01);
    await ws.put('settle_20260601_b01.csv', 'settlement_date,transaction_id\n2026-06-01,x\n');
    await ws.put('notes.txt', 'not a settlement file');
    const m = new OutputMask({ ws: ws.root, 'database-url': db.url });
    const ledger = ['--ledger', ws.ledger];
    const shown = async (args: string[]) => {
      const r = await ws.cli(args);
      return `$ settle-ingest ${m.mask(args.join(' '))}\nexit ${r.status}\n${m.mask(r.stdout)}`;
    };

    await expect(await shown(ws.runArgs())).toMatchFileSnapshot(snapshot('run-night'));
    await expect(await shown(ws.runArgs())).toMatchFileSnapshot(snapshot('run-after'));
    await expect(await shown(['report', 'runs', ...ledger])).toMatchFileSnapshot(snapshot('report-runs'));
    await expect(await shown(['report', 'run', ...ledger])).toMatchFileSnapshot(snapshot('report-run-latest'));
    const night = ws.runs()[0]!.run_id;
    await expect(await shown(['report', 'run', night, ...ledger])).toMatchFileSnapshot(snapshot('report-run-night'));
    await expect(await shown(['report', 'skips', ...ledger])).toMatchFileSnapshot(snapshot('report-skips'));
    await expect(await shown(['history', 'settle_20260601_a01.csv', ...ledger])).toMatchFileSnapshot(snapshot('history'));
    await expect(await shown(['audit', '--intake', ws.intake, ...ledger])).toMatchFileSnapshot(snapshot('audit'));
    await expect(await shown(['status', ...ledger])).toMatchFileSnapshot(snapshot('status'));
  });

  it.each([
    '',
    'migrate',
    'run',
    'report',
    'report runs',
    'report run',
    'report skips',
    'report deliveries',
    'history',
    'audit',
    'adopt',
    'status',
    'waive',
    'demo',
  ])('is pinned for settle-ingest %s --help', async (command) => {
    const args = [...command.split(' ').filter(Boolean), '--help'];
    const r = await runCli(args);
    expect(r.status).toBe(0);
    await expect(`$ settle-ingest ${args.join(' ')}\n${r.stdout}`).toMatchFileSnapshot(
      snapshot(`help-${command.replaceAll(' ', '-') || 'settle-ingest'}`),
    );
  });
});

describe('a reader that goes away', () => {
  it('(`settle-ingest --help | head -1`) has what it wanted: the command ends 0 and says nothing more', () => {
    for (const args of [['--help'], ['run', '--help'], ['report', '--help']]) {
      const r = spawnSync('bash', ['-c', 'set -o pipefail; "$@" | head -1 > /dev/null', 'bash', process.execPath, BIN, ...args], {
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
    }
  });
});
