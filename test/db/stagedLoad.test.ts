import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FinanceDb } from '../../src/finance/financeDb.js';
import { closeFinanceFixture, FINANCE_SCHEMA as SCHEMA, openFinanceFixture, type FinanceFixture } from '../support/dbDatabase.js';
import { sha256Hex } from '../support/settlementFiles.js';
import { statementLayout } from '../support/statementLayout.js';
import { until } from '../support/until.js';

/*
 * A staged load (src/finance/stagedLoad.ts) against PostgreSQL itself: occurrences numbered by the
 * server's equality, rows seen before compared with the loaded ones, refusals that name both values,
 * in text and binary COPY, for a first load, a reload and `check`'s judgement.
 */

const layout = statementLayout;

let fixture: FinanceFixture;
let statements: FinanceDb;
/** the day's file the first test loads, which the reload test loads again */
let loadedDay: Awaited<ReturnType<typeof file>> | undefined;

beforeAll(async () => {
  fixture = await openFinanceFixture('staged');
  statements = fixture.finance.forLayout(layout({ occurrence: true }));
  await statements.migrate();
});
afterAll(() => closeFinanceFixture(fixture));

async function file(name: string, lines: string[]) {
  const text = ['Date,Text,Amount,Balance', ...lines].join('\n') + '\n';
  const path = join(fixture.dir, name);
  await writeFile(path, text);
  return { stagedPath: path, sha256: sha256Hex(text), name, runId: `run-${name}` };
}

const rows = async (table = 'statement_lines') =>
  (
    await fixture.reader.query<{ line: string }>(
      `SELECT concat_ws('|', booking_date, text, amount, coalesce(balance::text, ''), occurrence) AS line FROM ${SCHEMA}.${table} ORDER BY 1`,
    )
  ).rows.map((r) => r.line);

describe('a staged load', () => {
  it('numbers identical lines, counts the ones another file loaded as seen before, in text and in binary', async () => {
    const morning = await file('morning.csv', ['16.03.2026,CAFE,-3.50,']);
    expect(await statements.load({ ...morning, format: 'binary' })).toMatchObject({
      outcome: 'loaded',
      rows: 1,
      seenBefore: 0,
      format: 'binary',
    });
    const day = await file('day.csv', ['16.03.2026,CAFE,-3.5,', '16.03.2026,METRO,-2.90,', '16.03.2026,CAFE,-3.50,96.10']);
    // the judgement `check` gives, loading nothing
    expect(await statements.judge(day.stagedPath, day.name)).toEqual({ rows: 2, seenBefore: 1 });
    expect(await rows()).toEqual(['2026-03-16|CAFE|-3.50||1']);
    expect(await statements.load({ ...day, format: 'text' })).toMatchObject({ outcome: 'loaded', rows: 2, seenBefore: 1 });
    loadedDay = day;
    expect(await rows()).toEqual(['2026-03-16|CAFE|-3.50|96.10|2', '2026-03-16|CAFE|-3.50||1', '2026-03-16|METRO|-2.90||1']);
    // the file marker counts the new rows, the rows that carry its load
    expect(await statements.fileMarker(day.sha256)).toMatchObject({ rowCount: 2 });
  });

  it('refuses a file whose rows differ from the loaded ones, naming each with both values, and loads nothing of it', async () => {
    const changed = await file('changed.csv', [
      '16.03.2026,CAFE,-3.50,1.00',
      '16.03.2026,METRO,-2.90,',
      '16.03.2026,CAFE,-3.50,',
      '17.03.2026,NEW,1.00,',
    ]);
    const refusal =
      /^2 rows differ from the rows loaded before under their keys: line 2: key "2026-03-16" "CAFE" "-3.50" \(occurrence 1\) was loaded from morning\.csv \(run run-morning\.csv, line 2\) with other values: balance "1\.00" here, empty loaded; line 4: key "2026-03-16" "CAFE" "-3.50" \(occurrence 2\) was loaded from day\.csv \(run run-day\.csv, line 4\) with other values: balance empty here, "96\.10" loaded$/;
    await expect(statements.judge(changed.stagedPath, changed.name)).rejects.toThrow(refusal);
    await expect(statements.load(changed)).rejects.toMatchObject({ message: expect.stringMatching(refusal), line: 2, field: 'balance' });
    expect(await statements.fileMarker(changed.sha256)).toBeNull();
    expect(await rows()).toHaveLength(3);
  });

  it('a file whose rows were all seen before is a content with rows: its bytes again are already loaded, never a "no activity" day', async () => {
    const again = await file('again.csv', ['16.03.2026,METRO,-2.90,']);
    expect(await statements.load(again)).toMatchObject({ outcome: 'loaded', rows: 0, seenBefore: 1 });
    expect(await statements.load({ ...again, runId: 'later' })).toMatchObject({
      outcome: 'already-loaded',
      fileName: 'again.csv',
      rows: 0,
    });
    const empty = await file('empty.csv', []);
    expect(await statements.load(empty)).toMatchObject({ outcome: 'loaded', rows: 0, seenBefore: 0 });
    expect(await statements.load({ ...empty, name: 'empty2.csv' })).toMatchObject({ outcome: 'loaded', rows: 0, seenBefore: 0 });
  });

  it('reloads a content in place: its rows replaced, the rows other files loaded still seen before', async () => {
    const request = { ...loadedDay!, runId: 'run-reload' };
    expect(await statements.reload(request, { dryRun: true, reason: 'dry' })).toEqual({ previousRows: 2, rows: 2, seenBefore: 1 });
    expect(await statements.reload(request, { dryRun: false, reason: 'again' })).toEqual({ previousRows: 2, rows: 2, seenBefore: 1 });
    expect(await rows()).toEqual(['2026-03-16|CAFE|-3.50|96.10|2', '2026-03-16|CAFE|-3.50||1', '2026-03-16|METRO|-2.90||1']);
  });

  it("adopt's look-up takes the n-th identical row of a file as the n-th loaded under its key", async () => {
    // the table holds two identical coffees of that day: a file with three has one more
    const three = await file('three.csv', ['16.03.2026,CAFE,-3.50,', '16.03.2026,CAFE,-3.5,', '16.03.2026,CAFE,-3.50,']);
    expect(await statements.keyPresence(three.stagedPath, three.name)).toEqual({
      rows: 3,
      present: 2,
      firstMissing: { line: 4, key: '"2026-03-16" "CAFE" "-3.50" (occurrence 3)' },
    });
  });

  it('a key another load commits while the insert waits on it: the rows go in again skipping it, and it is counted as seen before', async () => {
    const other = new pg.Client({ connectionString: fixture.database.url });
    await other.connect();
    try {
      // another load's transaction holds the key, uncommitted
      const sha = sha256Hex('another load');
      await other.query('BEGIN');
      await other.query(
        `INSERT INTO ${SCHEMA}.file_loads (sha256, file_name, run_id, row_count, target_table, delivered_sha256) VALUES ($1, 'other.csv', 'run-other', 1, 'statement_lines', $1)`,
        [sha],
      );
      const loadId = (
        await other.query<{ load_id: number }>(`INSERT INTO ${SCHEMA}.loads (sha256, run_id) VALUES ($1, 'run-other') RETURNING load_id`, [
          sha,
        ])
      ).rows[0]!.load_id;
      await other.query(
        `INSERT INTO ${SCHEMA}.statement_lines (booking_date, text, amount, balance, occurrence, load_id, source_line) VALUES ('2026-04-01', 'RACE', -1.00, NULL, 1, $1, 2)`,
        [loadId],
      );
      const raced = await file('raced.csv', ['01.04.2026,RACE,-1.0,', '01.04.2026,NEW,2.00,']);
      const loading = statements.load(raced);
      await until('the load waits on the key the other load holds', async () => {
        const waiting = await fixture.reader.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SAVEPOINT settle_insert;%'`,
        );
        return waiting.rows[0]!.n === 1;
      });
      await other.query('COMMIT');
      expect(await loading).toMatchObject({ outcome: 'loaded', rows: 1, seenBefore: 1 });
      expect((await rows()).filter((r) => r.startsWith('2026-04-01'))).toEqual(['2026-04-01|NEW|2.00||1', '2026-04-01|RACE|-1.00||1']);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
  });

  it('without seenBefore, a key another file loaded refuses the file as before, naming where it was loaded', async () => {
    const strict = fixture.finance.forLayout(layout({ table: 'strict_lines', occurrence: true, seenBefore: false }));
    await strict.migrate();
    await strict.load(await file('one.csv', ['16.03.2026,CAFE,-3.50,5.00']));
    const two = await file('two.csv', ['16.03.2026,CAFE,-3.50,', '16.03.2026,CAFE,-3.50,']);
    await expect(strict.load(two)).rejects.toThrow(
      'field (booking_date, text, amount): 1 value(s) already used: line 2: "2026-03-16" "CAFE" "-3.50" (occurrence 1) already loaded from one.csv (run run-one.csv, line 2)',
    );
    expect(await rows('strict_lines')).toEqual(['2026-03-16|CAFE|-3.50|5.00|1']);
  });

  it('without an occurrence, a key the file repeats is refused naming both lines, as check names it', async () => {
    const unnumbered = fixture.finance.forLayout(layout({ table: 'unnumbered_lines', seenBefore: true }));
    await unnumbered.migrate();
    const twice = await file('twice.csv', ['16.03.2026,CAFE,-3.50,', '16.03.2026,METRO,-2.90,', '16.03.2026,CAFE,-3.5,']);
    await expect(unnumbered.load(twice)).rejects.toThrow(
      'field (booking_date, text, amount): 1 value(s) already used: line 4: "2026-03-16" "CAFE" "-3.50" repeats line 2 of this file',
    );
  });

  it('needs TEMPORARY on the database for its staging table: a role without it is told the grant', async () => {
    const role = `staged_${process.pid}`;
    const { reader } = fixture;
    const db = (await reader.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
    await reader.query(`CREATE ROLE ${role} LOGIN PASSWORD 'x'`);
    try {
      await reader.query(`REVOKE TEMPORARY ON DATABASE ${db} FROM PUBLIC`);
      await reader.query(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${role}`);
      await reader.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ${SCHEMA} TO ${role}`);
      const url = new URL(fixture.database.url);
      url.username = role;
      url.password = 'x';
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        const { FinanceDb } = await import('../../src/finance/financeDb.js');
        const limited = await FinanceDb.connect(url.toString(), SCHEMA, statements.layout, { timeoutSeconds: 10, onLost: () => undefined });
        try {
          await expect(limited.assertReady('load')).rejects.toThrow(`lacks TEMPORARY on database ${db}`);
          // check's judgement stages the rows as a load does: it is refused the same; a plain read is not
          await expect(limited.assertReady('judge')).rejects.toThrow(`GRANT TEMPORARY ON DATABASE "${db}" TO "${role}"`);
          await expect(limited.assertReady('read')).resolves.toBeUndefined();
        } finally {
          await limited.close();
        }
      } finally {
        await client.end();
      }
    } finally {
      await reader.query(`GRANT TEMPORARY ON DATABASE ${db} TO PUBLIC`);
      await reader.query(`REASSIGN OWNED BY ${role} TO current_user; DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });
});
