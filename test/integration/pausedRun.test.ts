import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN } from '../support/cli.js';
import { withPgLedger, type FinanceDatabase, type Workspace } from '../support/workspace.js';

/**
 * A run paused past its lease (a stopped process, a host asleep) whose COMMIT lands all the same
 * once it resumes: its summary line, its --json and its run in the ledger say what it committed,
 * or truthfully which run recorded it; the rows are in once, the file archived once, the audit
 * clean. The pause is the run's own fault-point hook; what another run does meanwhile is placed
 * by that hook too, never by timing.
 */

const LEDGER_SQL = fileURLToPath(new URL('../support/ledgerSql.mjs', import.meta.url));
const ROWS = 20_000; // more than one COPY batch: mid-copy is mid-COPY
/** The paused run's leases run out: its claim's and its partner's, as the clock would have made them. */
const EXPIRE_LEASES = `UPDATE processed_files SET lease_until = now() - interval '1 second' WHERE state = 'claimed';
  UPDATE partner_leases SET lease_until = now() - interval '1 second'`;

const sh = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** A shell command line: another run of the CLI on the same intake and ledger, with its own fault points. */
function otherRun(ws: Workspace, fault: string, hook = ''): string {
  const args = ['run', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--json'].map(sh).join(' ');
  return `SETTLE_TEST_FAULT=${sh(fault)} SETTLE_TEST_HOOK=${sh(hook)} ${sh(process.execPath)} ${sh(BIN)} ${args}`;
}

const expireLeases = () => `${sh(process.execPath)} ${sh(LEDGER_SQL)} ${sh(EXPIRE_LEASES)}`;

/** The paused run, with its summary line (from --summary-file) and its --json. */
async function pausedRun(ws: Workspace, fault: string, hook: string) {
  const summaryFile = join(ws.root, 'summary.log');
  const r = await ws.run(['--json', '--summary-file', summaryFile], { SETTLE_TEST_FAULT: fault, SETTLE_TEST_HOOK: hook });
  const line = (await readFile(summaryFile, 'utf8')).trim().split('\n').at(-1)!;
  return { ...r, json: JSON.parse(r.stdout) as Record<string, unknown>, line };
}

async function marker(db: FinanceDatabase, name: string): Promise<{ run_id: string; row_count: number }[]> {
  return (await db.client.query(`SELECT run_id, row_count FROM settle.file_loads WHERE file_name = $1`, [name])).rows as {
    run_id: string;
    row_count: number;
  }[];
}

async function rowsOf(db: FinanceDatabase, prefix: string): Promise<number> {
  const r = await db.client.query<{ n: string }>(`SELECT count(*) AS n FROM settle.settlement_rows WHERE transaction_id LIKE $1`, [
    `${prefix}-%`,
  ]);
  return Number(r.rows[0]!.n);
}

/** The rows in once, the file archived once and loaded in the ledger, one load event for it, and the audit clean. */
async function expectLoadedOnce(ws: Workspace, db: FinanceDatabase, name: string, prefix: string): Promise<void> {
  expect(await rowsOf(db, prefix)).toBe(ROWS);
  expect(await ws.files('intake')).toEqual([]);
  expect(await ws.files('archive')).toEqual([name]);
  expect(ws.ledgerFile(name)).toMatchObject({ state: 'loaded', row_count: ROWS });
  expect(ws.events().filter((e) => e.name === name && (e.event === 'loaded' || e.event === 'recovered'))).toHaveLength(1);
  const audit = await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger]);
  expect(audit.status, audit.stdout + audit.stderr).toBe(0);
}

describe.skipIf(process.env.TEST_DATABASE_URL !== undefined)('a run paused past its lease, then resumed', () => {
  it('mid-COPY, its claim expired by another run meanwhile: it records its own load, loaded=1 rows=N everywhere', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261201_paused.csv';
      await ws.put(name, sampleSettlement({ date: '2026-12-01', rows: ROWS, idPrefix: 'PAUSEXP' }).text);
      // while it is paused: its leases run out, and another run takes the partner over, expires the
      // claim (nothing committed yet) and is killed before it lists the intake
      const a = await pausedRun(ws, 'hook:mid-copy', `${expireLeases()} && { ${otherRun(ws, 'before-list')}; true; }`);

      expect(a.status, a.stderr).toBe(0);
      expect(a.line).toMatch(new RegExp(`run ${a.json.run as string} done: loaded=1 .*rows=${ROWS}`));
      expect(a.json).toMatchObject({ loaded: 1, rows: ROWS, files: [{ name, outcome: 'loaded', rows: ROWS }] });
      expect(ws.runs().find((run) => run.run_id === a.json.run)).toMatchObject({
        status: 'finished',
        loaded: 1,
        row_count: ROWS,
        reason: null,
      });
      expect(await marker(db, name)).toEqual([{ run_id: a.json.run, row_count: ROWS }]);
      expect(ws.ledgerFile(name)).toMatchObject({ run_id: a.json.run });
      const expired = ws.events().find((e) => e.event === 'expired');
      expect(expired?.run_id).not.toBe(a.json.run);
      await expectLoadedOnce(ws, db, name, 'PAUSEXP');
    });
  });

  it('mid-COPY, the file claimed again by another run that waits on its load: it records its load, the other says it took nothing', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261202_paused.csv';
      await ws.put(name, sampleSettlement({ date: '2026-12-02', rows: ROWS, idPrefix: 'PAUSCLM' }).text);
      const claimed = join(ws.root, 'b-claimed');
      const bDone = join(ws.root, 'b-status');
      const bOut = join(ws.root, 'b-out');
      // run B, started while A is paused: it expires A's claim, claims the file itself and says so;
      // its COPY then waits on A's file marker, and once that commits B waits for A to end
      const bHook = `if [ "$SETTLE_TEST_HOOK_STEP" = after-claim ]; then touch ${sh(claimed)}; else tail --pid="$A_PID" -f /dev/null; fi`;
      const startB = `( A_PID=$PPID ${otherRun(ws, 'hook:after-claim,hook:after-commit', bHook)} > ${sh(bOut)} 2> ${sh(`${bOut}.err`)}; echo $? > ${sh(bDone)} ) &`;
      const waitForB = `i=0; while [ ! -e ${sh(claimed)} ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`;
      const a = await pausedRun(ws, 'hook:mid-copy', `${expireLeases()} && ${startB} ${waitForB}`);

      expect(a.status, a.stderr).toBe(0);
      expect(a.line).toMatch(new RegExp(`run ${a.json.run as string} done: loaded=1 .*rows=${ROWS}`));
      expect(a.json).toMatchObject({ loaded: 1, rows: ROWS, files: [{ name, outcome: 'loaded', rows: ROWS }] });
      expect(ws.runs().find((run) => run.run_id === a.json.run)).toMatchObject({ status: 'finished', loaded: 1, row_count: ROWS });
      expect(await marker(db, name)).toEqual([{ run_id: a.json.run, row_count: ROWS }]);

      for (let i = 0; !existsSync(bDone); i++) {
        expect(i, 'run B never ended').toBeLessThan(3000);
        await sleep(20);
      }
      const b = JSON.parse(await readFile(bOut, 'utf8')) as Record<string, unknown>;
      // B settled A's claim as stale (exit 1: worth a look) and loaded nothing: A has the file
      expect(b).toMatchObject({ loaded: 0, rows: 0, stale: 1, claims_taken_over: [{ name, by: { run: a.json.run, state: 'loaded' } }] });
      expect((await readFile(bDone, 'utf8')).trim()).toBe('1');
      await expectLoadedOnce(ws, db, name, 'PAUSCLM');
    });
  });

  it('after its COMMIT, the load recorded by another run meanwhile: it says so, with the rows it committed', async () => {
    await withPgLedger(async (ws, db) => {
      const name = 'settle_20261203_paused.csv';
      await ws.put(name, sampleSettlement({ date: '2026-12-03', rows: ROWS, idPrefix: 'PAUSREC' }).text);
      // while it is paused after its COMMIT: another run finds its claim stale, the file marker there,
      // records the load as recovered and archives the file
      const a = await pausedRun(ws, 'hook:after-commit', `${expireLeases()} && { ${otherRun(ws, 'none')}; true; }`);

      expect(a.status, a.stderr).toBe(0);
      const recovered = ws.events().find((e) => e.event === 'recovered' && e.name === name)!;
      const other = recovered.run_id!;
      expect(other).not.toBe(a.json.run);
      const said = `claim taken over after its lease: ${name}: its ${ROWS} rows committed by this run, loaded as run ${other} recorded`;
      expect(a.line).toContain(`run ${a.json.run as string} done: loaded=0 `);
      expect(a.line).toContain(said);
      expect(a.json).toMatchObject({
        loaded: 0,
        claims_taken_over: [{ name, by: { run: other, state: 'loaded' }, committed_rows: ROWS }],
      });
      expect(ws.runs().find((run) => run.run_id === a.json.run)).toMatchObject({
        status: 'finished',
        loaded: 0,
        row_count: 0,
        reason: said,
      });
      expect(await marker(db, name)).toEqual([{ run_id: a.json.run, row_count: ROWS }]);
      await expectLoadedOnce(ws, db, name, 'PAUSREC');
    });
  });
});
