import { keyName, RESERVED_COLUMNS } from '../model/layout.js';
import { OCCURRENCE_COLUMN } from '../model/layoutObject.js';
import { parseLayout } from '../model/parseLayout.js';
import { checkRows } from '../reader/rowChecks.js';
import { JOINED_LINES, type Draft, type DraftColumn } from './draftLayout.js';
import { dropFooterCount, STATED_ROWS } from './footerGuess.js';

/** What a draft says when no key of its columns is unique over the whole file. */
export const NO_UNIQUE_KEY = 'no unique key: rows without ids';

/** Why a draft without a unique key numbers its repeats (`"occurrence"`). */
export const BY_OCCURRENCE = 'identical lines are distinct rows: numbered by occurrence';

/** The types of a row's own values that key a statement without ids: its date, amount, text, currency and balance. */
const OWN_VALUE_TYPES = new Set(['date', 'timestamp', 'decimal', 'text', 'currency']);

/** How many times a draft is corrected before what is still refused is left to a person. */
const ROUNDS = 12;

/** A key repeat, as checkRows names it (naturalKeys.ts), not a bad value in a key column. */
const isKeyRepeat = (message: string) => / value\(s\) already used: /.test(message);

/** The keys a column's type brings with it, dropped when it is read as text. */
const TYPED_KEYS = ['format', 'scale', 'currencySymbols', 'minorUnits', 'currencyFrom', 'timeFrom', 'timeZone', 'timeZoneFrom', 'inAmount'];

/**
 * A column the whole file refuses, read more leniently: a typed column as text (its value at
 * `line` is not what the sample showed), a required text column as optional (a row leaves it
 * empty). False when nothing is left to relax, or another column reads through it.
 */
function relax(draft: Draft, column: DraftColumn, line: number | undefined, message: string): boolean {
  const where = line !== undefined ? `line ${line}` : 'a row';
  if (draft.columns.some((c) => c !== column && TYPED_KEYS.some((k) => c.json[k] === column.name))) return false;
  if (column.type !== 'text') {
    for (const key of TYPED_KEYS) delete column.json[key];
    column.json.type = 'text';
    column.type = 'text';
    delete column.format;
    column.why += `; read as text: ${where} holds a value the sample's type refuses`;
    draft.unsure.push(
      `${column.header}: drafted as text, since ${where} of the whole file refuses the type the sample showed (${message.slice(0, 160)})`,
    );
    return true;
  }
  if (column.required) {
    column.required = false;
    column.json.required = false;
    column.why += `; optional: ${where} leaves it empty`;
    return true;
  }
  return false;
}

/** A row narrower than the header, as the reader names it. */
const SHORT_ROW = /expected \d+ fields, found \d+/;

/**
 * Rows narrower than the header: a value broken over lines, as some banks export a long
 * description, when `continuationLines` reads the file (tried once: a draft it does not help
 * goes back without it). Declared in the draft and said, never assumed unseen.
 */
function joinsLines(draft: Draft): boolean {
  const { layout } = draft;
  if (layout.continuationLines === true) {
    delete layout.continuationLines;
    draft.notes.pop();
    return false;
  }
  if (layout.header === false || layout.recordTypes !== undefined || layout.continuationLines === false) return false;
  layout.continuationLines = true;
  draft.notes.push(JOINED_LINES);
  return true;
}

/** The draft's key set to `key`, with why. */
function setKey(draft: Draft, key: string[], why: string): void {
  draft.naturalKey = key;
  draft.naturalKeyWhy = why;
  draft.layout.naturalKey = key.length === 1 ? key[0] : key;
}

/**
 * A statement's key when none of its columns is unique over the whole file: the row's own values
 * (every column always there of a date, amount, text, currency or balance), with identical lines
 * numbered by occurrence (`"occurrence": true`, and so `seenBefore` by default: a row an earlier,
 * overlapping export loaded is compared, not loaded again). False when the row has no such value.
 */
function occurrenceKey(draft: Draft, repeated: readonly string[]): boolean {
  const own = draft.columns.filter((c) => c.required && OWN_VALUE_TYPES.has(c.type)).map((c) => c.name);
  if (own.length === 0) return false;
  const taken = (name: string) => draft.columns.some((c) => c.name === name) || RESERVED_COLUMNS.includes(name);
  const name = [OCCURRENCE_COLUMN, 'line_occurrence', 'row_occurrence'].find((n) => !taken(n));
  if (name === undefined) return false;
  setKey(
    draft,
    own,
    `${NO_UNIQUE_KEY}: no column, pair or three of them is unique over the whole file (${repeated.join('; ')}); ${BY_OCCURRENCE}: the row's own values, with each repeat numbered ("occurrence")`,
  );
  draft.layout.occurrence = name === OCCURRENCE_COLUMN ? true : name;
  draft.notes.push(
    `${BY_OCCURRENCE} (two coffees on one day are two payments): the key is the row's own values (${own.join(', ')}) and "occurrence" numbers identical lines 1, 2, … in the file's order; rows an earlier, overlapping export loaded are compared and counted as seen before ("seenBefore", on by default with an occurrence), not loaded again`,
  );
  draft.unsure.push(
    `the natural key: ${NO_UNIQUE_KEY}; keyed by the row's own values with "occurrence": name the partner's id instead if its documentation gives one`,
  );
  return true;
}

/**
 * A draft proved as `check` would prove it, over the whole file rather than the sample it was
 * learnt from (`check` runs the same reader and key checks): a column some later row refuses is
 * read more leniently, a key that repeats further down gives way to the next key the sample
 * found unique, and when none is unique over the whole file (a statement without ids) the key is
 * the row's own values with identical lines numbered by occurrence, said why (`BY_OCCURRENCE`),
 * and proved like any other; never a key its own `check` refuses. Whatever is still
 * refused is said plainly among the draft's doubts. Changes `draft` in place.
 */
export async function proveDraft(path: string, fileName: string, draft: Draft): Promise<void> {
  const repeated: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const checked = await checkDraft(path, fileName, draft);
    if (checked === undefined) return;
    if (checked.error === null) {
      draft.notes.push(`check passes over the whole file with this draft: ${checked.rows} rows`);
      return;
    }
    const { field, line, message } = checked.error;
    if (field === checked.key && isKeyRepeat(message)) {
      repeated.push(`${draft.naturalKey.join(' + ')} repeats (line ${line ?? '?'})`);
      const next = draft.otherKeys.shift();
      if (next) {
        setKey(draft, next, `unique over the whole file (${repeated.join('; ')}): confirm the partner documents it as unique`);
        continue;
      }
      if (occurrenceKey(draft, repeated)) continue;
      draft.naturalKey = [];
      delete draft.layout.naturalKey;
      draft.naturalKeyWhy = `${NO_UNIQUE_KEY}: no column, pair or three of them is unique over the whole file (${repeated.join('; ')})`;
      draft.unsure.push(`the natural key: ${NO_UNIQUE_KEY}, and no row has values of its own that are always there: name the partner's id`);
      return;
    }
    if (SHORT_ROW.test(message) && joinsLines(draft)) continue;
    if (field === STATED_ROWS && dropFooterCount(draft, message)) continue;
    const column = draft.columns.find((c) => c.name === field);
    if (!column || !relax(draft, column, line, message)) {
      draft.unsure.push(`check refuses this draft over the whole file: ${message.slice(0, 300)}`);
      return;
    }
    draft.layout.columns = draft.columns.map((c) => c.json);
  }
}

/** The draft's layout and its check over the whole file; undefined (said among the doubts) when the draft is no layout. */
async function checkDraft(path: string, fileName: string, draft: Draft) {
  let layout;
  try {
    layout = parseLayout(JSON.parse(JSON.stringify(draft.layout)) as Record<string, unknown>, 'draft');
  } catch (err) {
    draft.unsure.push(`the draft is not a layout check takes: ${(err as Error).message.slice(0, 300)}`);
    return undefined;
  }
  return { ...(await checkRows(path, layout, { fileName })), key: keyName(layout) };
}
