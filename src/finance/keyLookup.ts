import pg from 'pg';
import { tableKey } from '../layout/model/layout.js';
import { comparedAs, showKey } from '../layout/reader/naturalKeys.js';
import type { FinanceTarget } from './target.js';

const { escapeIdentifier: id } = pg;

/**
 * Looks up a batch of natural keys (one column or several) in a layout's table. Text, integer,
 * date and currency key parts are compared as text (PostgreSQL writes them as the reader
 * does); a decimal part as its value (`numeric`: `10.5` is the loaded `10.50`); a timestamp part
 * as the instant (`timestamptz`): a file may write one instant with another offset than the rows
 * loaded before. A layout that numbers repeated keys looks up the table's whole key: the natural
 * key's values, then the occurrence (an integer the caller numbered, `withOccurrence`).
 */
export function keyLookup({ client, schema, layout }: FinanceTarget) {
  const quotedSchema = id(schema);
  const table = `${quotedSchema}.${id(layout.table)}`;
  const positions = layout.naturalKey.map((k) => layout.columns.findIndex((columnSpec) => columnSpec.name === k));
  const keyColumns = tableKey(layout);
  const types = [...positions.map((p) => layout.columns[p]!.type), ...(layout.occurrence !== undefined ? (['integer'] as const) : [])];
  const compare = types.map(comparedAs);
  const CAST: Partial<Record<string, string>> = { timestamp: 'timestamptz', decimal: 'numeric' };
  const params = keyColumns.map((_, i) => `$${i + 1}::text[]`).join(', ');
  const names = keyColumns.map((_, i) => `k${i}`);
  const join = keyColumns
    .map((k, i) => {
      const cast = CAST[types[i]!];
      return cast ? `t.${id(k)} = k.${names[i]}::${cast}` : `t.${id(k)}::text = k.${names[i]}`;
    })
    .join(' AND ');
  // a key's identity is its exact values (a NUL never is in one), a decimal's its value, a
  // timestamp's its instant; `show` cuts long values for messages
  const identity = (values: string[]) => values.map((v, i) => compare[i]!(v)).join('\0');
  const columns = (keys: string[][]) => keyColumns.map((_, i) => keys.map((k) => k[i]!));
  const keyText = (row: Record<string, string>) => identity(names.map((n) => row[n]!));
  return {
    /** a row's key values, in the key's order */
    keyOf: (values: (string | null)[]): string[] => positions.map((p) => values[p]!),
    /** a row's whole key with the occurrence a caller numbered (`keyOf`'s values, then the number) */
    withOccurrence: (values: string[], occurrence: number): string[] => [...values, String(occurrence)],
    /** how messages quote a key: each value quoted, side by side, and its occurrence */
    show: (values: string[]): string =>
      layout.occurrence === undefined ? showKey(values) : `${showKey(values.slice(0, -1))} (occurrence ${values.at(-1)!})`,
    /** what tells two keys apart: the maps and sets below are keyed by it */
    identity,
    /** the keys of the batch the table holds */
    async present(keys: string[][]): Promise<Set<string>> {
      const queryResult = await client.query<Record<string, string>>(
        `SELECT ${names.map((n) => `k.${n}`).join(', ')} FROM unnest(${params}) AS k(${names.join(', ')})
          WHERE EXISTS (SELECT 1 FROM ${table} t WHERE ${join})`,
        columns(keys),
      );
      return new Set(queryResult.rows.map(keyText));
    },
    /** the keys of the batch loaded from another content, each with "FILE (run RUN)" */
    async loadedFrom(keys: string[][], exceptSha256: string): Promise<Map<string, string>> {
      const r = await client.query<Record<string, string>>(
        `SELECT ${names.map((n) => `k.${n}`).join(', ')}, f.file_name, l.run_id
           FROM unnest(${params}) AS k(${names.join(', ')})
           JOIN ${table} t ON ${join}
           JOIN ${quotedSchema}.loads l ON l.load_id = t.load_id
           JOIN ${quotedSchema}.file_loads f ON f.sha256 = l.sha256
          WHERE l.sha256 <> $${names.length + 1}`,
        [...columns(keys), exceptSha256],
      );
      return new Map(r.rows.map((row) => [keyText(row), `${row.file_name!} (run ${row.run_id!})`]));
    },
  };
}
