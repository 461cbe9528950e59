import { LONG_NAMES, TIME_OF_DAY } from '../calendar/expect.js';
import { DURATION_TEXT } from '../durations.js';
import {
  AMOUNT_NOTATIONS,
  AS_WRITTEN,
  DELIMITERS,
  GROUP_SEPARATORS,
  LAYOUT_DEFAULTS,
  DELIVERY_YEAR,
  LOCAL_ZONE,
  MAX_FOOTER_LINES,
  MAX_LAYOUT_COLUMNS,
  OWN_CURRENCY,
} from '../layout/model/layout.js';
import { COLUMN_KEYS, COLUMN_TYPES, IDENTIFIER } from '../layout/model/layoutColumns.js';
import { LAYOUT_KEYS, ROLES } from '../layout/model/layoutObject.js';
import { PRESETS } from '../layout/model/presets.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionKind, type OptionSpec, type SettingKey } from './optionTable.js';
import { defaultText, durationText, shownDefault } from './optionSpec.js';
import { EXPECT_FILES, EXPECT_KEYS } from './calendarSettings.js';
import { numberRange } from './settingValues.js';
import { caseless, nameListSchema, NOT_BLANK, SWITCH_TEXT, wholeNumberSchema, type Schema } from './valueRules.js';
import { PARTNER_NAME } from './configFile.js';

export type { Schema } from './valueRules.js';

/**
 * The config file's JSON Schema (draft 2020-12), for an editor to complete and check it with:
 * every setting of the option table with its kind, help text and default, `"partners"` with the
 * settings a partner may set, `"expect"`, and a layout (a preset's name or an object) with the
 * keys the layout reader knows. Made from those sources each time, so it never drifts from them;
 * where a key's rule is code (a layout's checks, a time zone), the schema says what it can and
 * settle-ingest says the rest, naming the key.
 */
export function configJsonSchema(): Schema {
  const settings = (keys: SettingKey[]) => Object.fromEntries(keys.map((key) => [key, settingSchema(key)]));
  const partnerKeys = SETTING_KEYS.filter((k) => (OPTION_TABLE[k] as OptionSpec).scope !== 'shared');
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'urn:settle-ingest:config',
    title: 'settle-ingest config file',
    description: 'The settings of settle-ingest (--config); flags and environment variables override them.',
    type: 'object',
    properties: {
      $schema: { type: 'string', description: 'where an editor finds this schema; settle-ingest ignores it' },
      ...settings(SETTING_KEYS),
      partners: {
        description:
          'one entry per partner, by name: its own settings, and any setting of the top it changes (the shared ones — ledger, database, log — stand at the top only)',
        type: 'object',
        minProperties: 1,
        propertyNames: { pattern: PARTNER_NAME.source },
        additionalProperties: { type: 'object', additionalProperties: false, properties: settings(partnerKeys) },
      },
    },
    additionalProperties: false,
    $defs: {
      duration: duration(),
      expect: expectSchema(),
      layout: {
        description: `a preset's name (${[...PRESETS.keys()].join(', ')}) or a layout object`,
        anyOf: [{ type: 'string', enum: [...PRESETS.keys()] }, { $ref: '#/$defs/layoutObject' }],
      },
      layoutObject: layoutObjectSchema(),
      column: columnSchema(),
    },
  };
}

/** A duration: seconds as a JSON number, or text by the one grammar parseDuration reads (durations.ts), at least `min` seconds as a number. */
const duration = (min = 0): Schema => ({
  anyOf: [
    { type: 'number', minimum: min },
    { type: 'string', pattern: DURATION_TEXT.source },
  ],
});

/**
 * What a setting's value may be in the file, by its kind: each made from the grammar its parser
 * in settingValues.ts reads by (valueRules.ts), so that the schema and settle-ingest take the same values.
 */
const KIND_SCHEMA: { [K in OptionKind]: (spec: OptionSpec) => Schema } = {
  string: (spec) =>
    spec.choices
      ? { type: 'string', enum: [...spec.choices] }
      : { type: 'string', pattern: NOT_BLANK.source, ...(spec.format ? { allOf: [{ pattern: spec.format.pattern.source }] } : {}) },
  // a least above 0 is held for seconds as a number; text under it (`"0.5"` for 1s) is refused by settle-ingest alone, naming the key
  duration: (spec) => (spec.range?.min ? duration(spec.range.min) : { $ref: '#/$defs/duration' }),
  count: (spec) => wholeNumberSchema(numberRange(spec)),
  bytes: (spec) => wholeNumberSchema(numberRange(spec)),
  globs: () => nameListSchema({ minItems: 0 }),
  paths: () => nameListSchema({ minItems: 1 }),
  layout: () => ({ $ref: '#/$defs/layout' }),
  expect: () => ({ anyOf: [{ $ref: '#/$defs/expect' }, { type: 'null' }] }),
  // `true`/`false`, or the environment's words in either case
  switch: () => ({ anyOf: [{ type: 'boolean' }, { type: 'string', pattern: SWITCH_TEXT.source }] }),
};

function settingSchema(key: SettingKey): Schema {
  const spec = OPTION_TABLE[key] as OptionSpec;
  const where = [spec.flag ? `flag ${spec.flag}` : null, spec.env ? `env ${spec.env}` : null].filter(Boolean).join(', ');
  const shown = shownDefault(spec);
  const notes = [where, shown !== undefined ? `default ${shown}` : null, spec.path ? 'relative to the config file' : null]
    .filter(Boolean)
    .join('; ');
  return {
    description: `${spec.description}${notes ? ` (${notes})` : ''}`,
    ...KIND_SCHEMA[spec.kind](spec),
    ...(spec.default !== undefined ? { default: fileDefault(spec) } : {}),
  };
}

/** The default as the file would write it: a duration as text (`30s`), a number, name or switch as itself. */
const fileDefault = (spec: OptionSpec): unknown => (spec.kind === 'duration' ? defaultText(spec) : spec.default);

/** calendar/expect.ts's weekday names: the first three letters or the whole name. */
const WEEKDAY = `^\\s*(?:${LONG_NAMES.map((n) => `${caseless(n.slice(0, 3))}(?:${caseless(n.slice(3))})?`).join('|')})\\s*$`;

function expectSchema(): Schema {
  const properties: Record<string, Schema> = {
    every: {
      description: '"day", "business day", or the weekdays owed, such as ["Mon", "Thu"]',
      anyOf: [
        { type: 'string', enum: ['day', 'business day'] },
        { type: 'array', items: { type: 'string', pattern: WEEKDAY }, minItems: 1 },
      ],
      default: 'day',
    },
    by: {
      description: 'the local time a day\'s files are due by, such as "04:00"',
      type: 'string',
      pattern: TIME_OF_DAY.source,
    },
    timeZone: {
      description: 'the partner\'s zone, an IANA name such as "Europe/Amsterdam", or "UTC"',
      type: 'string',
      pattern: '^(?:UTC|[^/]+/.+)$',
      examples: ['Europe/Amsterdam', 'UTC'],
    },
    holidays: {
      description: 'a country or region code of date-holidays (NL, DE-BY): its public holidays are never owed',
      type: 'string',
      minLength: 2,
    },
    files: { description: "how many files make a day's delivery", ...wholeNumberSchema(EXPECT_FILES), default: 1 },
    warnAfter: { description: 'how late a day may be before it is a warning', $ref: '#/$defs/duration', default: '0' },
    errorAfter: { description: 'how late a day may be before it is an error', $ref: '#/$defs/duration', default: durationText(24 * 3600) },
  };
  return {
    description: OPTION_TABLE.expect.description,
    type: 'object',
    properties: each(EXPECT_KEYS, properties, 'expect'),
    required: ['by', 'timeZone'],
    additionalProperties: false,
  };
}

/**
 * The schema of each key the reader knows, in the reader's order: a key the reader learns
 * without a schema here stops the schema being made (and its test), rather than being left out.
 */
function each(keys: readonly string[], schemas: Record<string, Schema>, what: string): Record<string, Schema> {
  const missing = keys.filter((k) => !(k in schemas));
  if (missing.length > 0) throw new Error(`the config schema has no entry for ${what} key ${missing.join(', ')}`);
  return Object.fromEntries(keys.map((k) => [k, schemas[k]!]));
}

const identifier = (description: string): Schema => ({ description, type: 'string', pattern: IDENTIFIER.source });
const positionField = (description: string): Schema => ({ description, type: 'integer', minimum: 2 });
/** A capture pattern's group holding the figure: its number or its name. */
const captureGroup: Schema = {
  description: "the pattern's group holding the figure: its number (the first by default) or its name",
  anyOf: [
    { type: 'integer', minimum: 1 },
    { type: 'string', minLength: 1 },
  ],
};

/** The layout object's keys, each as layout/model/layoutObject.ts reads it. */
function layoutObjectSchema(): Schema {
  const recordRole: Schema = {
    anyOf: [
      { type: 'string', enum: [...ROLES] },
      {
        type: 'object',
        properties: { count: positionField('the field holding the number of data records') },
        required: ['count'],
        additionalProperties: false,
      },
    ],
  };
  const properties: Record<string, Schema> = {
    extends: { description: 'a preset this layout changes only where it says', type: 'string', enum: [...PRESETS.keys()] },
    table: identifier('the finance table the rows go to (default settlement_rows)'),
    delimiter: { type: 'string', enum: DELIMITERS, default: LAYOUT_DEFAULTS.delimiter },
    encoding: {
      description: "the files' encoding, a WHATWG label (iso-8859-1, windows-1250, utf-16le, utf-16: by its BOM…)",
      type: 'string',
      default: 'utf-8',
    },
    decimalMark: { type: 'string', enum: ['.', ','], default: LAYOUT_DEFAULTS.decimalMark },
    groupSeparator: { type: 'string', enum: GROUP_SEPARATORS, default: LAYOUT_DEFAULTS.groupSeparator },
    skipLines: { description: 'lines before the header (or the first record)', type: 'integer', minimum: 0, maximum: 1000, default: 0 },
    header: { description: 'true: columns by header name; false: by position', type: 'boolean', default: LAYOUT_DEFAULTS.header },
    timeZone: { description: "the zone of the file's times (IANA name, UTC or an offset)", type: 'string' },
    currencyAliases: {
      description: 'the codes the partner writes for an ISO 4217 currency, such as {"RUR": "RUB"}: each alias no active code itself',
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: '^[A-Z]{2,8}$' },
      additionalProperties: { type: 'string', pattern: '^[A-Z]{3}$' },
    },
    locale: {
      description: 'the languages (BCP 47 tags) whose month names dates may use (MMM, MMMM), besides English',
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
      ],
    },
    columns: {
      description: 'the columns, in any order; in a layout that extends a preset, an object of changes by name (null drops one)',
      anyOf: [
        { type: 'array', items: { $ref: '#/$defs/column' }, minItems: 1, maxItems: MAX_LAYOUT_COLUMNS },
        { type: 'object', additionalProperties: { anyOf: [{ type: 'null' }, columnSchema({ change: true })] } },
      ],
    },
    naturalKey: {
      description: 'the column, or columns, that name a row uniquely (default transaction_id)',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }],
    },
    occurrence: {
      description:
        'a statement without ids: the table column (true: "occurrence") numbering the rows of a file with the same natural key values 1, 2, … in the file\'s order, part of the UNIQUE key, so that two identical lines are two rows',
      anyOf: [{ type: 'boolean' }, { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' }],
    },
    seenBefore: {
      description:
        'a row whose key another file loaded is compared with the loaded row: identical, counted as seen before and not loaded again; different, the file is refused naming both (default: true with "occurrence", else false)',
      type: 'boolean',
    },
    extraColumns: { type: 'string', enum: ['ignore', 'reject'], default: LAYOUT_DEFAULTS.extraColumns },
    skipRows: {
      description: 'rows counted but not loaded',
      type: 'array',
      items: {
        type: 'object',
        properties: { column: { type: 'string', minLength: 1 }, values: { type: 'array', items: { type: 'string' }, minItems: 1 } },
        required: ['column', 'values'],
      },
    },
    trailer: {
      description: 'the closing record: its first field, and where it gives the row count or the sum',
      type: 'object',
      properties: {
        firstField: { type: 'string', minLength: 1 },
        rowCountField: positionField('the field holding the row count'),
        sumField: positionField('the field holding the sum'),
        sumOf: { description: 'the decimal column summed', type: 'string' },
      },
      required: ['firstField'],
    },
    footer: {
      description:
        'free-text lines after the rows, set aside (never rows; their figures read by "captures" with "at": "footer"): {"startsAt": PATTERN} (the first line after the header it matches, and every line after it) or {"lines": N} (the last N lines that are not blank)',
      anyOf: [
        {
          type: 'object',
          properties: { startsAt: { description: "a regular expression matching the footer's first line", type: 'string', minLength: 1 } },
          required: ['startsAt'],
          additionalProperties: false,
        },
        {
          type: 'object',
          properties: { lines: { type: 'integer', minimum: 1, maximum: MAX_FOOTER_LINES } },
          required: ['lines'],
          additionalProperties: false,
        },
      ],
    },
    recordTypes: {
      description: 'each record type (its first field) and its role',
      type: 'object',
      additionalProperties: { anyOf: [recordRole, { type: 'null' }] },
    },
    spaceAfterQuote: {
      description: 'spaces and tabs after a closing quote, before the delimiter or the line end, are skipped ("3985734"\\t,)',
      type: 'boolean',
      default: false,
    },
    whiteLinesBlank: { description: 'a line of spaces and tabs only is a blank line, not a record', type: 'boolean', default: false },
    continuationLines: {
      description:
        'a record narrower than the header is joined with the next lines while together they are no wider (a value broken by a line end)',
      type: 'boolean',
      default: false,
    },
    nullPadding: {
      description:
        'a row with fewer fields than the header has its missing last fields empty (a record cut short at the end of the file is still not ready)',
      type: 'boolean',
      default: false,
    },
    leadingRecords: {
      description: 'summary records above the header (counted, not loaded; "totals" may check them)',
      type: 'integer',
      minimum: 0,
      maximum: 100,
    },
    captures: {
      description:
        'figures a file states once, outside its rows, by name: {"line": PATTERN} (the preamble and leading records; with "at": "footer", the footer\'s lines), {"fileName": PATTERN} (a group holds the figure: the first, or "group") or {"record": TYPE, "field": N}',
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: '^[a-z_][a-z0-9_]{0,62}$' },
      additionalProperties: {
        anyOf: [
          {
            type: 'object',
            properties: {
              line: { type: 'string', minLength: 1 },
              at: {
                description: 'where the line is: above the rows (top, the default) or in the footer',
                type: 'string',
                enum: ['top', 'footer'],
              },
              group: captureGroup,
            },
            required: ['line'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { fileName: { type: 'string', minLength: 1 }, group: captureGroup },
            required: ['fileName'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { record: { type: 'string', minLength: 1 }, field: positionField('the field holding the figure') },
            required: ['record', 'field'],
            additionalProperties: false,
          },
        ],
      },
    },
    totals: {
      description: "control totals checked before a row is loaded: total records, balance rules and a statement's captured figures",
      type: 'array',
      minItems: 1,
      items: {
        anyOf: [
          {
            type: 'object',
            properties: {
              record: { type: 'string', minLength: 1 },
              at: { type: 'string', enum: ['top', 'footer'] },
              groupBy: {
                type: 'object',
                properties: { column: { type: 'string' }, field: positionField('the field naming the group') },
                required: ['column', 'field'],
              },
              count: positionField('the field holding the number of rows'),
              sums: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    field: positionField('the field holding the sum'),
                    of: { type: 'string' },
                    sign: { type: 'string', enum: ['credit', 'debit'] },
                  },
                  required: ['field', 'of'],
                },
              },
              rounding: { type: 'string', enum: ['exact', 'stated'] },
              everyGroup: { type: 'boolean' },
            },
            required: ['record'],
          },
          {
            type: 'object',
            properties: {
              rule: { const: 'balance' },
              groupBy: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }] },
              sum: { type: 'array', items: { type: 'string' }, minItems: 1 },
              when: {
                type: 'object',
                properties: { column: { type: 'string' }, values: { type: 'array', items: { type: 'string' }, minItems: 1 } },
                required: ['column', 'values'],
              },
            },
            required: ['rule', 'groupBy', 'sum'],
          },
          {
            type: 'object',
            properties: {
              statement: {
                type: 'object',
                properties: {
                  count: { description: 'the capture stating the number of rows', type: 'string' },
                  sums: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        capture: { type: 'string' },
                        of: { type: 'string' },
                        sign: { type: 'string', enum: ['credit', 'debit'] },
                      },
                      required: ['capture', 'of'],
                      additionalProperties: false,
                    },
                  },
                  bridge: {
                    description: 'opening + the rows\' sum of "of" = closing, each balance a capture',
                    type: 'object',
                    properties: {
                      of: {
                        description: 'the decimal column the rows move the balance by, or a list of them added up (debit and credit)',
                        anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }],
                      },
                      opening: { type: 'string' },
                      closing: { type: 'string' },
                    },
                    required: ['of', 'opening', 'closing'],
                    additionalProperties: false,
                  },
                },
                additionalProperties: false,
              },
            },
            required: ['statement'],
            additionalProperties: false,
          },
        ],
      },
    },
  };
  return {
    description: 'a layout: what the files look like and which table their rows go to',
    type: 'object',
    properties: each(LAYOUT_KEYS, properties, 'layout'),
    additionalProperties: false,
    // a layout of its own names its columns; one that extends a preset has the preset's. Each
    // `required` beside the `properties` that define its key: Ajv's strict mode (strictRequired)
    // looks for them there, and an editor's checker in strict mode must compile this schema
    if: { required: ['extends'], properties: { extends: true } },
    else: { required: ['columns'], properties: { columns: { type: 'array' } } },
  };
}

/** One column as layout/model/layoutColumns.ts reads it; `change`: a change to a preset's column, where every key may be null (drops it). */
function columnSchema(opts: { change?: boolean } = {}): Schema {
  const zone = { description: `an IANA zone, UTC, an offset such as +01:00, or "${LOCAL_ZONE}"`, type: 'string' };
  const header = { type: 'string', minLength: 1 };
  const properties: Record<string, Schema> = {
    name: identifier('the table column: a lower-case SQL identifier'),
    from: {
      description: "the header's text (default the name), or a list of texts to look for in order",
      anyOf: [
        header,
        {
          type: 'array',
          minItems: 1,
          items: {
            anyOf: [header, { type: 'object', properties: { header, timeZone: zone }, required: ['header'], additionalProperties: false }],
          },
        },
      ],
    },
    occurrence: { description: "which of the header's columns of that name (1 for the first)", type: 'integer', minimum: 1 },
    position: { description: 'a layout without a header: the field, 1 for the first', type: 'integer', minimum: 1, maximum: 10_000 },
    type: { type: 'string', enum: [...COLUMN_TYPES] },
    required: { type: 'boolean', default: true },
    scale: {
      description: `decimal: the most digits after the mark (default 2), or "${AS_WRITTEN}"`,
      anyOf: [{ type: 'integer', minimum: 0, maximum: 12 }, { const: AS_WRITTEN }],
    },
    minorUnits: {
      description: `decimal written in whole minor units: the places implied, or "${OWN_CURRENCY}" (each row's own currency's, by ISO 4217)`,
      anyOf: [{ type: 'integer', minimum: 0, maximum: 6 }, { const: OWN_CURRENCY }],
    },
    currencyFrom: {
      description: `decimal with "minorUnits": "${OWN_CURRENCY}": the currency column giving each row's currency`,
      type: 'string',
    },
    currencySymbols: {
      description: 'decimal: the currency symbols or codes its values may carry before or after the number, such as ["€"] or ["$", "USD"]',
      type: 'array',
      items: { type: 'string', minLength: 1 },
      minItems: 1,
      uniqueItems: true,
    },
    sign: {
      description: 'decimal written unsigned: the column holding its debit/credit mark',
      type: 'object',
      properties: {
        from: { type: 'string' },
        negative: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
        positive: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
      },
      required: ['from', 'negative', 'positive'],
      additionalProperties: false,
    },
    notation: {
      description: 'decimal: how its values say their sign beyond a leading minus: (300.00), +10000.00, 0.80Dr / 15.00Cr, 300.00-',
      type: 'array',
      items: { type: 'string', enum: [...AMOUNT_NOTATIONS] },
      minItems: 1,
      uniqueItems: true,
    },
    noAmount: {
      description: 'decimal, not required: the texts that mean no amount, such as ["-"]',
      type: 'array',
      items: { type: 'string', minLength: 1 },
      minItems: 1,
    },
    inAmount: { description: 'currency: the decimal column whose values carry the ISO code (JPY 1000.00)', type: 'string' },
    format: { description: 'date and timestamp: the pattern, such as dd/MM/yyyy or yyyy-MM-dd HH:mm:ss', type: 'string' },
    timeZone: { ...zone, description: `timestamp: the zone of its times (${zone.description})` },
    timeZoneFrom: { description: "timestamp: the column naming each row's zone", type: 'string' },
    timeFrom: { description: 'timestamp: the column holding the time of day', type: 'string' },
    trim: { description: 'spaces (no-break and thin ones, tabs) around a value are removed', type: 'boolean', default: false },
    capture: {
      description:
        'one of the layout\'s "captures": without "from", every row\'s value is it; with one, each row\'s value must equal it (an empty one, or a header without it, takes it)',
      type: 'string',
      minLength: 1,
    },
    year: {
      description: `date and timestamp with a format that writes no year: "${DELIVERY_YEAR}" (nearest to the day the file was delivered) or a capture (a year, or a date the rows are nearest to)`,
      type: 'string',
      minLength: 1,
    },
    dayPeriods: {
      description:
        'date and timestamp: the markers "a" reads, before and after noon, such as ["上午", "下午"] (default AM and PM, any case)',
      type: 'array',
      items: { type: 'string', minLength: 1 },
      minItems: 2,
      maxItems: 2,
    },
  };
  const keys = Object.fromEntries(
    Object.entries(each(COLUMN_KEYS, properties, 'column')).map(([k, v]) => [
      k,
      opts.change && k !== 'name' ? { anyOf: [v, { type: 'null' }] } : v,
    ]),
  );
  return { type: 'object', properties: keys, additionalProperties: false, ...(opts.change ? {} : { required: ['name', 'type'] }) };
}
