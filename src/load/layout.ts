import { UsageError } from '../errors.js';

export type ColumnType = 'date' | 'decimal' | 'currency' | 'text';

export interface ColumnSpec {
  name: string;
  type: ColumnType;
  required: boolean;
  /** decimal only: the most digits after the point */
  scale?: number;
}

/** What a settlement file looks like: its header, in order, and its natural key. */
export interface Layout {
  columns: ColumnSpec[];
  naturalKey: string;
  /**
   * The longest record read before the file is rejected (`maxRecordBytes` in the settings,
   * not part of a layout's own configuration): it bounds the reader's memory.
   */
  maxRecordBytes?: number;
}

export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

export const DEFAULT_LAYOUT: Layout = {
  columns: [
    { name: 'settlement_date', type: 'date', required: true },
    { name: 'transaction_id', type: 'text', required: true },
    { name: 'merchant_id', type: 'text', required: true },
    { name: 'card_brand', type: 'text', required: true },
    { name: 'transaction_type', type: 'text', required: true },
    { name: 'gross_amount', type: 'decimal', required: true, scale: 2 },
    { name: 'fee_amount', type: 'decimal', required: true, scale: 2 },
    { name: 'net_amount', type: 'decimal', required: true, scale: 2 },
    { name: 'currency', type: 'currency', required: true },
  ],
  naturalKey: 'transaction_id',
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
};

/** The columns every loaded row carries besides the file's own. */
export const PROVENANCE_COLUMNS = ['source_sha256', 'source_name', 'source_line', 'run_id'] as const;

const COLUMN_NAME = /^[a-z_][a-z0-9_]*$/;
const TYPES: readonly ColumnType[] = ['date', 'decimal', 'currency', 'text'];

/** Checks a layout from configuration; a bad one is a usage error, reported before any work. */
export function parseLayout(raw: unknown, where: string): Layout {
  const fail = (what: string): never => {
    throw new UsageError(`${where}: layout ${what}`);
  };
  if (!raw || typeof raw !== 'object') fail('must be an object with "columns" and "naturalKey"');
  const { columns, naturalKey } = raw as { columns?: unknown; naturalKey?: unknown };
  if (!Array.isArray(columns) || columns.length === 0) fail('"columns" must be a non-empty array');
  const specs: ColumnSpec[] = (columns as unknown[]).map((c, i) => {
    if (!c || typeof c !== 'object') return fail(`column ${i + 1} must be an object`);
    const { name, type, required, scale } = c as Record<string, unknown>;
    if (typeof name !== 'string' || !COLUMN_NAME.test(name)) {
      return fail(`column ${i + 1}: "name" must be a lower-case SQL identifier`);
    }
    if (PROVENANCE_COLUMNS.includes(name as (typeof PROVENANCE_COLUMNS)[number])) {
      return fail(`column "${name}" is reserved for provenance`);
    }
    if (typeof type !== 'string' || !TYPES.includes(type as ColumnType)) {
      return fail(`column "${name}": "type" must be one of ${TYPES.join(', ')}`);
    }
    if (required !== undefined && typeof required !== 'boolean') fail(`column "${name}": "required" must be true or false`);
    if (scale !== undefined && (type !== 'decimal' || !Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > 6)) {
      fail(`column "${name}": "scale" is for decimal columns, 0 to 6`);
    }
    return {
      name,
      type: type as ColumnType,
      required: (required as boolean | undefined) ?? true,
      ...(type === 'decimal' ? { scale: (scale as number | undefined) ?? 2 } : {}),
    };
  });
  const names = new Set<string>();
  for (const s of specs) {
    if (names.has(s.name)) fail(`column "${s.name}" appears twice`);
    names.add(s.name);
  }
  const key = naturalKey ?? 'transaction_id';
  if (typeof key !== 'string' || !names.has(key)) fail(`"naturalKey" must name one of its columns`);
  const keySpec = specs.find((s) => s.name === key)!;
  if (!keySpec.required) fail(`natural key "${key}" must be required`);
  return { columns: specs, naturalKey: key as string };
}
