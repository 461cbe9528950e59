import { isActiveCurrency } from '../values/currencies.js';
import { namedWidth, type CsvRecord } from '../reader/csvRecords.js';
import { guessClockFormat, guessDateFormat } from './dateGuess.js';
import type { EncodingGuess } from '../values/encodingGuess.js';
import { AS_WRITTEN, type ColumnType } from '../model/layout.js';
import { columnName, financeMeaning, type Romanize } from './columnNames.js';
import { parseZone } from '../values/timeZones.js';

/** One column of a draft layout, with what it was inferred from. */
export interface DraftColumn {
  name: string;
  /** the header's text, or `field N` in a file without a header */
  header: string;
  type: ColumnType;
  format?: string;
  required: boolean;
  /** why this type, in a few words: what the sample's values looked like */
  why: string;
  /** the layout column as configuration writes it */
  json: Record<string, unknown>;
}

export interface Draft {
  /** the layout object, as a config file's "layout" */
  layout: Record<string, unknown>;
  columns: DraftColumn[];
  naturalKey: string[];
  /** why that key, or why none was found */
  naturalKeyWhy: string;
  /** every other key unique in the sample, the likeliest first: what the whole file's proof tries next */
  otherKeys: string[][];
  /** what else the draft assumed: preamble, record types, rows left out */
  notes: string[];
  /** what the sample could not decide, one line each: a person checks these first */
  unsure: string[];
}

const KEY_LIKE =
  /(^|_)(id|no|nr|ref|reference|code|number|nummer|invoice|azonosito)(_|$)|(^|_)n_de_|(transaction|order|reference|refund|capture|charge|payment|seller|customer|account)(id|code|ref)$|identifier|psp|operation/;
/** Whether a header or column names an id (`Transaction ID`, `AmazonTransactionId`, `Reference`). */
const idLike = (text: string) => KEY_LIKE.test(text.toLowerCase().replace(/[^a-z0-9]+/g, '_'));
/** Header texts that name money: a whole number under one is an amount, not a count. */
const AMOUNT_LIKE =
  /amount|amt|total|fee|net|gross|balance|price|sum|betrag|saldo|kontostand|umsatz|importe|import|bruto|neto|comisi|montant|solde|bedrag|debit|credit|d[eé]bit|cr[eé]dit|soll|haben|[cč][aá]stka|[oö]sszeg|egyenleg|importo|kwota|valor/i;
const DATE_LIKE = /date|datum|day|fecha|data|dátum|datum/i;
const RECORD_TYPE = /^[A-Z]{1,3}$/;
/** A letter of a script other than Latin: a header the draft romanizes. */
const OTHER_SCRIPT = /(?!\p{Script=Latin})\p{L}/u;
/** Separators that group thousands, as the layout's `groupSeparator` names them. */
const GROUP_MARKS: Record<string, RegExp> = { ',': /,/, '.': /\./, "'": /['\u2019]/, ' ': /[ \u00a0\u2009\u202f]/ };

/** An amount as written: its sign, the currency symbols or codes around it, and its digits with their marks. */
interface AmountParts {
  symbols: string[];
  number: string;
}

const AMOUNT_SHAPE =
  /^([+-]?)\s*(\p{Sc}+|[A-Z]{3}(?=[\s\d+-]))?\s*([+-]?)\s*(\d(?:[\d.,'\u2019\s]*\d)?(?:[.,]\d+)?|[.,]\d+)\s*(\p{Sc}+|(?<=[\d\s])[A-Z]{3})?$/u;

/** The parts of a value written as an amount (`-123,45 €`, `- $220.00`, `11'373.94`), or undefined. */
function amountParts(value: string): AmountParts | undefined {
  const m = AMOUNT_SHAPE.exec(value.trim());
  if (!m || (m[1] && m[3])) return undefined;
  const symbols = [m[2], m[5]].filter((s): s is string => s !== undefined);
  // three letters are a currency's code, or no amount at all (`TID1`)
  if (symbols.some((s) => /^[A-Z]{3}$/.test(s) && !isActiveCurrency(s))) return undefined;
  return { symbols, number: m[4]! };
}

/** The decimal mark a number shows: the last of `.` and `,` when both are there, else the one not followed by exactly three digits. */
function markOf(number: string): '.' | ',' | undefined {
  const last = Math.max(number.lastIndexOf('.'), number.lastIndexOf(','));
  if (last === -1) return undefined;
  const mark = number[last] as '.' | ',';
  // a date (`05.12.2025`) or an id with dots is no amount: its digits must group by three under the mark
  if (
    !Object.keys(GROUP_MARKS).some((g) => g !== mark && placesOf(number, mark, g) !== undefined) &&
    placesOf(number, mark, '') === undefined
  )
    return undefined;
  if (number.includes(mark === '.' ? ',' : '.') || /['\u2019\s]/.test(number)) return mark;
  return number.length - last - 1 === 3 && last > 0 ? undefined : mark;
}

/** The number's places under a mark and group, or undefined when it is not written so. */
function placesOf(number: string, mark: '.' | ',', group: string): number | undefined {
  const g = group === '' ? '' : `(?:${GROUP_MARKS[group]!.source}\\d{3})*`;
  const m = new RegExp(`^(?:\\d{1,3}${g}|\\d+)?(?:\\${mark}(\\d+))?$`).exec(number);
  return m && /\d/.test(number) ? (m[1]?.length ?? 0) : undefined;
}

interface Inferred {
  type: ColumnType;
  format?: string;
  scale?: number | typeof AS_WRITTEN;
  /** decimals: the symbols or codes written beside the amounts */
  symbols?: string[];
  /** decimals: every value is a whole number */
  whole?: boolean;
  /** dates and timestamps: the month names' language, when not English */
  locale?: string;
  why: string;
  unsure?: string;
}

/** A digit string this long is a number that names something (an account, a card), not a quantity. */
const LONG_DIGITS = 16;

const leadingZero = (v: string) => /^[+-]?0\d/.test(v);

/** The type of one column's sample values (trimmed, none empty): the strictest every value reads as. */
function inferType(values: string[], header: string, mark: '.' | ',', group: string): Inferred {
  const money = AMOUNT_LIKE.test(header) && !idLike(header);
  if (values.length === 0)
    return money
      ? { type: 'decimal', scale: 2, whole: true, why: 'every sampled value is empty; an amount by its name' }
      : { type: 'text', why: 'every sampled value is empty' };
  const dated = () => {
    const guess = guessDateFormat(values, mark === ',');
    if (!guess) return undefined;
    const sample = values[0]!.slice(0, 40);
    return {
      type: guess.type,
      format: guess.format,
      ...(guess.locale ? { locale: guess.locale } : {}),
      why: `${guess.type === 'date' ? 'dates' : 'times'} like ${sample}${guess.locale ? ` (month names in "${guess.locale}")` : ''}`,
      ...(guess.unsure ? { unsure: guess.unsure } : {}),
    } satisfies Inferred;
  };
  // digit strings longer than any amount is written (a 19- or 20-digit account or card number): text, never money
  const digits = values.every((v) => /^\d+$/.test(v)) ? Math.max(...values.map((v) => v.length)) : 0;
  if (digits >= LONG_DIGITS)
    return { type: 'text', why: `digit strings of up to ${digits} digits (account or card numbers): text, never an amount` };
  if (DATE_LIKE.test(header) && values.every((v) => /^\d{8}$/.test(v))) {
    const dateInference = dated();
    if (dateInference) return dateInference;
  }
  if (!money && values.every((v) => /^[+-]?\d{1,18}$/.test(v)) && !values.some(leadingZero))
    return { type: 'integer', why: 'whole numbers' };
  const amounts = values.map(amountParts);
  if (amounts.every((a) => a !== undefined) && (money || !values.some(leadingZero)) && !idLike(header)) {
    const places = amounts.map((a) => placesOf(a.number, mark, group));
    if (places.every((p) => p !== undefined)) {
      const most = Math.max(2, ...places);
      const symbols = [...new Set(amounts.flatMap((a) => a.symbols))];
      const whole = places.every((p) => p === 0);
      const beside = symbols.length > 0 ? `, written with ${symbols.map((s) => `"${s}"`).join(', ')}` : '';
      // more places than money has (an exchange rate): kept as written
      if (most > 12)
        return { type: 'decimal', scale: AS_WRITTEN, symbols, whole, why: `decimals with up to ${most} places, kept as written${beside}` };
      return {
        type: 'decimal',
        scale: most,
        symbols,
        whole,
        why: whole ? `amounts written as whole numbers${beside}` : `amounts with up to ${Math.max(...places)} places${beside}`,
      };
    }
  }
  if (values.every((v) => /^[A-Za-z]{3}$/.test(v) && isActiveCurrency(v.toUpperCase())))
    return { type: 'currency', why: 'ISO 4217 currency codes' };
  return dated() ?? { type: 'text', why: 'text' };
}

/**
 * The field of a record type that states how many data records came before it (since its last
 * occurrence, as the reader counts them), the same field in every occurrence; undefined when none
 * does.
 */
function countField(rows: readonly CsvRecord[], code: string, data: string): number | undefined {
  let candidates: number[] | undefined;
  let since = 0;
  /** a count of one or none says too little: any field holding 1 would agree */
  let most = 0;
  for (const csvRecord of rows) {
    if (csvRecord.fields[0] === data) since++;
    if (csvRecord.fields[0] !== code) continue;
    const stating = csvRecord.fields.flatMap((f, i) => (i > 0 && /^\d{1,15}$/.test(f.trim()) && Number(f.trim()) === since ? [i + 1] : []));
    candidates = candidates === undefined ? stating : candidates.filter((i) => stating.includes(i));
    most = Math.max(most, since);
    since = 0;
  }
  return most >= 2 ? candidates?.[0] : undefined;
}

/** The widths the sample's records have, most frequent first. */
export function widths(records: readonly CsvRecord[]): number[] {
  const counts = new Map<number, number>();
  for (const r of records) counts.set(r.fields.length, (counts.get(r.fields.length) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([w]) => w);
}

const looksLikeData = (v: string) => /^[-+]?[\d.,]+$/.test(v.trim()) || /^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}/.test(v.trim());

/** A record that can be a header: names (not data), at most one in five empty before any trailing empty ones, most of them different. */
function couldBeHeader(r: CsvRecord): boolean {
  const width = namedWidth(r.fields);
  const names = r.fields.slice(0, width).map((f) => f.trim());
  const filled = names.filter((n) => n !== '');
  return width >= 2 && filled.length >= width * 0.8 && !filled.some(looksLikeData) && new Set(filled).size >= filled.length * 0.8;
}

/** A data record under a header: about as wide (a field or two either way, more only if empty), with something like data in it. */
const fitsUnder = (header: readonly string[], r: CsvRecord) =>
  r.fields.length >= namedWidth(header) - 2 && namedWidth(r.fields) <= Math.max(header.length, namedWidth(header) + 2);

/**
 * The header among the first records: of the records that could be one, the one with the most
 * data records under it (weighted by its width, so that a preamble's `Name,Value` lines never
 * outweigh the table below them), the earliest of equals. Undefined when none has data under it.
 */
function findHeader(rows: readonly CsvRecord[]): number | undefined {
  let best: { at: number; score: number } | undefined;
  rows.slice(0, 40).forEach((r, at) => {
    if (!couldBeHeader(r)) return;
    const under = rows.slice(at + 1).filter((next) => fitsUnder(r.fields, next) && next.fields.some(looksLikeData)).length;
    const score = under * namedWidth(r.fields);
    if (under > 0 && (!best || score > best.score)) best = { at, score };
  });
  return best?.at;
}

/** What a draft says when it reads rows broken over lines joined (`continuationLines`). */
export const JOINED_LINES =
  'rows narrower than the header are a value broken over lines: joined back to their record ("continuationLines"); `check` names each join: look at them';

/** What the sample says about the file beyond its records: its encoding. */
export interface SampleFacts {
  encoding?: EncodingGuess;
  /** the records were read with lines continuing a record joined to it (draftProof.ts found rows broken over lines) */
  continuationLines?: boolean;
}

/**
 * A draft layout for a file no preset fits, from its first records: the encoding, the
 * delimiter, a preamble before the header (trailing empty header names left out), record
 * types told by a short code in the first field, each column's type and format over every
 * sampled row, the decimal and group marks, currency symbols, padded values, rows whose first
 * column holds a label where the others hold dates (a bank's balance lines), and a natural-key
 * candidate. It is a draft for a person to review: what the sample could not decide is listed
 * in `unsure`, and `check` proves it.
 */
export function draftLayout(
  records: readonly CsvRecord[],
  delimiter: string,
  table: string,
  romanize: Romanize,
  facts: SampleFacts = {},
): Draft {
  const notes: string[] = [];
  const unsure: string[] = [];
  let rows = [...records];
  let recordTypes: Record<string, unknown> | undefined;
  let headerFields: readonly string[] | undefined;
  let skipLines = 0;
  const encoding = facts.encoding;
  if (encoding && encoding.encoding !== 'utf-8') {
    notes.push(`the file is ${encoding.encoding} ("encoding"): ${encoding.why}`);
    if (!encoding.sure) {
      const alternatives = encoding.alternatives.length > 0 ? `; else ${encoding.alternatives.join(', or ')}` : '';
      unsure.push(
        `the encoding: ${encoding.encoding}, not sure: ${encoding.why}${alternatives}; look at the header's names in the printed columns`,
      );
    }
  }

  // record types: a short upper-case code first in every record, several codes, one of them most of the file
  const codes = new Map<string, number>();
  for (const csvRecord of rows) codes.set(csvRecord.fields[0] ?? '', (codes.get(csvRecord.fields[0] ?? '') ?? 0) + 1);
  if (rows.length > 2 && codes.size > 1 && [...codes.keys()].every((c) => RECORD_TYPE.test(c))) {
    // the rows: the most frequent code, and of equals the one right under a record that names fields (PayPal's CH over SB)
    const named = (code: string) => {
      const at = rows.findIndex((r) => r.fields[0] === code);
      const above = rows[at - 1];
      return Number(above !== undefined && above.fields.length === rows[at]!.fields.length && !above.fields.some(looksLikeData));
    };
    const data = [...codes].sort((a, b) => b[1] - a[1] || named(b[0]) - named(a[0]))[0]![0];
    const firstData = rows.findIndex((r) => r.fields[0] === data);
    const before = rows[firstData - 1];
    const headerType =
      before && before.fields.length === rows[firstData]!.fields.length && !before.fields.some(looksLikeData)
        ? before.fields[0]!
        : undefined;
    recordTypes = Object.fromEntries([...codes.keys()].map((c) => [c, c === data ? 'data' : c === headerType ? 'header' : 'info']));
    if (headerType) headerFields = before!.fields;
    const others = [...codes.keys()].filter((c) => c !== data && c !== headerType);
    const described = others.map((code) => {
      const field = countField(rows, code, data);
      if (field !== undefined) {
        recordTypes![code] = { count: field };
        unsure.push(
          `${code}: its field ${field} agrees with the number of ${data} records in the sample, so it is checked as their count: confirm the partner documents it`,
        );
        return `${code} states how many ${data} records there are (field ${field}): checked as a count`;
      }
      const account = rows.find((r) => r.fields[0] === code)?.fields.find((f) => new RegExp(`^\\d{${LONG_DIGITS},}$`).test(f.trim()));
      if (account !== undefined)
        return `${code} is the account's record (it carries the account number ${account.trim()}): taken as information`;
      return `${code} is taken as information`;
    });
    rows = rows.filter((r) => r.fields[0] === data);
    notes.push(
      `records are told by their first field: ${data} holds the rows${headerType ? `, ${headerType} names their fields` : ''}; ` +
        `${described.join('; ') || 'no other'} (see "recordTypes")`,
    );
  } else {
    // the header: the record with the most data under it; what comes before it is a preamble
    const at = findHeader(rows);
    const candidate = at === undefined ? undefined : rows[at];
    if (candidate) {
      headerFields = candidate.fields;
      skipLines = candidate.line - 1;
      rows = rows.slice(at! + 1);
      if (skipLines > 0)
        notes.push(`the header is on line ${candidate.line}: the ${skipLines} lines before it are a preamble ("skipLines")`);
    } else {
      notes.push('no record looks like a header: the file has none, so its columns are taken by position');
      unsure.push(
        'the header: no record reads as column names above data; if the first line is one, set "header" to true and name the columns',
      );
    }
  }

  const fullWidth = headerFields?.length ?? widths(rows)[0] ?? 0;
  const data = headerFields ? rows.filter((r) => fitsUnder(headerFields, r)) : rows.filter((r) => r.fields.length === fullWidth);
  const short = rows.length - data.length;
  // the header's fields a column reads: not its trailing empty names, not an empty name between, not one no row reaches
  const reach = data.length === 0 ? fullWidth : Math.max(...data.map((r) => r.fields.length));
  const named = headerFields ? namedWidth(headerFields) : fullWidth;
  const positions = Array.from({ length: Math.min(named, headerFields ? reach : fullWidth) }, (_, i) => i).filter(
    (i) => !headerFields || headerFields[i]!.trim() !== '',
  );
  if (headerFields) {
    const trailing = headerFields.length - named;
    if (trailing > 0) notes.push(`the header ends with ${trailing} empty name(s): those fields are nameless and not read`);
    const between = headerFields.slice(0, named).filter((f) => f.trim() === '').length;
    if (between > 0) notes.push(`the header has ${between} empty name(s) between named ones: no column reads those fields`);
    if (reach < named)
      notes.push(
        `no sampled row reaches ${headerFields
          .slice(reach, named)
          .map((h) => `"${h.trim()}"`)
          .join(', ')}: left out, and "nullPadding" reads the rows that stop ${named - reach} field(s) short of the header`,
      );
    const wider = data.filter((r) => r.fields.length > headerFields.length).length;
    if (wider > 0) notes.push(`${wider} sampled row(s) are wider than the header by empty fields only: accepted as they are`);
  }
  const taken = new Set<string>();
  const headerTexts = positions.map((i) => (headerFields ? headerFields[i]!.trim() : `field ${i + 1}`));
  const names = positions.map((p, k) => columnName(headerFields ? headerTexts[k]! : `field_${p + 1}`, taken, romanize));
  // what each header says, for the types: a bank's word for an amount or a date (`金额`, `Дата`) in English
  const meanings = headerTexts.map((h) => financeMeaning(h) ?? h);
  if (headerFields) {
    const shown = (indexes: number[]) =>
      [...indexes.slice(0, 3).map((k) => `${headerTexts[k]} → ${names[k]}`), ...(indexes.length > 3 ? ['…'] : [])].join(', ');
    const worded = headerTexts.flatMap((h, k) => (financeMeaning(h) !== undefined ? [k] : []));
    const romanized = headerTexts.flatMap((h, k) => (!worded.includes(k) && OTHER_SCRIPT.test(h) ? [k] : []));
    const said = [
      ...(worded.length > 0 ? [`a bank's common words named as in English (${shown(worded)})`] : []),
      ...(romanized.length > 0 ? [`headers in other scripts romanized (${shown(romanized)})`] : []),
    ];
    if (said.length > 0) notes.push(`column names: ${said.join('; ')}: rename any that reads oddly, "from" keeps each header`);
  }
  const raw = (k: number, r: CsvRecord) => r.fields[positions[k]!] ?? '';
  const valuesOf = (k: number) => data.map((r) => raw(k, r).trim()).filter((v) => v !== '');
  const allNumbers = positions.flatMap((_, k) => valuesOf(k).flatMap((v) => amountParts(v)?.number ?? []));
  const marks = allNumbers.map(markOf).filter((m) => m !== undefined);
  const commas = marks.filter((m) => m === ',').length;
  const mark: '.' | ',' = commas > marks.length - commas ? ',' : '.';
  if (marks.length === 0 && allNumbers.some((n) => /[.,]/.test(n)))
    unsure.push(`the decimal mark: every amount like "${allNumbers.find((n) => /[.,]/.test(n))}" could be either way; "${mark}" taken`);
  const groupSeparator =
    Object.keys(GROUP_MARKS).find(
      (g) => g !== mark && allNumbers.some((n) => new RegExp(`^\\d{1,3}(?:${GROUP_MARKS[g]!.source}\\d{3})+(?:\\${mark}\\d+)?$`).test(n)),
    ) ?? '';

  // a label where the other rows of the first column hold dates (a bank's balance lines): counted, not loaded
  const skipRows: { column: string; values: string[] }[] = [];
  const firstValues = positions.length > 0 ? valuesOf(0) : [];
  const labels = [...new Set(firstValues.filter((v) => !looksLikeData(v)))];
  if (labels.length > 0 && labels.length <= 3 && firstValues.length - labels.length >= 2) {
    const dates = inferType(
      firstValues.filter((v) => !labels.includes(v)),
      meanings[0]!,
      mark,
      groupSeparator,
    );
    if (dates.type === 'date' || dates.type === 'timestamp') {
      skipRows.push({ column: names[0]!, values: labels });
      notes.push(
        `rows whose ${headerTexts[0]} is ${labels.map((l) => `"${l}"`).join(' or ')} are summary lines: counted, not loaded ("skipRows")`,
      );
    }
  }
  // records of (almost) nothing but delimiters, as a spreadsheet leaves below its rows
  const blank = data.filter(
    (r) => raw(0, r) === '' && r.fields.filter((f) => f.trim() !== '').length <= Math.max(1, positions.length / 10),
  );
  if (blank.length > 0 && skipRows.length === 0 && blank.length < data.length) {
    skipRows.push({ column: names[0]!, values: [''] });
    notes.push(
      `${blank.length} sampled record(s) are blank but for their delimiters: rows with no ${headerTexts[0]} are counted, not loaded ("skipRows")`,
    );
  }
  const kept = data.filter((r) => !skipRows.some((s) => s.values.includes(raw(0, r).trim() === '' ? '' : raw(0, r))));
  const keptValues = (k: number) => kept.map((r) => raw(k, r).trim()).filter((v) => v !== '');
  const inferred = meanings.map((h, k) => inferType(keptValues(k), h, mark, groupSeparator));

  // a time of day in a column of its own beside a date: the date column becomes the instant, reading it (`timeFrom`)
  const clocks = headerTexts.map((_, k) => (inferred[k]!.type === 'text' ? guessClockFormat(keptValues(k)) : undefined));
  const timeOf = new Map<number, number>();
  inferred.forEach((t, k) => {
    if (t.type !== 'date') return;
    const clock = clocks.findIndex((c, j) => c !== undefined && j > k && j <= k + 2 && ![...timeOf.values()].includes(j));
    if (clock === -1) return;
    timeOf.set(k, clock);
    inferred[k] = {
      ...t,
      type: 'timestamp',
      format: `${t.format} ${clocks[clock]}`,
      why: `${t.why}, with the time of day from ${headerTexts[clock]}`,
    };
  });

  // columns naming a zone (CET, PDT, Europe/Paris): a time takes the first one after it, as Adyen writes them
  const zoneColumns = headerTexts
    .map((_, k) => k)
    .filter((k) => {
      const values = valuesOf(k);
      return values.length > 0 && values.every((v) => parseZone(v) !== undefined && !/^[+-]?\d/.test(v));
    });
  const currencyColumns = inferred.map((t, k) => (t.type === 'currency' ? k : -1)).filter((k) => k !== -1);
  // whole numbers in every amount column beside a currency column, some of four digits or more: minor units, probably
  const amountColumns = inferred.map((t, k) => (t.type === 'decimal' && AMOUNT_LIKE.test(meanings[k]!) ? k : -1)).filter((k) => k !== -1);
  const minorUnits =
    currencyColumns.length > 0 &&
    amountColumns.length > 0 &&
    amountColumns.every((k) => inferred[k]!.whole) &&
    amountColumns.some((k) => keptValues(k).some((v) => /\d{4}/.test(v)));
  const locales = new Set<string>();
  /** the amount columns whose values carry an ISO code */
  const codesIn: number[] = [];
  const columns: DraftColumn[] = headerTexts.map((header, columnIndex) => {
    const inference = inferred[columnIndex]!;
    const required = kept.every((r) => raw(columnIndex, r).trim() !== '');
    const json: Record<string, unknown> = { name: names[columnIndex] };
    if (headerFields && names[columnIndex] !== header) json.from = header;
    // a header text given more than once: which one this column reads
    const repeats = headerTexts.filter((h) => h === header).length;
    if (headerFields && repeats > 1) json.occurrence = headerTexts.slice(0, columnIndex + 1).filter((h) => h === header).length;
    if (!headerFields) json.position = positions[columnIndex]! + 1;
    json.type = inference.type;
    if (!required) json.required = false;
    const padded =
      inference.type !== 'decimal' &&
      kept.some((r) => raw(columnIndex, r).trim() !== '' && raw(columnIndex, r) !== raw(columnIndex, r).trim());
    if (padded) json.trim = true;
    let why = inference.why;
    if (padded) why += '; padded with spaces ("trim")';
    if (inference.type === 'decimal' && minorUnits && amountColumns.includes(columnIndex)) {
      json.minorUnits = 'currency';
      const nearest = [...currencyColumns].sort((a, b) => Math.abs(a - columnIndex) - Math.abs(b - columnIndex))[0]!;
      if (currencyColumns.length > 1) json.currencyFrom = names[nearest];
      why = `whole numbers beside ${headerTexts[nearest]}: read as minor units of each row's currency ("minorUnits": "currency")`;
      unsure.push(
        `${header}: whole numbers like ${keptValues(columnIndex)[0]} beside a currency column, read as minor units (cents) of each row's currency — a guess: if they are whole units, remove "minorUnits"`,
      );
    } else if (inference.scale !== undefined && inference.scale !== 2) json.scale = inference.scale;
    if (inference.symbols && inference.symbols.length > 0) {
      // ISO codes written inside the amount (`JPY 1000.00`) say each row's currency: read into a column of its own
      if (inference.symbols.every((code) => /^[A-Z]{3}$/.test(code))) codesIn.push(columnIndex);
      else json.currencySymbols = inference.symbols;
    }
    if (inference.format !== undefined && inference.format !== (inference.type === 'date' ? 'yyyy-MM-dd' : 'yyyy-MM-dd HH:mm:ss'))
      json.format = inference.format;
    if (inference.locale) locales.add(inference.locale);
    if (inference.unsure) unsure.push(`${header}: ${inference.unsure}`);
    const clock = timeOf.get(columnIndex);
    if (clock !== undefined) json.timeFrom = names[clock];
    if (inference.type === 'timestamp' && !/X/.test(inference.format ?? '')) {
      const zoneColumn = zoneColumns.find((z) => z > columnIndex) ?? zoneColumns[0] ?? -1;
      if (/'UTC'|'Z'/.test(inference.format ?? '')) {
        json.timeZone = 'UTC';
        why += ', in UTC as written';
      } else if (zoneColumn !== -1) {
        json.timeZoneFrom = names[zoneColumn];
        why += `, in the zone ${headerTexts[zoneColumn]} names`;
      } else {
        json.timeZone = 'UTC';
        why += "; no zone in the file: UTC assumed, say the partner's if it is not";
        unsure.push(`${header}: the times name no zone; UTC assumed — write the partner's ("timeZone")`);
      }
    }
    return {
      name: names[columnIndex]!,
      header,
      type: inference.type,
      ...(inference.format ? { format: inference.format } : {}),
      required,
      why,
      json,
    };
  });
  if (short > 0) notes.push(`${short} sampled record(s) are not as wide as the header: check them`);

  const { key, why, others } = naturalKey(columns, kept, positions);
  if (kept.length < 10) unsure.push(`the natural key: only ${kept.length} row(s) sampled, so nearly any column is unique in them`);
  // after the key, which finds each column's field by its place among the header's
  for (const columnIndex of [...codesIn].reverse()) {
    const amount = columns[columnIndex]!;
    const name = columnName(`${amount.name}_currency`, taken, romanize);
    const json: Record<string, unknown> = {
      name,
      ...(headerFields ? { from: amount.header } : { position: positions[columnIndex]! + 1 }),
      type: 'currency',
      inAmount: amount.name,
      ...(amount.required ? {} : { required: false }),
    };
    const codes = inferred[columnIndex]!.symbols!;
    const why = `the ISO code written inside ${amount.header} (${codes.map((c) => `"${c}"`).join(', ')}): each row's currency ("inAmount")`;
    columns.splice(columnIndex + 1, 0, { name, header: amount.header, type: 'currency', required: amount.required, why, json });
    amount.why += `; its currency code read into ${name}`;
    notes.push(`${amount.header} writes its currency code inside the amount: ${name} reads it ("inAmount"), so no row's currency is lost`);
  }
  const layout: Record<string, unknown> = { table };
  if (encoding && encoding.encoding !== 'utf-8') layout.encoding = encoding.encoding;
  if (delimiter !== ',') layout.delimiter = delimiter;
  if (mark !== '.') layout.decimalMark = mark;
  if (groupSeparator !== '') layout.groupSeparator = groupSeparator;
  if (locales.size > 0) layout.locale = locales.size === 1 ? [...locales][0] : [...locales];
  if (skipLines > 0) layout.skipLines = skipLines;
  if (!headerFields) layout.header = false;
  if (headerFields && reach < named) layout.nullPadding = true;
  if (recordTypes) layout.recordTypes = recordTypes;
  if (facts.continuationLines) {
    layout.continuationLines = true;
    notes.push(JOINED_LINES);
  }
  layout.columns = columns.map((draftColumn) => draftColumn.json);
  layout.naturalKey = key.length === 1 ? key[0] : key;
  if (skipRows.length > 0) layout.skipRows = skipRows;
  return { layout, columns, naturalKey: key, naturalKeyWhy: why, otherKeys: others, notes, unsure };
}

/**
 * A natural-key candidate: one column, else two or three, whose values are all there and
 * unique in the sample, id-like names first; a timestamp may join an id (a charge repeated
 * monthly, a transfer and its fee under one id), never stand alone. None found: the first
 * column, said so.
 */
function naturalKey(
  columns: DraftColumn[],
  kept: readonly CsvRecord[],
  positions: readonly number[],
): { key: string[]; why: string; others: string[][] } {
  const usable = columns
    .map((draftColumn, i) => ({ c: draftColumn, i }))
    .filter(({ c }) => (c.required || c.type === 'text') && ['text', 'integer', 'date', 'currency', 'timestamp'].includes(c.type))
    .sort(
      (a, b) =>
        Number(idLike(b.c.name)) - Number(idLike(a.c.name)) ||
        Number(b.c.required) - Number(a.c.required) ||
        Number(a.c.type === 'timestamp') - Number(b.c.type === 'timestamp'),
    );
  const unique = (idx: number[]) =>
    new Set(kept.map((csvRecord) => JSON.stringify(idx.map((i) => (csvRecord.fields[positions[i]!] ?? '').trim())))).size === kept.length;
  const ids = usable.filter((u) => idLike(u.c.name));
  const times = usable.filter((u) => u.c.type === 'timestamp');
  const singles = usable.filter((u) => u.c.type !== 'timestamp' && u.c.type !== 'currency' && u.c.required);
  // values with no space in them look like ids; free text that happens to differ does not
  const idShaped = (u: (typeof usable)[number]) => kept.every((r) => !/\s/.test((r.fields[positions[u.i]!] ?? '').trim()));
  const candidates = [
    ...singles.filter((u) => idLike(u.c.name)).map((u) => [u]),
    ...ids.flatMap((id) => times.map((t) => [id, t])),
    ...combinations(ids.slice(0, 8), 2),
    // a date unique in the sample is one row a day so far, not an id: text and numbers first
    ...singles
      .filter((u) => !idLike(u.c.name) && idShaped(u))
      .sort((a, b) => Number(a.c.type === 'date') - Number(b.c.type === 'date'))
      .map((u) => [u]),
    ...ids.flatMap((id) => usable.filter((u) => u !== id).map((u) => [id, u])),
    ...singles.map((u) => [u]),
    ...combinations(usable.slice(0, 8), 2),
    ...combinations(usable.slice(0, 8), 3),
  ].filter((combo) => combo.some((u) => u.c.type !== 'timestamp'));
  const uniqueOnes = candidates.filter((combo) => unique(combo.map((u) => u.i)));
  const found = uniqueOnes[0];
  const others = uniqueOnes.slice(1, 12).map((combo) => combo.map((u) => u.c.name));
  if (found) {
    const withTime = found.some((u) => u.c.type === 'timestamp');
    return {
      key: found.map((u) => u.c.name),
      why: `${found.length === 1 ? 'its values are' : 'together their values are'} there and unique in the ${kept.length} sampled rows${found.some((u) => idLike(u.c.name)) ? ', and named like an id' : ''}${withTime ? ' (the id alone repeats: its time tells the rows apart)' : ''}: confirm the partner documents it as unique`,
      others,
    };
  }
  const first = columns.find((c) => c.required) ?? columns[0];
  if (first && !first.required) {
    first.required = true;
    delete first.json.required;
  }
  return { key: [first?.name ?? 'id'], why: "no column or pair of columns is unique in the sample: name the partner's unique id", others };
}

function combinations<T>(items: T[], size: number): T[][] {
  if (size === 1) return items.map((i) => [i]);
  const out: T[][] = [];
  items.forEach((item, i) => {
    for (const rest of combinations(items.slice(i + 1), size - 1)) out.push([item, ...rest]);
  });
  return out;
}
