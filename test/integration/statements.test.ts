import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { finished } from '../support/cli.js';
import { until } from '../support/until.js';
import { financeDatabase, parseSummary, Workspace, type FinanceDatabase, type LedgerStore } from '../support/workspace.js';

/*
 * Statements without ids (docs/LAYOUTS.md "Statements without ids"): a bank's weekly export of
 * "the last 30 days" overlaps the week before; each row must land once, identical rows seen before
 * are counted and not loaded again, a changed one refuses the file.
 */

const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../fixtures/statements/${name}`, import.meta.url)), 'utf8');
const NIGHTS = ['statement_2026-03-09.csv', 'statement_2026-03-16.csv', 'statement_2026-03-23.csv'];
const STORES = ['sqlite', 'postgres'] as const satisfies readonly LedgerStore[];

/** A statement's rows as the bank meant them: each line's (date, text, amount) numbered among the file's lines with the same three, and its amount in cents. */
function statementRows(text: string): { key: string; cents: number; line: number }[] {
  const seen = new Map<string, number>();
  return text
    .trim()
    .split(/\r?\n/)
    .slice(1)
    .map((line, i) => {
      const [date, what, amount] = line.split(',');
      const base = `${date}|${what}|${Math.round(Number(amount) * 100)}`;
      const occurrence = (seen.get(base) ?? 0) + 1;
      seen.set(base, occurrence);
      return { key: `${base}#${occurrence}`, cents: Math.round(Number(amount) * 100), line: i + 2 };
    });
}

/** What a table must hold after these exports: every distinct row once. */
function union(texts: string[]): { rows: number; cents: number } {
  const all = new Map<string, number>();
  for (const text of texts) for (const row of statementRows(text)) all.set(row.key, row.cents);
  return { rows: all.size, cents: [...all.values()].reduce((a, b) => a + b, 0) };
}

/** A workspace whose config is the fixture's (its layout and pattern), on a ledger of the given store, migrated. */
async function statementWorkspace(db: FinanceDatabase, store: LedgerStore, configName = 'bank-statement.config.json') {
  const ws = await Workspace.create(db.url, { ledger: store, migrate: false });
  const config = join(ws.root, 'statements.json');
  await writeFile(config, fixture(configName));
  const migrated = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
  expect(migrated.status, migrated.stderr).toBe(0);
  return { ws, config };
}

async function tableTotals(db: FinanceDatabase, table = 'bank_statement_lines'): Promise<{ rows: number; cents: number }> {
  const r = await db.client.query<{ rows: number; cents: string | null }>(
    `SELECT count(*)::int AS rows, (sum(amount) * 100)::bigint::text AS cents FROM settle.${table}`,
  );
  return { rows: r.rows[0]!.rows, cents: Number(r.rows[0]!.cents ?? 0) };
}

interface RunJson {
  run: string;
  loaded: number;
  rejected: number;
  rows: number;
  seen_before: number;
  files: { name: string; outcome: string; rows: number; seen_before?: number; error?: string }[];
}

describe('weekly "last 30 days" exports of a statement without ids', () => {
  it.each(STORES)('load every row exactly once over three nights, and say how many were seen before (%s ledger)', async (store) => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, store);
      const texts: string[] = [];
      for (const [night, name] of NIGHTS.entries()) {
        const text = fixture(name);
        const before = union(texts);
        texts.push(text);
        const expected = union(texts);
        const fileRows = statementRows(text).length;

        // check says what the run will do: with the finance database, how many rows are new
        const checked = await ws.cli(['check', '--config', config, await put(ws, name, text), '--json']);
        expect(checked.status, checked.stderr).toBe(0);
        const checkDoc = JSON.parse(checked.stdout) as { files: { rows: number; seen_before: number | null }[] };
        expect(checkDoc.files[0]).toMatchObject({
          rows: expected.rows - before.rows,
          seen_before: fileRows - (expected.rows - before.rows),
        });

        const run = await ws.run(['--config', config, '--json']);
        expect(run.status, run.stderr).toBe(0);
        const summary = JSON.parse(run.stdout) as RunJson;
        expect(summary).toMatchObject({
          loaded: 1,
          rejected: 0,
          rows: expected.rows - before.rows,
          seen_before: fileRows - (expected.rows - before.rows),
        });
        expect(summary.files).toEqual([
          expect.objectContaining({ name, outcome: 'loaded', rows: summary.rows, seen_before: summary.seen_before }),
        ]);
        if (night > 0) expect(summary.seen_before).toBeGreaterThan(0);
        // the finance table holds every distinct row once: counts and sums
        expect(await tableTotals(db)).toEqual(expected);
        expect(await ws.files('archive')).toContain(name);
        const loaded = ws.events().filter((e) => e.event === 'loaded' && e.name === name);
        expect(loaded.map((e) => [e.details.rows, e.details.seenBefore ?? 0])).toEqual([[summary.rows, summary.seen_before]]);
      }
      // two identical coffees a day are two rows: occurrences 1 and 2, each once
      const coffees = await db.client.query<{ occurrence: number; n: number }>(
        `SELECT occurrence, count(*)::int AS n FROM settle.bank_statement_lines
          WHERE booking_date = '2026-03-02' AND text = 'CARD 4411 CAFE LUMEN' GROUP BY occurrence ORDER BY occurrence`,
      );
      expect(coffees.rows).toEqual([
        { occurrence: 1, n: 1 },
        { occurrence: 2, n: 1 },
      ]);
      // report runs says it per run, and the ledger keeps it with each run and file
      const runs = JSON.parse((await ws.cli(['report', 'runs', '--ledger', ws.ledger, '--json'])).stdout) as {
        runs: { rows: number; seen_before: number }[];
      };
      expect(runs.runs.map((r) => r.seen_before).reverse()).toEqual(
        ws
          .events()
          .filter((e) => e.event === 'loaded')
          .map((e) => e.details.seenBefore ?? 0),
      );
      const table = (await ws.cli(['report', 'runs', '--ledger', ws.ledger])).stdout;
      expect(table).toMatch(/seen_before/);
      // a fourth run finds nothing to do
      const idle = await ws.run(['--config', config]);
      expect(parseSummary(idle.stdout)).toMatchObject({ loaded: 0, skipped: 0, rejected: 0, rows: 0 });
    } finally {
      await db.close();
    }
  });

  it('loads a re-export of rows all seen before as a file of 0 new rows; the same bytes under another name are a resend', async () => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, 'sqlite');
      await ws.put(NIGHTS[1]!, fixture(NIGHTS[1]!));
      expect((await ws.run(['--config', config])).status).toBe(0);
      const after = await tableTotals(db);

      // the same week exported again with LF line ends: other bytes, every row seen before
      const again = fixture(NIGHTS[1]!).replaceAll('\r\n', '\n');
      await ws.put('statement_2026-03-16_again.csv', again);
      const run = await ws.run(['--config', config]);
      expect(run.status, run.stderr).toBe(0);
      expect(parseSummary(run.stdout)).toMatchObject({ loaded: 1, rejected: 0, rows: 0 });
      expect(run.stdout).toContain(`rows seen before: ${statementRows(again).length}`);
      expect(await tableTotals(db)).toEqual(after);
      expect(await ws.files('archive')).toContain('statement_2026-03-16_again.csv');
      expect(
        ws.query<{ row_count: number; seen_before: number }>(
          'SELECT row_count, seen_before FROM processed_files WHERE name = ?',
          'statement_2026-03-16_again.csv',
        ),
      ).toEqual([{ row_count: 0, seen_before: statementRows(again).length }]);

      // its bytes once more under a third name: a resend of that content, skipped (never "no activity")
      await ws.put('statement_2026-03-16_third.csv', again);
      const resend = await ws.run(['--config', config]);
      expect(parseSummary(resend.stdout)).toMatchObject({ loaded: 0, skipped: 1 });
      expect(await ws.files('duplicates')).toEqual(['statement_2026-03-16_third.csv']);
      expect(await tableTotals(db)).toEqual(after);
    } finally {
      await db.close();
    }
  });

  it.each(STORES)(
    'refuse a re-export whose row differs from the loaded one, naming line, key and both values (%s ledger)',
    async (store) => {
      const db = await financeDatabase();
      try {
        const { ws, config } = await statementWorkspace(db, store);
        await ws.put(NIGHTS[0]!, fixture(NIGHTS[0]!));
        const first = await ws.run(['--config', config]);
        expect(first.status).toBe(0);
        const firstRun = parseSummary(first.stdout).run;
        const after = await tableTotals(db);

        const corrected = fixture('statement_2026-03-23_corrected.csv');
        const line = statementRows(corrected).find((r) => r.key.startsWith('04.03.2026|SEPA DIRECT DEBIT STADTWERKE|'))!.line;
        const loadedLine = statementRows(fixture(NIGHTS[0]!)).find((r) =>
          r.key.startsWith('04.03.2026|SEPA DIRECT DEBIT STADTWERKE|'),
        )!.line;
        const checked = await ws.cli(['check', '--config', config, await put(ws, 'statement_2026-03-23.csv', corrected)]);
        expect(checked.status).toBe(1);
        expect(checked.stdout).toMatch(
          new RegExp(`line ${line}: key "2026-03-04" "SEPA DIRECT DEBIT STADTWERKE" "-84\\.20" \\(occurrence 1\\)`),
        );

        const run = await ws.run(['--config', config, '--json']);
        expect(run.status).toBe(1);
        const summary = JSON.parse(run.stdout) as RunJson;
        expect(summary).toMatchObject({ loaded: 0, rejected: 1, rows: 0, seen_before: 0 });
        const error = summary.files[0]!.error!;
        expect(error).toBe(
          `line ${line}: key "2026-03-04" "SEPA DIRECT DEBIT STADTWERKE" "-84.20" (occurrence 1) was loaded from ${NIGHTS[0]} (run ${firstRun}, line ${loadedLine}) with other values: balance "8069.80" here, "8096.80" loaded`,
        );
        // nothing of it loaded, the file in rejected/ with its reason in the ledger
        expect(await tableTotals(db)).toEqual(after);
        expect(await ws.files('rejected')).toEqual(['statement_2026-03-23.csv']);
        expect(await ws.files('intake')).toEqual([]);
        expect(ws.ledgerFile('statement_2026-03-23.csv')).toMatchObject({ state: 'rejected' });
        const rejected = ws.events().find((e) => e.event === 'rejected')!;
        expect(rejected.details).toMatchObject({ line, field: 'balance' });
      } finally {
        await db.close();
      }
    },
  );
});

describe('a partial day, then the full day', () => {
  it('loads exactly the new rows: the second identical coffee, and the amount written 10.5 as 10.50', async () => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, 'sqlite', 'card-statement.config.json');
      await ws.put('card_2026-03-16_1215.csv', fixture('card_2026-03-16_1215.csv'));
      expect(parseSummary((await ws.run(['--config', config])).stdout)).toMatchObject({ loaded: 1, rows: 1 });
      await ws.put('card_2026-03-17_0600.csv', fixture('card_2026-03-17_0600.csv'));
      const full = JSON.parse((await ws.run(['--config', config, '--json'])).stdout) as RunJson;
      expect(full).toMatchObject({ loaded: 1, rows: 2, seen_before: 1 });
      const rows = await db.client.query(
        `SELECT merchant, amount::text, occurrence FROM settle.card_statement_lines ORDER BY merchant, occurrence`,
      );
      expect(rows.rows).toEqual([
        { merchant: 'CAFE LUMEN', amount: '-3.50', occurrence: 1 },
        { merchant: 'CAFE LUMEN', amount: '-3.50', occurrence: 2 },
        { merchant: 'METRO TICKETS', amount: '-2.90', occurrence: 1 },
      ]);
    } finally {
      await db.close();
    }
  });
});

describe('a statement load killed mid-way and run again', () => {
  const CASES = STORES.flatMap((store) =>
    (['mid-copy', 'rows-compared'] as const)
      .map((step) => ({ store, step, settled: 'expired' }))
      .concat([{ store, step: 'after-commit' as never, settled: 'recovered' }]),
  );
  it.each(CASES)(
    'SIGKILL $step ($store ledger): every row once, seen-before counted by the run that finishes it',
    async ({ store, step, settled }) => {
      const db = await financeDatabase();
      try {
        const { ws, config } = await statementWorkspace(db, store);
        await ws.put(NIGHTS[0]!, fixture(NIGHTS[0]!));
        expect((await ws.run(['--config', config])).status).toBe(0);
        await ws.put(NIGHTS[1]!, fixture(NIGHTS[1]!));
        const killed = await ws.run(['--config', config], { SETTLE_TEST_FAULT: step });
        expect(killed.signal).toBe('SIGKILL');

        const again = await ws.run(['--config', config, '--json']);
        expect(again.status, again.stderr).toBe(1); // a stale claim settled: worth a look
        const summary = JSON.parse(again.stdout) as RunJson & { stale: number };
        expect(summary.stale).toBe(1);
        expect(ws.events().filter((e) => e.event === settled)).toHaveLength(1);
        const expected = union([fixture(NIGHTS[0]!), fixture(NIGHTS[1]!)]);
        expect(await tableTotals(db)).toEqual(expected);
        if (settled === 'expired') {
          expect(summary).toMatchObject({ loaded: 1, rows: expected.rows - statementRows(fixture(NIGHTS[0]!)).length });
          expect(summary.seen_before).toBe(statementRows(fixture(NIGHTS[1]!)).length - summary.rows);
        }
        expect(await ws.files('archive')).toEqual([...NIGHTS.slice(0, 2)].sort());
        expect(await ws.files('intake')).toEqual([]);
        expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([
          [NIGHTS[0], 'loaded'],
          [NIGHTS[1], 'loaded'],
        ]);
        const third = await ws.run(['--config', config]);
        expect(parseSummary(third.stdout)).toMatchObject({ loaded: 0, skipped: 0, stale: 0 });
      } finally {
        await db.close();
      }
    },
  );
});

describe('two runs at once on overlapping exports', () => {
  it('never both load a row: one waits on the other inside its transaction and counts the row as seen before', async () => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, 'sqlite');
      await ws.put(NIGHTS[0]!, fixture(NIGHTS[0]!));
      await ws.put(NIGHTS[1]!, fixture(NIGHTS[1]!));
      // each run waits, its rows staged and its transaction open, until the other is there too
      const barrier = join(ws.root, 'staged-barrier');
      const together = {
        SETTLE_TEST_FAULT: 'hook:mid-copy',
        SETTLE_TEST_HOOK: `mkdir -p "${barrier}"; touch "${barrier}/$PPID"; i=0; while [ "$(ls "${barrier}" | wc -l)" -lt 2 ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`,
      };
      const [a, b] = await Promise.all([
        finished(ws.startRun(['--config', config, '--json'], together)),
        finished(ws.startRun(['--config', config, '--json'], together)),
      ]);
      expect([a.status, b.status], a.stderr + b.stderr).toEqual([0, 0]);
      const [ja, jb] = [JSON.parse(a.stdout) as RunJson, JSON.parse(b.stdout) as RunJson];
      // each run loaded one of the two files, both transactions open at once
      expect([ja.loaded, jb.loaded]).toEqual([1, 1]);
      const texts = [fixture(NIGHTS[0]!), fixture(NIGHTS[1]!)];
      const expected = union(texts);
      expect(ja.rows + jb.rows).toBe(expected.rows);
      expect(ja.seen_before + jb.seen_before).toBe(statementRows(texts[0]!).length + statementRows(texts[1]!).length - expected.rows);
      expect(await tableTotals(db)).toEqual(expected);
      expect((await ws.files('archive')).sort()).toEqual([...NIGHTS.slice(0, 2)].sort());
    } finally {
      await db.close();
    }
  });
});

describe('a load that meets a row another load committed after its insert began', () => {
  it('waits for it on the index, then loads its rows again skipping that key: the row counted as seen before, never twice', async () => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, 'sqlite');
      // run A inserts the first week's rows and holds, its transaction open, until told to go on
      const held = join(ws.root, 'a-held');
      const go = join(ws.root, 'a-go');
      await ws.put(NIGHTS[0]!, fixture(NIGHTS[0]!));
      const a = finished(
        ws.startRun(['--config', config, '--json'], {
          SETTLE_TEST_FAULT: 'hook:rows-compared',
          SETTLE_TEST_HOOK: `touch "${held}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`,
        }),
      );
      await until('run A holds its inserted rows uncommitted', () => existsSync(held));

      // run B's plain insert of the overlapping week began before A committed: it waits on A's keys
      await ws.put(NIGHTS[1]!, fixture(NIGHTS[1]!));
      const retried = join(ws.root, 'b-retried');
      const b = finished(
        ws.startRun(['--config', config, '--json'], { SETTLE_TEST_FAULT: 'hook:insert-retried', SETTLE_TEST_HOOK: `touch "${retried}"` }),
      );
      await until('run B waits on a key run A inserted', async () => {
        const waiting = await db.client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SAVEPOINT settle_insert;%'`,
        );
        return waiting.rows[0]!.n === 1;
      });
      await writeFile(go, '');
      const [ra, rb] = await Promise.all([a, b]);
      expect([ra.status, rb.status], ra.stderr + rb.stderr).toEqual([0, 0]);
      // B met A's committed keys as a UNIQUE violation and went in again from its savepoint
      expect(existsSync(retried)).toBe(true);

      const [ja, jb] = [JSON.parse(ra.stdout) as RunJson, JSON.parse(rb.stdout) as RunJson];
      const texts = [fixture(NIGHTS[0]!), fixture(NIGHTS[1]!)];
      const expected = union(texts);
      expect(ja).toMatchObject({ loaded: 1, rows: statementRows(texts[0]!).length, seen_before: 0 });
      expect(jb).toMatchObject({ loaded: 1, rows: expected.rows - ja.rows });
      expect(jb.seen_before).toBe(statementRows(texts[1]!).length - jb.rows);
      expect(jb.seen_before).toBeGreaterThan(0);
      expect(await tableTotals(db)).toEqual(expected);
      expect((await ws.files('archive')).sort()).toEqual([...NIGHTS.slice(0, 2)].sort());
      expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([
        [NIGHTS[0], 'loaded'],
        [NIGHTS[1], 'loaded'],
      ]);
    } finally {
      await db.close();
    }
  });
});

describe('a reprocess of one export while a run loads an overlapping one', () => {
  const CASES = [
    { held: 'reprocess', step: 'mid-copy', when: "the reprocess holds its export's rows deleted, not yet put back" },
    { held: 'reprocess', step: 'rows-compared', when: "the reprocess holds its export's rows put back, not yet committed" },
    { held: 'run', step: 'rows-compared', when: "the run holds the new week's rows inserted, not yet committed" },
  ] as const;
  it.each(CASES)('$when: no row loaded twice, none lost, the overlap seen before by the run', async ({ held, step }) => {
    const db = await financeDatabase();
    try {
      const { ws, config } = await statementWorkspace(db, 'sqlite');
      const [a, b] = [fixture(NIGHTS[0]!), fixture(NIGHTS[1]!)];
      await ws.put(NIGHTS[0]!, a);
      expect((await ws.run(['--config', config])).status).toBe(0);
      await ws.put(NIGHTS[1]!, b);

      const reprocess = ['--config', config, '--reprocess', '--reason', 'layout check', '--files', NIGHTS[0]!, '--json'];
      const run = ['--config', config, '--json'];
      // the held one stops at the step, its transaction open, until the other has finished
      const heldFile = join(ws.root, 'held');
      const go = join(ws.root, 'go');
      const hold = {
        SETTLE_TEST_FAULT: `hook:${step}`,
        SETTLE_TEST_HOOK: `touch "${heldFile}"; i=0; while [ ! -e "${go}" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done`,
      };
      const first = finished(ws.startRun(held === 'reprocess' ? reprocess : run, hold));
      await until(`the ${held} holds at ${step}`, () => existsSync(heldFile));
      const other = await ws.run(held === 'reprocess' ? run : reprocess);
      await writeFile(go, '');
      const firstDone = await first;
      const [reprocessed, loaded] = held === 'reprocess' ? [firstDone, other] : [other, firstDone];
      expect([reprocessed.status, loaded.status], reprocessed.stdout + reprocessed.stderr + loaded.stdout + loaded.stderr).toEqual([0, 0]);

      const expected = union([a, b]);
      const newRows = expected.rows - statementRows(a).length;
      expect(JSON.parse(loaded.stdout) as RunJson).toMatchObject({
        loaded: 1,
        rows: newRows,
        seen_before: statementRows(b).length - newRows,
      });
      expect(JSON.parse(reprocessed.stdout)).toMatchObject({
        files: [expect.objectContaining({ name: NIGHTS[0], rows: statementRows(a).length })],
      });
      // every distinct row once: counts, sums, and no key twice
      expect(await tableTotals(db)).toEqual(expected);
      const twice = await db.client.query(
        `SELECT booking_date, text, amount, occurrence FROM settle.bank_statement_lines GROUP BY 1, 2, 3, 4 HAVING count(*) > 1`,
      );
      expect(twice.rows).toEqual([]);
      // each row carries the load that put it there: the first week's the reprocess's, the rest the run's
      const byLoad = await db.client.query<{ reason: string | null; n: number }>(
        `SELECT l.reason, count(*)::int AS n FROM settle.bank_statement_lines t JOIN settle.loads l USING (load_id) GROUP BY l.reason ORDER BY l.reason NULLS LAST`,
      );
      expect(byLoad.rows).toEqual([
        { reason: expect.stringContaining('layout check'), n: statementRows(a).length },
        { reason: null, n: newRows },
      ]);
    } finally {
      await db.close();
    }
  });
});

/** Puts a statement into the intake, and a copy beside the workspace for `check`, whose path it returns. */
async function put(ws: Workspace, name: string, text: string): Promise<string> {
  const path = join(ws.root, name);
  await writeFile(path, text);
  await ws.put(name, text);
  return path;
}
