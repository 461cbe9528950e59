import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { endPostgres } from '../db/pgConnect.js';
import { PG_INSUFFICIENT_PRIVILEGE, pgCode } from '../db/pgErrors.js';
import { migratePg } from '../db/pgMigrate.js';
import { SettleError, TransientError, UsageError, errorMessage } from '../errors.js';
import { redactSecrets } from '../redactSecrets.js';
import { LEDGER_SCHEMA, connectPgLedger, pgLedgerLabel } from './pgLedger.js';
import { openSqliteStore } from './sqliteLedger.js';
import { numberPlaceholders, type SqlPort, type SqlRow } from './sqlPort.js';

/** One table as copied: its rows, and the digest of them that both stores agreed on. */
export interface CopiedTable {
  table: string;
  rows: number;
  /** SHA-256 sum of the table's rows (see TableDigest), hex */
  digest: string;
}

export interface LedgerCopy {
  from: string;
  to: string;
  /** every ledger table, in the order copied (a table before those that refer to it) */
  tables: CopiedTable[];
}

/** A table of the ledger as the target's catalog has it: columns in order, with their types, and its primary key. */
interface TableShape {
  name: string;
  columns: { name: string; type: string }[];
  primaryKey: string[];
  /** a column filled from a sequence (processed_files.id), whose sequence follows the copied ids */
  serial: { column: string; sequence: string }[];
}

/** Rows read and written a page at a time, so that a ledger of millions of events needs little memory. */
const PAGE_ROWS = 5000;
const DIGEST_MODULUS = 1n << 256n;

/** The rows of a SQL statement with `?` placeholders, from either store. */
type Reader = (sql: string, params: unknown[]) => Promise<SqlRow[]>;

/**
 * An order-free digest of a table's rows: the sum, modulo 2^256, of each row's SHA-256 (over its
 * values in a form both stores give alike). The two stores page through a table in their own
 * order (their text collations differ), so the digest may not depend on it; a row lost, added or
 * changed in the copy changes it.
 */
class TableDigest {
  rows = 0;
  private sum = 0n;

  constructor(private readonly shape: TableShape) {}

  add(row: SqlRow): void {
    const values = this.shape.columns.map(({ name, type }) => comparable(row[name], type));
    const hash = createHash('sha256').update(JSON.stringify(values)).digest('hex');
    this.sum = (this.sum + BigInt(`0x${hash}`)) % DIGEST_MODULUS;
    this.rows++;
  }

  get hex(): string {
    return this.sum.toString(16).padStart(64, '0');
  }
}

/** JSON with its keys sorted: jsonb keeps an object's keys in its own order, the SQLite ledger as written. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A value as both stores agree on it: a time as its instant, JSON as its canonical text, a number as its digits. */
function comparable(value: unknown, type: string): string | null {
  if (value === null || value === undefined) return null;
  if (type === 'timestamp with time zone') return new Date(value as string | Date).toISOString();
  if (type === 'jsonb') return canonicalJson(typeof value === 'string' ? JSON.parse(value) : value);
  return String(value);
}

/** A SQLite value as the target column takes it (its JSON text parsed for a jsonb column). */
function targetValue(value: unknown, type: string, where: () => string): unknown {
  if (type !== 'jsonb' || typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch (err) {
    throw new UsageError(`${where()}: its JSON does not parse (${errorMessage(err)}): nothing was copied`, { cause: err });
  }
}

const ident = (name: string) => pg.escapeIdentifier(name);

/** The ledger's tables in the target (schema_migrations aside: the target's own), a table before those that refer to it. */
async function targetTables(client: pg.Client): Promise<TableShape[]> {
  const columns = await client.query<{ table: string; column: string; type: string; serial: string | null }>(
    `SELECT c.relname::text AS table, a.attname::text AS column, format_type(a.atttypid, a.atttypmod) AS type,
            pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) AS serial
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
      ORDER BY c.relname, a.attnum`,
    [LEDGER_SCHEMA],
  );
  const keys = await client.query<{ table: string; key: string[] }>(
    `SELECT c.relname::text AS table, array_agg(a.attname::text ORDER BY k.ord) AS key
       FROM pg_constraint p JOIN pg_class c ON c.oid = p.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            CROSS JOIN LATERAL unnest(p.conkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
      WHERE n.nspname = $1 AND p.contype = 'p'
      GROUP BY c.relname`,
    [LEDGER_SCHEMA],
  );
  const refers = await client.query<{ table: string; refers: string }>(
    `SELECT DISTINCT c.relname::text AS table, r.relname::text AS refers
       FROM pg_constraint p JOIN pg_class c ON c.oid = p.conrelid JOIN pg_class r ON r.oid = p.confrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND p.contype = 'f' AND r.oid <> c.oid`,
    [LEDGER_SCHEMA],
  );
  const shapes = new Map<string, TableShape>();
  for (const row of columns.rows) {
    const shape = shapes.get(row.table) ?? { name: row.table, columns: [], primaryKey: [], serial: [] };
    shape.columns.push({ name: row.column, type: row.type });
    if (row.serial) shape.serial.push({ column: row.column, sequence: row.serial });
    shapes.set(row.table, shape);
  }
  for (const { table, key } of keys.rows) if (shapes.has(table)) shapes.get(table)!.primaryKey = key;
  for (const shape of shapes.values()) {
    // every ledger table has a primary key: it is what a page continues after
    if (shape.primaryKey.length === 0) throw new Error(`ledger table ${shape.name} has no primary key to page by`);
  }
  return referencedFirst([...shapes.values()], refers.rows);
}

/** The tables ordered so that each comes after every table it refers to (runs before the files, events and moves of its runs). */
function referencedFirst(tables: TableShape[], refers: { table: string; refers: string }[]): TableShape[] {
  const ordered: TableShape[] = [];
  const placed = new Set<string>();
  const place = (table: TableShape, path: string[]) => {
    if (placed.has(table.name)) return;
    if (path.includes(table.name)) throw new Error(`ledger tables refer to each other in a circle: ${[...path, table.name].join(' → ')}`);
    for (const { refers: parent } of refers.filter((edge) => edge.table === table.name)) {
      const parentTable = tables.find((candidate) => candidate.name === parent);
      if (parentTable) place(parentTable, [...path, table.name]);
    }
    placed.add(table.name);
    ordered.push(table);
  };
  for (const table of [...tables].sort((a, b) => a.name.localeCompare(b.name))) place(table, []);
  return ordered;
}

/** Each page of a table, in the order of its primary key (the same statement for both stores: row values, `?` placeholders). */
async function* pages(read: Reader, shape: TableShape): AsyncGenerator<SqlRow[]> {
  const key = shape.primaryKey.map(ident).join(', ');
  const select = `SELECT ${shape.columns.map((c) => ident(c.name)).join(', ')} FROM ${ident(shape.name)}`;
  let after: unknown[] | null = null;
  for (;;) {
    const where: string = after ? ` WHERE (${key}) > (${after.map(() => '?').join(', ')})` : '';
    const rows: SqlRow[] = await read(`${select}${where} ORDER BY ${key} LIMIT ${PAGE_ROWS}`, after ?? []);
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < PAGE_ROWS) return;
    const last = rows.at(-1)!;
    after = shape.primaryKey.map((column) => last[column]);
  }
}

/** Refuses a source whose tables are not the target's, column for column (the two stores of one release always agree). */
async function assertSameColumns(source: SqlPort, tables: TableShape[]): Promise<void> {
  for (const shape of tables) {
    const rows = await source.all('SELECT name FROM pragma_table_info(?)', [shape.name]);
    const have = new Set(rows.map((row) => String(row.name)));
    const missing = shape.columns.map((c) => c.name).filter((name) => !have.has(name));
    const extra = [...have].filter((name) => !shape.columns.some((c) => c.name === name));
    if (missing.length > 0 || extra.length > 0) {
      throw new UsageError(
        `ledger ${source.location}: table ${shape.name} does not match the PostgreSQL ledger's (${[
          missing.length ? `lacks ${missing.join(', ')}` : '',
          extra.length ? `has ${extra.join(', ')} besides` : '',
        ]
          .filter(Boolean)
          .join('; ')}): nothing was copied`,
      );
    }
  }
}

/** The tables of the target that hold rows, with their counts; none for a target made by migrate alone. */
async function filledTables(client: pg.Client): Promise<string[]> {
  const filled: string[] = [];
  for (const { name } of await targetTables(client)) {
    const r = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(LEDGER_SCHEMA)}.${ident(name)}`);
    const rows = Number(r.rows[0]!.n);
    if (rows > 0) filled.push(`${name} ${rows} row(s)`);
  }
  return filled;
}

function refuseFilled(to: string, filled: string[]): void {
  if (filled.length === 0) return;
  throw new UsageError(
    `ledger copy: the target ${to} is not empty (${filled.join(', ')}): a ledger's history is copied into a new, empty ledger only; nothing was copied`,
  );
}

/**
 * A run of the source that has not ended and whose process is alive on this host would go on
 * writing into the SQLite ledger after the copy, and its history would be lost: the copy waits
 * for the timer and the service to be stopped.
 */
async function refuseLiveRuns(source: SqlPort): Promise<void> {
  const open = await source.all(`SELECT run_id, pid FROM runs WHERE ended_at IS NULL AND host = ?`, [hostname()]);
  for (const run of open) {
    try {
      process.kill(Number(run.pid), 0);
    } catch {
      continue; // gone: the copy carries it as it stands, and a run on the new ledger closes it as died
    }
    throw new UsageError(
      `ledger copy: run ${String(run.run_id)} (pid ${String(run.pid)} on this host) has not ended: stop the timer and the watch service and let it finish, then copy (if pid ${String(run.pid)} is no settle-ingest, one \`settle-ingest run\` closes the run as died)`,
    );
  }
}

/**
 * Copies the whole history of a SQLite ledger (runs, files and their claims, events, moves and
 * move intents, ignored names, partner leases) into a new PostgreSQL ledger, and proves the copy:
 * every table's row count and digest (TableDigest) read back from the target equal the source's,
 * or nothing is committed. The source is held under SQLite's write lock throughout, so no run
 * writes to it meanwhile, and is never changed; the target is created or brought to this release
 * by the migrator, and refused when any of its tables holds a row (checked again under lock,
 * inside the copy's one transaction).
 */
export async function copyLedger(from: string, toUrl: string, busyTimeoutMs: number): Promise<LedgerCopy> {
  const to = redactSecrets(toUrl);
  const source = openSqliteStore(from, { create: false, busyTimeoutMs });
  let client: pg.Client | undefined;
  try {
    client = await connectPgLedger(toUrl);
    const target = client;
    // a target already in use is refused before migrate would bring it forward
    const schemaThere = await target.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [LEDGER_SCHEMA]);
    if (schemaThere.rowCount) refuseFilled(to, await filledTables(target));
    await migratePg(target, LEDGER_SCHEMA, 'ledger-pg', pgLedgerLabel(toUrl));
    const tables = await targetTables(target);
    await assertSameColumns(source, tables);
    const waitMs = Math.max(1000, Math.round(busyTimeoutMs));
    await target.query(`SET search_path TO ${ident(LEDGER_SCHEMA)}`);
    await target.query(`SET lock_timeout = ${waitMs}`);
    const readTarget: Reader = async (sql, params) => (await target.query(numberPlaceholders(sql), params)).rows as SqlRow[];
    const readSource: Reader = (sql, params) => source.all(sql, params);
    return await source.transaction(async () => {
      await refuseLiveRuns(source);
      await target.query('BEGIN');
      try {
        // no run may write to the target while it is filled, and no second copy fill it too
        await target.query(`LOCK TABLE ${tables.map((t) => ident(t.name)).join(', ')} IN EXCLUSIVE MODE`);
        refuseFilled(to, await filledTables(target));
        const copied: CopiedTable[] = [];
        for (const shape of tables) copied.push(await copyTable(readSource, target, shape, from));
        for (const shape of tables)
          await verifyTable(
            readTarget,
            shape,
            copied.find((c) => c.table === shape.name)!,
            to,
          );
        for (const shape of tables) {
          for (const { column, sequence } of shape.serial) {
            await target.query(
              `SELECT setval($1, COALESCE((SELECT max(${ident(column)}) FROM ${ident(shape.name)}), 1),
                             (SELECT max(${ident(column)}) FROM ${ident(shape.name)}) IS NOT NULL)`,
              [sequence],
            );
          }
        }
        await target.query('COMMIT');
        return { from, to, tables: copied };
      } catch (err) {
        await target.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  } catch (err) {
    // ours as it is; a missing privilege as the command line says one (exit 2, see cli/index.ts)
    if (err instanceof SettleError || pgCode(err) === PG_INSUFFICIENT_PRIVILEGE) throw err;
    throw new TransientError(`ledger copy to ${to}: ${errorMessage(err)}: nothing was copied`, { cause: err });
  } finally {
    await source.close();
    if (client) await endPostgres(client);
  }
}

/** Copies one table a page at a time (each page one INSERT of its rows as JSON), taking its digest as it reads. */
async function copyTable(read: Reader, target: pg.Client, shape: TableShape, from: string): Promise<CopiedTable> {
  const digest = new TableDigest(shape);
  const columns = shape.columns.map((c) => ident(c.name)).join(', ');
  const insert = `INSERT INTO ${ident(shape.name)} (${columns})
                  SELECT ${columns} FROM jsonb_populate_recordset(NULL::${ident(shape.name)}, $1::jsonb)`;
  for await (const rows of pages(read, shape)) {
    const records = rows.map((row) => {
      digest.add(row);
      const where = () => `ledger ${from}: table ${shape.name}, row ${shape.primaryKey.map((k) => `${k} ${String(row[k])}`).join(', ')}`;
      return Object.fromEntries(shape.columns.map(({ name, type }) => [name, targetValue(row[name], type, where)]));
    });
    await target.query(insert, [JSON.stringify(records)]);
  }
  return { table: shape.name, rows: digest.rows, digest: digest.hex };
}

/** Reads the table back from the target (the copy's own transaction) and holds it to the source's count and digest. */
async function verifyTable(read: Reader, shape: TableShape, source: CopiedTable, to: string): Promise<void> {
  const digest = new TableDigest(shape);
  for await (const rows of pages(read, shape)) for (const row of rows) digest.add(row);
  if (digest.rows !== source.rows || digest.hex !== source.digest) {
    throw new TransientError(
      `ledger copy to ${to}: table ${shape.name} read back ${digest.rows} row(s), digest ${digest.hex}, where the source has ${source.rows}, digest ${source.digest}: nothing was copied`,
    );
  }
}
