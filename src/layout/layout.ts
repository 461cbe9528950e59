/** What a partner's settlement file looks like, and which table its rows go to. */

export type ColumnType = 'text' | 'decimal' | 'date' | 'timestamp' | 'currency' | 'integer';

export interface ColumnSpec {
  /** the table's column: a lower-case SQL identifier */
  name: string;
  /** the partner's header text for it (matched exactly, after trimming spaces) */
  from: string;
  type: ColumnType;
  required: boolean;
  /** decimal only: the most digits after the decimal mark */
  scale?: number;
  /** date and timestamp: the partner's pattern, e.g. `dd/MM/yyyy` or `yyyy-MM-dd HH:mm:ss` */
  format?: string;
  /** timestamp: the zone its wall-clock times are in (IANA name, `UTC` or `+01:00`) */
  timeZone?: string;
  /** timestamp: the layout column whose value names each row's zone (Adyen's `TimeZone`) */
  timeZoneFrom?: string;
}

/** Rows that are counted but not loaded: a partner's payout, fee or summary lines. */
export interface SkipRule {
  /** the layout column (or, for a column the table does not keep, the header text) looked at */
  column: string;
  values: string[];
}

/** A closing total line: the file is complete only when it is there and agrees. */
export interface Trailer {
  /** the trailer's first field, e.g. `Total` */
  firstField: string;
  /** which field (1-based) of the trailer holds the number of data rows */
  rowCountField?: number;
  /** which field (1-based) holds the sum of one decimal column over the data rows */
  sumField?: number;
  sumOf?: string;
}

export interface Layout {
  /** the preset's name, or `custom` */
  name: string;
  /** the table the rows go to, in the finance schema */
  table: string;
  delimiter: string;
  decimalMark: '.' | ',';
  /** '' for none */
  groupSeparator: '' | ',' | '.' | ' ';
  /** preamble lines before the header */
  skipLines: number;
  columns: ColumnSpec[];
  /** one column or several: UNIQUE in the table */
  naturalKey: string[];
  extraColumns: 'ignore' | 'reject';
  skipRows: SkipRule[];
  trailer?: Trailer;
  /**
   * The longest record read before the file is rejected (`maxRecordBytes` in the settings,
   * not part of a layout's own configuration): it bounds the reader's memory.
   */
  maxRecordBytes?: number;
}

export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/** The columns every loaded row carries besides the file's own: which load (file and run) and which line. */
export const PROVENANCE_COLUMNS = ['load_id', 'source_line'] as const;

/** Names a layout column may not take: the provenance and the old provenance of migrated tables. */
export const RESERVED_COLUMNS: readonly string[] = [...PROVENANCE_COLUMNS, 'source_sha256', 'source_name', 'run_id'];

/** A column as presets write it: required, named as its header, decimals with 2 places unless said otherwise. */
export const layoutColumn = (name: string, type: ColumnType, extra: Partial<ColumnSpec> = {}): ColumnSpec => ({
  name,
  from: name,
  type,
  required: true,
  ...(type === 'decimal' ? { scale: 2 } : {}),
  ...extra,
});

/** Shared by every layout that does not say otherwise. */
export const LAYOUT_DEFAULTS = {
  delimiter: ',',
  decimalMark: '.',
  groupSeparator: '',
  skipLines: 0,
  extraColumns: 'ignore',
  skipRows: [],
} as const satisfies Partial<Layout>;

export const DEFAULT_LAYOUT: Layout = {
  ...LAYOUT_DEFAULTS,
  skipRows: [],
  name: 'default',
  table: 'settlement_rows',
  columns: [
    layoutColumn('settlement_date', 'date'),
    layoutColumn('transaction_id', 'text'),
    layoutColumn('merchant_id', 'text'),
    layoutColumn('card_brand', 'text'),
    layoutColumn('transaction_type', 'text'),
    layoutColumn('gross_amount', 'decimal'),
    layoutColumn('fee_amount', 'decimal'),
    layoutColumn('net_amount', 'decimal'),
    layoutColumn('currency', 'currency'),
  ],
  naturalKey: ['transaction_id'],
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
};

/** How messages name a natural key: `transaction_id`, or `(merchant_account, psp_reference)`. */
export function keyName(layout: Layout): string {
  return layout.naturalKey.length === 1 ? layout.naturalKey[0]! : `(${layout.naturalKey.join(', ')})`;
}
