/** What a partner's settlement file looks like, and which table its rows go to. */

export type ColumnType = 'text' | 'decimal' | 'date' | 'timestamp' | 'currency' | 'integer';

/**
 * A timestamp column whose zone is the report's own: the layout's `timeZone`, else the zone the
 * file's name ends with (`…_America-Chicago.csv`, as Stripe's Dashboard names a download).
 */
export const LOCAL_ZONE = 'local';

/** A decimal column kept with as many places as the file wrote (an exchange rate): `numeric` without a scale. */
export const AS_WRITTEN = 'asWritten';

/** `minorUnits` of a decimal column whose rows are each in the minor unit of their own currency (JPY 0 places, USD 2, KWD 3). */
export const OWN_CURRENCY = 'currency';

/** Another header text a column may be found under, when its own is absent (Stripe's `created` for `created_utc`). */
export interface ColumnSource {
  header: string;
  /** the zone of the times found under this header, when it differs from the column's */
  timeZone?: string;
}

/** The sign of an amount written unsigned, given by another column (PayPal's `DR`/`CR`). */
export interface SignRule {
  /** the layout column holding the debit/credit mark */
  from: string;
  negative: string[];
  positive: string[];
}

/** How an amount may say its sign beyond a leading minus (ColumnSpec.notation). */
export const AMOUNT_NOTATIONS = ['brackets', 'plus', 'debitCredit', 'trailingMinus'] as const;
export type AmountNotation = (typeof AMOUNT_NOTATIONS)[number];

export interface ColumnSpec {
  /** the table's column: a lower-case SQL identifier */
  name: string;
  /** the partner's header text for it (matched exactly, after trimming spaces) */
  from: string;
  /** other header texts to look for, in order, when `from` is absent */
  alternatives?: ColumnSource[];
  /** the header names `from` several times: the 1-based one meant */
  occurrence?: number;
  /** a file without a header: the column's 1-based field */
  position?: number;
  type: ColumnType;
  required: boolean;
  /** decimal only: the most digits after the decimal mark, or `asWritten` (any, kept as written) */
  scale?: number | typeof AS_WRITTEN;
  /**
   * decimal only: the file writes whole minor units (`10400` for 104.00): the places implied,
   * or `currency`: each row's own currency's (ISO 4217), that currency from `currencyFrom`
   */
  minorUnits?: number | typeof OWN_CURRENCY;
  /** decimal with `minorUnits: "currency"`: the currency column giving each row's minor unit */
  currencyFrom?: string;
  /** decimal only: the currency symbols or codes a value may carry before or after its number (`€`, `US$`, `EUR`) */
  currencySymbols?: string[];
  /** decimal only: written unsigned, its sign from another column */
  sign?: SignRule;
  /**
   * decimal only: the ways its values say their sign beyond a leading minus, each declared:
   * `brackets` (`(300.00)` is -300.00), `plus` (`+10000.00`), `debitCredit` (a `Dr`/`Cr`, `D`/`C`
   * mark before or after, any case: debit negative), `trailingMinus` (`300.00-`)
   */
  notation?: AmountNotation[];
  /** decimal only: the values that mean no amount (`-`): read as an empty value */
  noAmount?: string[];
  /** currency only: the currency is the ISO code written inside this decimal column's values (`JPY 1000.00`) */
  inAmount?: string;
  /** date and timestamp: the partner's pattern, e.g. `dd/MM/yyyy` or `yyyy-MM-dd HH:mm:ss` */
  format?: string;
  /** timestamp: the zone its wall-clock times are in (IANA name, `UTC`, `+01:00`, or `local`) */
  timeZone?: string;
  /** timestamp: the layout column whose value names each row's zone (Adyen's `TimeZone`) */
  timeZoneFrom?: string;
  /** timestamp: the layout column holding the time of day, when the file writes date and time apart */
  timeFrom?: string;
  /** spaces (U+0020, tabs, no-break and thin spaces) around the value are no part of it */
  trim?: boolean;
  /**
   * A figure the file states once (one of the layout's `captures`): `fills`, written with no
   * `from` (or `position`), every row's value is it (dLocal's settlement currency); otherwise each
   * row's own value must equal it.
   */
  capture?: { name: string; fills: boolean };
  /**
   * date and timestamp with a format that writes no year: where the year comes from, `delivery`
   * (the nearest to the day the file was delivered) or one of the layout's `captures` (a year, or
   * a date the rows' days are nearest to). reader/yearOf.ts.
   */
  year?: string;
  /** date and timestamp: the markers `a` reads, before noon and after noon (`["上午", "下午"]`); AM and PM by default */
  dayPeriods?: [string, string];
}

/** `year` of a column: the day the file was delivered (its upload's time as the intake listed it). */
export const DELIVERY_YEAR = 'delivery';

/**
 * A figure a file states once, outside its rows: in a line of its preamble or one of its
 * leading records (by a pattern), in a leading record's field, or in the file's name. Read
 * before the first row; a file without it is rejected naming the capture. Used by columns
 * (`capture`, `year`) and by the `statement` control totals.
 */
export interface Capture {
  name: string;
  /**
   * a pattern over the preamble's lines (`skipLines`) and the leading records, or, `at` the
   * footer, over the footer's lines: the first line it matches, its `group`
   */
  line?: RegExp;
  /** `footer`: `line` reads the lines after the rows (the layout's `footer`), known only once they are read; above the rows otherwise */
  at?: 'footer';
  /** a pattern over the name the file was delivered under: its `group` */
  fileName?: RegExp;
  /** the pattern's group holding the figure: its 1-based number or its name (`(?<count>…)`); the first by default */
  group?: number | string;
  /** a leading record, by its first field, and the 1-based field holding the figure */
  record?: { type: string; field: number };
}

/**
 * Free-text lines after the rows (an Alipay export's `#-----…交易记录明细列表结束-----`, `#共13笔记录`,
 * `#导出时间：…`): never read as records, set aside, their figures read by `captures` `at` the footer.
 * Where the rows end is declared, never guessed: by a line (the first after the header that
 * `startsAt` matches: it and every line after it are the footer) or by a count (the file's last
 * `lines` lines that are not blank). reader/csvRecords.ts finds it; reader/footer.ts checks it.
 */
export interface Footer {
  startsAt?: RegExp;
  lines?: number;
}

/** The most lines a `footer` of `lines` may hold back: the reader keeps them in memory until the file ends. */
export const MAX_FOOTER_LINES = 100;

/** Rows that are counted but not loaded: a partner's payout, fee or summary lines. */
export interface SkipRule {
  /** the layout column (or, for a column the table does not keep, the header text) looked at */
  column: string;
  values: string[];
}

/** A closing total line: the file is complete only when it is there and agrees. */
export interface Trailer {
  /** the trailer's first field, e.g. `Total` (in a file of record types: the trailer's type) */
  firstField: string;
  /** which field (1-based) of the trailer holds the number of data rows */
  rowCountField?: number;
  /** which field (1-based) holds the sum of one decimal column over the data rows */
  sumField?: number;
  sumOf?: string;
}

/*
 * Control totals (docs/DESIGN.md invariant 9, checked in reader/totalsCheck.ts): figures a file states about its
 * own rows, or a balance rule its partner documents.
 */

/** One figure of a total record: the sum of a decimal column over the group's rows. */
export interface TotalSum {
  /** the record's 1-based field holding the figure */
  field: number;
  /** the layout's decimal column summed */
  of: string;
  /**
   * Only the rows of one sign, the figure written unsigned: `credit` (the column's sign rule
   * says positive, or the value is above zero) or `debit` (negative). Without it: every row,
   * the figure signed as the column is.
   */
  sign?: 'credit' | 'debit';
}

/** A record of the file stating its rows' figures (dLocal's HEADER, PayPal's SF and RF). */
export interface TotalRecord {
  kind: 'record';
  /** the record's first field (its type) */
  record: string;
  /** `top`: one of the layout's `leadingRecords` (above the header); `footer`: after the rows it totals */
  at: 'top' | 'footer';
  /** per group: the column whose value the record names, and the record's field naming it */
  groupBy?: { column: string; field: number };
  /** the record's field holding the number of rows (of its group) */
  count?: number;
  sums: TotalSum[];
  /** `stated`: the rows' sum rounded (half away from zero) to the places the figure is written with (dLocal's cents) */
  rounding: 'exact' | 'stated';
  /** every group that has rows must have its record (else only the groups the records name are checked) */
  everyGroup: boolean;
}

/** A rule the partner documents: the group's amounts net to zero (an Adyen batch with its payout line). */
export interface BalanceRule {
  kind: 'balance';
  /** the columns that make a group (Adyen: the batch and the net currency) */
  groupBy: string[];
  /** the decimal columns added up, a leading `-` subtracting one (`net_credit`, `-net_debit`) */
  sum: { column: string; negative: boolean }[];
  /** only the groups holding a row whose column has one of these values (the payout line) */
  when?: { column: string; values: string[] };
}

/** One figure a statement states about its rows outside any record: one of the layout's `captures`. */
export interface StatementSum {
  capture: string;
  of: string;
  sign?: 'credit' | 'debit';
}

/**
 * Figures a statement states in its preamble, title or footer lines (layout `captures`): the number of
 * rows ("共66笔记录"), sums of a column, and an opening and a closing balance the rows' amounts
 * must bridge (opening + the sum of `of` = closing).
 */
export interface StatementTotal {
  kind: 'statement';
  /** the capture stating the number of rows */
  count?: string;
  sums: StatementSum[];
  /** `of`: the decimal columns the rows move the balance by, added up (a statement's debit and credit columns) */
  bridge?: { of: string[]; opening: string; closing: string };
}

export type Total = TotalRecord | BalanceRule | StatementTotal;

/**
 * What a record of a file of several record types is, told by its first field: `data` (a row
 * to load), `header` (names the data records' fields), `skip` (counted as left out, not
 * loaded), `info` (a section header or a footer of totals: neither loaded nor counted), or a
 * `count` record whose `field` states how many data records came since the last one of its type.
 */
export type RecordRole = { role: 'data' } | { role: 'header' } | { role: 'skip' } | { role: 'info' } | { role: 'count'; field: number };

export interface Layout {
  /** the preset's name, or `custom` */
  name: string;
  /** the table the rows go to, in the finance schema */
  table: string;
  delimiter: string;
  /** the files' encoding as `TextDecoder` names it (`windows-1252`, `utf-16le`), or `utf-16` for "by its BOM"; UTF-8 when absent */
  encoding?: string;
  decimalMark: '.' | ',';
  /** '' for none; `'` also reads U+2019, ' ' also no-break, thin and narrow no-break spaces */
  groupSeparator: '' | ',' | '.' | ' ' | "'";
  /** preamble lines before the header */
  skipLines: number;
  /** false: the file has no header line; every column says its `position` */
  header: boolean;
  /** the zone of timestamp columns that give none and of `local` ones */
  timeZone?: string;
  /** the languages (canonical BCP 47 tags) whose month names dates may use, besides English */
  locale?: string[];
  /** codes a partner writes for an ISO 4217 currency (`RUR` for `RUB`): read as that currency, in currency columns and amounts */
  currencyAliases?: Readonly<Record<string, string>>;
  columns: ColumnSpec[];
  /** one column or several: UNIQUE in the table (with `occurrence`, that column too) */
  naturalKey: string[];
  /**
   * A statement without ids: the table column numbering the n-th row of a file with the same
   * natural key values (1, 2, …, in the file's order), part of the UNIQUE key, so that two identical
   * lines (two coffees on one day) are two rows and a re-export numbers them alike.
   */
  occurrence?: string;
  /**
   * A row whose key another file already loaded is compared with the loaded row: identical, it is
   * counted as seen before and not loaded again; different, the file is refused naming both
   * (finance/stagedLoad.ts). Without it such a row refuses the file as a key loaded before.
   */
  seenBefore?: boolean;
  extraColumns: 'ignore' | 'reject';
  skipRows: SkipRule[];
  trailer?: Trailer;
  /** free-text lines after the rows, set aside (never rows): where they start is declared */
  footer?: Footer;
  /** a file of several record types, by the text of their first field */
  recordTypes?: ReadonlyMap<string, RecordRole>;
  /** summary records after the preamble and above the header (dLocal's HEADER): counted, not loaded; `totals` may check them */
  leadingRecords?: number;
  /** spaces and tabs after a closing quote, before the delimiter or the line end, are skipped (`"3985734"\t,`) */
  spaceAfterQuote?: boolean;
  /** a line of spaces and tabs only is a blank line, not a record */
  whiteLinesBlank?: boolean;
  /** a record narrower than the header is joined with the lines that continue it (reader/csvRecords.ts, ContinuationLines) */
  continuationLines?: boolean;
  /** a row with fewer fields than the header reads the missing last ones as empty (DuckDB's `null_padding`) */
  nullPadding?: boolean;
  /** figures the file states once, outside its rows: read before the first row (reader/captures.ts) */
  captures?: readonly Capture[];
  /** the control totals the rows must agree with before any is loaded (reader/totalsCheck.ts) */
  totals?: readonly Total[];
  /**
   * The longest record read before the file is rejected (`maxRecordBytes` in the settings,
   * not part of a layout's own configuration): it bounds the reader's memory.
   */
  maxRecordBytes?: number;
}

export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/** The columns every loaded row carries besides the file's own: which load (file and run) and which line. */
export const PROVENANCE_COLUMNS = ['load_id', 'source_line'] as const;

/**
 * The most columns a layout may have: a PostgreSQL table holds 1600, and the provenance takes
 * its own. A wider file is refused by its layout (a header's extra columns are only ignored).
 */
export const MAX_LAYOUT_COLUMNS = 1600 - PROVENANCE_COLUMNS.length;

/** Names a layout column may not take: the provenance and the old provenance of migrated tables. */
export const RESERVED_COLUMNS: readonly string[] = [...PROVENANCE_COLUMNS, 'source_sha256', 'source_name', 'run_id'];

/** A column as the default layout writes it: required, named as its header, decimals with 2 places. */
const layoutColumn = (name: string, type: ColumnType): ColumnSpec => ({
  name,
  from: name,
  type,
  required: true,
  ...(type === 'decimal' ? { scale: 2 } : {}),
});

/** Shared by every layout that does not say otherwise. */
export const LAYOUT_DEFAULTS = {
  delimiter: ',',
  decimalMark: '.',
  groupSeparator: '',
  skipLines: 0,
  header: true,
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

/** The table's UNIQUE key: the natural key's columns, then the occurrence column when the layout numbers repeats. */
export function tableKey(layout: Layout): string[] {
  return layout.occurrence === undefined ? layout.naturalKey : [...layout.naturalKey, layout.occurrence];
}

/**
 * Whether a file's rows reach the table through a staging table of the load's transaction
 * (finance/stagedLoad.ts): to number repeated keys (`occurrence`) or to compare rows seen before.
 */
export const loadsThroughStaging = (layout: Layout): boolean => layout.occurrence !== undefined || layout.seenBefore === true;

/** Key columns that may be empty: an empty one is stored as '' (never NULL, which UNIQUE would not compare). */
export function optionalKeyColumns(layout: Layout): string[] {
  return layout.naturalKey.filter((k) => !layout.columns.find((c) => c.name === k)!.required);
}

/** The delimiters a layout may name. */
export const DELIMITERS = [',', ';', '|', '\t'];
/** `'` reads the typographic apostrophe U+2019 too, `' '` the no-break, thin and narrow no-break spaces */
export const GROUP_SEPARATORS = ['', ',', '.', ' ', "'"];
