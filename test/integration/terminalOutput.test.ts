import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { onTerminal } from '../support/terminal.js';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

// a partner's name that would recolour the terminal and rewrite its line; its resend adds a C1 CSI and a bidi override
const EVIL = 'settle_20261201_\x1b[31mred\r.csv';
const EVIL_TWIN = 'settle_20261201_\u009b2J\u202evsc.csv';
const SHOWN = 'settle_20261201_\\x1b[31mred\\r.csv';
const TWIN_SHOWN = 'settle_20261201_\\x9b2J\\u202evsc.csv';

/** The bytes a terminal would act on: ESC, CR, C1 CSI (UTF-8 C2 9B), RIGHT-TO-LEFT OVERRIDE (E2 80 AE). */
function activeBytes(stdout: string): string[] {
  const bytes = Buffer.from(stdout, 'utf8');
  const found: string[] = [];
  if (bytes.includes(0x1b)) found.push('ESC');
  if (bytes.includes(0x0d)) found.push('CR');
  if (bytes.includes(Buffer.from([0xc2, 0x9b]))) found.push('CSI');
  if (bytes.includes(Buffer.from([0xe2, 0x80, 0xae]))) found.push('RLO');
  return found;
}

/** Every string in a parsed JSON value, at any depth. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsIn);
  return [];
}

let ws: Workspace;
beforeAll(async () => {
  ws = await Workspace.create(db.url);
  const text = sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'EVIL' }).text;
  await ws.put(EVIL, text);
  expect(parseSummary((await ws.run()).stdout)).toMatchObject({ loaded: 1 });
  await ws.put(EVIL_TWIN, text);
  expect(parseSummary((await ws.run()).stdout)).toMatchObject({ skipped: 1 });
});

describe('names with control characters, printed for people', () => {
  it('history NAME shows the name escaped, never its raw ESC or CR', async () => {
    const r = await ws.cli(['history', EVIL, '--ledger', ws.ledger]);
    expect(r.status).toBe(0);
    expect(activeBytes(r.stdout)).toEqual([]);
    expect(r.stdout).toContain(SHOWN);
    expect(r.stdout).toContain(TWIN_SHOWN); // the resend's skip is part of the content's history
  });

  it('report runs and report skips write no raw control or bidi characters', async () => {
    const runs = await ws.cli(['report', 'runs', '--ledger', ws.ledger]);
    expect(runs.status).toBe(0);
    expect(activeBytes(runs.stdout)).toEqual([]);
    const skips = await ws.cli(['report', 'skips', '--ledger', ws.ledger]);
    expect(skips.status).toBe(0);
    expect(activeBytes(skips.stdout)).toEqual([]);
    expect(skips.stdout).toContain(TWIN_SHOWN);
    expect(skips.stdout).toContain(`same bytes as ${SHOWN}`);
  });

  it('--json keeps the exact names, and its bytes are as safe as the text', async () => {
    for (const args of [
      ['history', EVIL],
      ['report', 'skips'],
    ]) {
      const r = await ws.cli([...args, '--ledger', ws.ledger, '--json']);
      expect(r.status).toBe(0);
      expect(activeBytes(r.stdout)).toEqual([]);
      expect(stringsIn(JSON.parse(r.stdout))).toEqual(expect.arrayContaining([EVIL, EVIL_TWIN]));
    }
  });

  it('adopt and audit show an archived name escaped', async () => {
    const archive = await mkdtemp(join(tmpdir(), 'settle-evil-archive-'));
    await writeFile(
      join(archive, 'settle_20261202_\x1b]0;owned\x07.csv'),
      sampleSettlement({ date: '2026-12-02', rows: 2, idPrefix: 'NOPE' }).text,
    );
    const adopt = await ws.cli(['adopt', '--archive', archive, '--ledger', ws.ledger]);
    expect(adopt.status).toBe(1);
    expect(activeBytes(adopt.stdout)).toEqual([]);
    expect(adopt.stdout).toContain('settle_20261202_\\x1b]0;owned\\x07.csv: not loaded');
    const audit = await ws.cli(['audit', '--archive', archive, '--ledger', ws.ledger]);
    expect(audit.status).toBe(1);
    expect(activeBytes(audit.stdout)).toEqual([]);
    expect(audit.stdout).toContain('settle_20261202_\\x1b]0;owned\\x07.csv');
  });
});

describe('a Ctrl-C on a terminal', () => {
  it('is acknowledged at once, before the file in hand is finished; the run then stops after it (exit 1)', async () => {
    const night = await Workspace.create(db.url);
    await night.put('settle_20261203_a01.csv', sampleSettlement({ date: '2026-12-03', rows: 3, idPrefix: 'INT1' }).text);
    await night.put('settle_20261203_a02.csv', sampleSettlement({ date: '2026-12-03', rows: 3, idPrefix: 'INT2' }).text);
    // Ctrl-C as the first file is about to be claimed: once, to the run's own process (the hook's parent)
    const signalled = join(night.root, 'signalled');
    const r = await onTerminal(
      ['run', '--intake', night.intake, '--ledger', night.ledger, '--stable-for', '0', '--mode', 'manual'],
      {
        DATABASE_URL: night.databaseUrl,
        SETTLE_TEST_FAULT: 'hook:before-claim',
        SETTLE_TEST_HOOK: `[ -e '${signalled}' ] || { touch '${signalled}'; kill -INT $PPID; }`,
      },
      night.root,
    );
    expect(r.status, r.screen).toBe(1);
    const acknowledged = r.screen.indexOf('stopping: finishing the file in hand, then no other (Ctrl-C again to stop at once)');
    const stopped = r.screen.search(/run \S+ stopped: loaded=1 /);
    expect(acknowledged, r.screen).toBeGreaterThan(-1);
    expect(stopped, r.screen).toBeGreaterThan(acknowledged);
    expect(await night.files('archive')).toEqual(['settle_20261203_a01.csv']);
    expect(await night.files('intake')).toEqual(['settle_20261203_a02.csv']);
  });
});
