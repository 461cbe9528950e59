import pg from 'pg';
import { RejectError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { pgCode, PG_UNIQUE_VIOLATION } from '../db/pgErrors.js';
import { PROVENANCE_COLUMNS, keyName, tableKey, type Layout } from '../layout/model/layout.js';
import { KeyClashes, repeatsLine, showKey } from '../layout/reader/naturalKeys.js';
import { quoteValue } from '../layout/values/quoteValue.js';
import { constraintName } from './layoutTable.js';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier: id } = pg;

/**
 * The staging table of one load: a temporary table of the load's own transaction (dropped at its
 * end, seen by no other session), with the layout table's columns and types.
 */
export const STAGING_TABLE = 'pg_temp.settle_incoming';

/** What a staged load put in: the new rows, and the rows another file had loaded already (identical: not loaded again). */
export interface StagedRows {
  rows: number;
  seenBefore: number;
}

/** A refusal names at most this many rows. */
const SHOWN = 10;

/** A differing row is named with at most this many of its columns. */
const DIFFERENCES_SHOWN = 10;

/** The staging table, made for this transaction from the layout's table (its columns and types, no constraint, no occurrence). */
export function createStagingSql({ schema, layout }: FinanceTarget): string {
  const columns = [...layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS];
  return `CREATE TEMP TABLE settle_incoming ON COMMIT DROP AS
            SELECT ${columns.map(id).join(', ')} FROM ${id(schema)}.${id(layout.table)} WITH NO DATA`;
}

/**
 * The staged rows as a relation with the table's columns: with an `occurrence`, each row numbered
 * among the file's rows of the same key values (1, 2, … by line), as the UNIQUE index compares
 * them (PARTITION BY uses the columns' own equality and collation: a decimal by its value, a
 * timestamp by its instant). The numbering is computed where it is read, never stored: the
 * insert's own sort by key and line serves it (one pass, docs/BENCHMARKS.md "Staged loads").
 */
function stagedRowsSql(layout: Layout): string {
  if (layout.occurrence === undefined) return STAGING_TABLE;
  const columns = [...layout.columns.map((c) => c.name), ...PROVENANCE_COLUMNS].map(id);
  return `(SELECT ${columns.join(', ')},
                  row_number() OVER (PARTITION BY ${layout.naturalKey.map(id).join(', ')} ORDER BY source_line)::integer AS ${id(layout.occurrence)}
             FROM ${STAGING_TABLE})`;
}

/** How messages show a staged row's key: its values as the table keeps them, and its occurrence. */
function keyText(layout: Layout, values: string[], occurrence: unknown): string {
  return `${showKey(values)}${layout.occurrence !== undefined ? ` (occurrence ${String(occurrence)})` : ''}`;
}

/**
 * The staged rows into the layout's table, inside the load's transaction (docs/DESIGN.md
 * "Statements without ids"):
 * 1. without an `occurrence` column, a key the file repeats is refused;
 * 2. every row goes in unless its key is in the table already (`insertNewRows`, in the key's
 *    order so that two loads at once wait on each other rather than deadlock): a row another
 *    transaction is inserting is waited for, so two runs never both load a key. With an
 *    `occurrence` column, the same statement numbers each row among the file's rows of the same
 *    key values (`stagedRowsSql`);
 * 3. when some row did not go in, each such row is compared with the loaded row of its key: with
 *    `seenBefore`, an identical row is counted as seen before and a different one refuses the
 *    file, naming line, key and both values; without it, any such row refuses the file as a key
 *    loaded before.
 * Every staged row is new or seen before: anything else is a fault, never a silent drop.
 */
export async function settleStagedRows(financeTarget: FinanceTarget, loadId: number, staged: number): Promise<StagedRows> {
  const { schema, layout } = financeTarget;
  const table = `${id(schema)}.${id(layout.table)}`;
  if (layout.occurrence === undefined) await refuseRepeats(financeTarget);
  const rows = await insertNewRows(financeTarget);

  // every row went in: none has a loaded row to be compared with
  const matched = rows === staged ? NONE_MATCHED : await matchedRows(financeTarget, loadId);
  const seenBefore = layout.seenBefore ? matched.same : 0;
  if (matched.different > 0 || (!layout.seenBefore && matched.same > 0)) throw matched.refusal();
  if (rows + seenBefore !== staged) {
    throw new Error(`${staged} rows staged for ${table}, ${rows} inserted and ${seenBefore} seen before: the rest went nowhere`);
  }
  faultPoint('rows-compared');
  return { rows, seenBefore };
}

/**
 * What a load of the staged rows would do, without loading them (`check`): how many are new and
 * how many identical to rows loaded before, or the refusal a load would meet. Nothing is written
 * but the transaction's own staging table; the caller rolls the transaction back.
 */
export async function judgeStagedRows(financeTarget: FinanceTarget, staged: number): Promise<StagedRows> {
  if (financeTarget.layout.occurrence === undefined) await refuseRepeats(financeTarget);
  // no load of this file exists: every row of the table is another file's
  const matched = await matchedRows(financeTarget, 0);
  if (matched.different > 0 || (!financeTarget.layout.seenBefore && matched.same > 0)) throw matched.refusal();
  return { rows: staged - matched.same, seenBefore: matched.same };
}

/**
 * Step 2: the staged rows whose key the table does not hold, inserted in key order (key, then
 * line: the order the occurrence's window sorts in, so one sort serves both; within a key the
 * line's order is the occurrence's). Returns how many went in.
 *
 * First as a plain INSERT of the rows whose key no committed row has (an anti-join on the UNIQUE
 * index's columns and equality), which costs a third less than `ON CONFLICT`'s speculative
 * insertion (docs/BENCHMARKS.md "Staged loads"). A key that another transaction inserted and had
 * not committed when the statement began is waited for on the index; if that transaction commits,
 * the statement fails as a UNIQUE violation, and the rows go in again from the savepoint with
 * `ON CONFLICT DO NOTHING`, which waits the same way and skips such keys: either way no key is
 * loaded twice and no row is dropped unseen (step 3 compares every row that did not go in).
 */
async function insertNewRows(financeTarget: FinanceTarget): Promise<number> {
  const { client, schema, layout } = financeTarget;
  const table = `${id(schema)}.${id(layout.table)}`;
  const all = [...layout.columns.map((c) => c.name), ...(layout.occurrence ? [layout.occurrence] : []), ...PROVENANCE_COLUMNS].map(id);
  const insert = `INSERT INTO ${table} (${all.join(', ')}) SELECT ${all.join(', ')} FROM ${stagedRowsSql(layout)} s`;
  const order = `ORDER BY ${[...layout.naturalKey, 'source_line'].map(id).join(', ')}`;
  // key parts are never NULL (layoutTable.ts): `=` is the index's own equality
  const loaded = `SELECT 1 FROM ${table} t WHERE ${tableKey(layout)
    .map((k) => `t.${id(k)} = s.${id(k)}`)
    .join(' AND ')}`;
  try {
    const [, inserted] = (await client.query(
      `SAVEPOINT settle_insert; ${insert} WHERE NOT EXISTS (${loaded}) ${order}; RELEASE SAVEPOINT settle_insert`,
    )) as unknown as pg.QueryResult[];
    return inserted!.rowCount ?? 0;
  } catch (err) {
    if (pgCode(err) !== PG_UNIQUE_VIOLATION) throw err;
  }
  faultPoint('insert-retried');
  const [, inserted] = (await client.query(
    `ROLLBACK TO SAVEPOINT settle_insert; ${insert} ${order} ON CONFLICT ON CONSTRAINT ${id(constraintName(layout))} DO NOTHING`,
  )) as unknown as pg.QueryResult[];
  return inserted!.rowCount ?? 0;
}

/** A key the file itself repeats (a layout without `occurrence`): the file is refused, naming each line and the first. */
async function refuseRepeats({ client, layout }: FinanceTarget): Promise<void> {
  const key = layout.naturalKey.map(id);
  const found = await client.query<Record<string, string | number>>(
    `SELECT line, first_line, ${key.map((k, i) => `${k}::text AS k${i}`).join(', ')}, count(*) OVER () AS total
       FROM (SELECT source_line AS line, ${key.join(', ')},
                    first_value(source_line) OVER (PARTITION BY ${key.join(', ')} ORDER BY source_line) AS first_line
               FROM ${STAGING_TABLE}) r
      WHERE line <> first_line ORDER BY line LIMIT 10`,
  );
  if (found.rows.length === 0) return;
  const clashes = new KeyClashes();
  for (const row of found.rows) {
    const values = key.map((_, i) => String(row[`k${i}`]));
    clashes.add({ key: showKey(values), line: Number(row.line), from: repeatsLine(Number(row.first_line)) });
  }
  clashes.addUnshown(Number(found.rows[0]!.total) - found.rows.length);
  throw clashRefusal(layout, clashes);
}

function clashRefusal(layout: Layout, clashes: KeyClashes): RejectError {
  const { message, line } = clashes.message(layout);
  return new RejectError(message, { ...(line !== undefined ? { line } : {}), field: keyName(layout) });
}

/** What `matchedRows` finds when no staged row has a loaded row under its key. */
const NONE_MATCHED: MatchedRows = {
  same: 0,
  different: 0,
  refusal: () => {
    throw new Error('no staged row was refused');
  },
};

interface MatchedRows {
  same: number;
  different: number;
  refusal: () => RejectError;
}

/**
 * The staged rows whose key the table holds under another load: how many are identical to the
 * loaded row, how many differ, and the refusal that names the first of them. Each is compared
 * with the loaded row as committed (READ COMMITTED: a load that committed while this one waited
 * on its key is seen); a loaded row is only ever removed by `run --reprocess` of its own content,
 * which puts the rows of the same archived bytes back in the same transaction. (The rows are not
 * locked: FOR SHARE would need UPDATE on the table, which the ingest role does not have.)
 */
async function matchedRows(financeTarget: FinanceTarget, loadId: number): Promise<MatchedRows> {
  const { client, schema, layout } = financeTarget;
  const table = `${id(schema)}.${id(layout.table)}`;
  const columns = layout.columns.map((c) => id(c.name));
  const join = tableKey(layout)
    .map((k) => `t.${id(k)} = s.${id(k)}`)
    .join(' AND ');
  const occurrence = layout.occurrence !== undefined ? `, s.${id(layout.occurrence)} AS occurrence` : '';
  const sameRow = columns.map((c) => `s.${c} IS NOT DISTINCT FROM t.${c}`).join(' AND ');
  const joined = `${stagedRowsSql(layout)} s JOIN ${table} t ON ${join}`;
  // the join is planned from the staged rows' statistics (a temporary table has none until analyzed)
  await client.query(`ANALYZE ${STAGING_TABLE}`);
  // one pass counts them and picks the lines a refusal names (rows that differ; without
  // seenBefore, any); their values are read as text only for those, and only to refuse
  const counted = await client.query<{ same_rows: string; different_rows: string; shown: number[] | null }>(
    `SELECT count(*) FILTER (WHERE m.same) AS same_rows, count(*) FILTER (WHERE NOT m.same) AS different_rows,
            (array_agg(m.line ORDER BY m.line) FILTER (WHERE ${layout.seenBefore ? 'NOT m.same' : 'true'}))[1:${SHOWN}] AS shown
       FROM (SELECT s.source_line AS line, ${sameRow} AS same FROM ${joined} WHERE t.load_id <> $1) m`,
    [loadId],
  );
  const same = Number(counted.rows[0]!.same_rows);
  const different = Number(counted.rows[0]!.different_rows);
  const refuses = different > 0 || (!layout.seenBefore && same > 0);
  const found = !refuses
    ? { rows: [] }
    : await client.query<Record<string, unknown>>(
        `SELECT s.source_line AS line, t.source_line AS loaded_line, t.load_id${occurrence},
                ${layout.naturalKey.map((k, i) => `s.${id(k)}::text AS k${i}`).join(', ')},
                ${columns.map((c, i) => `s.${c} IS NOT DISTINCT FROM t.${c} AS same${i}, s.${c}::text AS here${i}, t.${c}::text AS loaded${i}`).join(',\n                ')},
                ${sameRow} AS same, f.file_name, l.run_id
           FROM ${joined} JOIN ${id(schema)}.loads l ON l.load_id = t.load_id JOIN ${id(schema)}.file_loads f ON f.sha256 = l.sha256
          WHERE t.load_id <> $1 AND s.source_line = ANY($2)
          ORDER BY s.source_line`,
        [loadId, counted.rows[0]!.shown ?? []],
      );
  const keyOf = (row: Record<string, unknown>) =>
    keyText(
      layout,
      layout.naturalKey.map((_, i) => String(row[`k${i}`])),
      row.occurrence,
    );
  const from = (row: Record<string, unknown>) => `${String(row.file_name)} (run ${String(row.run_id)}, line ${String(row.loaded_line)})`;
  const refusal = (): RejectError => {
    if (!layout.seenBefore) {
      const clashes = new KeyClashes();
      for (const row of found.rows) clashes.add({ key: keyOf(row), line: Number(row.line), from: `already loaded from ${from(row)}` });
      clashes.addUnshown(same + different - found.rows.length);
      return clashRefusal(layout, clashes);
    }
    const differing = found.rows.filter((row) => row.same === false);
    // (the rows named are read by a second statement: a reprocess that committed between the two
    // may have put back rows that no longer differ; the count decided, and is said)
    if (differing.length === 0)
      return new RejectError(`${different} rows differ from the rows loaded before under their keys`, { field: keyName(layout) });
    const told = differing.map((row) => {
      const changed = layout.columns.flatMap((c, i) => (row[`same${i}`] === false ? [i] : []));
      const values = changed
        .slice(0, DIFFERENCES_SHOWN)
        .map((i) => `${layout.columns[i]!.name} ${shown(row[`here${i}`])} here, ${shown(row[`loaded${i}`])} loaded`);
      const more = changed.length > DIFFERENCES_SHOWN ? `, and ${changed.length - DIFFERENCES_SHOWN} more columns` : '';
      return `line ${String(row.line)}: key ${keyOf(row)} was loaded from ${from(row)} with other values: ${values.join(', ')}${more}`;
    });
    const more = different > differing.length ? `; and ${different - differing.length} more` : '';
    const head = different === 1 ? '' : `${different} rows differ from the rows loaded before under their keys: `;
    const firstRow = differing[0]!;
    const field = layout.columns[layout.columns.findIndex((_, i) => firstRow[`same${i}`] === false)]?.name ?? keyName(layout);
    return new RejectError(`${head}${told.join('; ')}${more}`, { line: Number(firstRow.line), field });
  };
  return { same, different, refusal };
}

/** A value as a refusal quotes it: quoted (long ones cut), an empty one said so. */
const shown = (value: unknown): string => (value === null || value === undefined ? 'empty' : quoteValue(String(value)));
