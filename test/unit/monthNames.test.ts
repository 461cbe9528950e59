import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { timestampIdentity } from '../../src/layout/reader/columnValues.js';
import type { Layout } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows, readSettlement } from '../../src/layout/reader/readSettlement.js';

/** A synthetic partner file, in the shapes of the second corpus (never its bytes). */
function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-values-')), 'partner.csv');
  writeFileSync(path, text);
  return path;
}

const layout = (raw: unknown) => parseLayout(raw, 'test');

async function values(path: string, l: Layout) {
  const out: (string | null)[][] = [];
  for await (const row of readSettlement(path, l)) out.push(row.values);
  return out;
}

/** Every bad row's message, as the run's reject names them. */
async function problem(path: string, l: Layout): Promise<string> {
  const { error } = await findBadRows(path, l);
  if (!error) throw new Error('expected the file to be refused');
  return error.message;
}

/** The usage error a layout is refused with. */
const usage = (make: () => unknown) => {
  try {
    make();
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error('expected a usage error');
};

/** A layout of an id and one date (or timestamp) column written in `format`. */
const dated = (format: string, more: Record<string, unknown> = {}, type = 'date') =>
  layout({
    columns: [
      { name: 'id', type: 'text' },
      { name: 'day', type, format, ...(type === 'timestamp' ? { timeZone: 'UTC' } : {}) },
    ],
    naturalKey: 'id',
    ...more,
  });

describe('month names in dates (MMM, MMMM)', () => {
  it('reads English abbreviations in any case, the British "Sept", and a dot after the name or the date', async () => {
    const l = dated('dd MMM yyyy');
    const rows = await values(file('id,day\nA,06 May 2020\nB,01 SEP 2020\nC,02 sept. 2020\nD,03 nov 2021.\nE,04 Dec. 2021\n'), l);
    expect(rows).toEqual([
      ['A', '2020-05-06'],
      ['B', '2020-09-01'],
      ['C', '2020-09-02'],
      ['D', '2021-11-03'],
      ['E', '2021-12-04'],
    ]);
  });

  it('reads full names with MMMM, and refuses an abbreviation there', async () => {
    const l = dated('MMMM d, yyyy');
    expect(await values(file('id,day\nA,"September 6, 2020"\nB,"february 29, 2024"\n'), l)).toEqual([
      ['A', '2020-09-06'],
      ['B', '2024-02-29'],
    ]);
    expect(await problem(file('id,day\nA,"Sep 6, 2020"\n'), l)).toBe(
      'line 2, field day: "Sep 6, 2020" is not a date (MMMM d, yyyy, 0001-01-01 to 9999-12-31)',
    );
  });

  it("reads the layout's languages, both the form inside a date and the one standing alone", async () => {
    const l = dated('d MMM yyyy', { locale: ['fr', 'de'] });
    const rows = await values(
      file('id,day\nA,3 févr. 2021\nB,4 mars 2021\nC,5 März 2021\nD,6 Mär 2021\nE,7 juil. 2021\nF,8 Okt. 2021\n'),
      l,
    );
    expect(rows.map((r) => r[1])).toEqual(['2021-02-03', '2021-03-04', '2021-03-05', '2021-03-06', '2021-07-07', '2021-10-08']);
    const czech = dated('d. MMMM yyyy', { locale: 'cs' });
    expect(await values(file('id,day\nA,3. listopadu 2021\nB,4. listopad 2021\n'), czech)).toEqual([
      ['A', '2021-11-03'],
      ['B', '2021-11-04'],
    ]);
  });

  it('reads an Italian time stamp whose year ends with a dot, as a payment app writes it', async () => {
    const l = dated('d MMM yyyy. HH:mm:ss', { locale: 'it' }, 'timestamp');
    expect(await values(file('id,day\nA,"24 lug 2024. 02:59:45"\nB,"1 mar 2022. 09:44:27"\n'), l)).toEqual([
      ['A', '2024-07-24 02:59:45+00:00'],
      ['B', '2022-03-01 09:44:27+00:00'],
    ]);
  });

  it('refuses a name of a language the layout does not name, a name no language has, and a day the month lacks', async () => {
    const l = dated('d MMM yyyy');
    expect(await problem(file('id,day\nA,4 mars 2021\n'), l)).toBe(
      'line 2, field day: "4 mars 2021" is not a date (d MMM yyyy, 0001-01-01 to 9999-12-31)',
    );
    expect(await problem(file('id,day\nA,4 Mayy 2021\n'), l)).toMatch(/^line 2, field day: "4 Mayy 2021" is not a date/);
    expect(await problem(file('id,day\nA,30 Feb 2021\n'), l)).toMatch(/^line 2, field day: "30 Feb 2021" is not a date/);
    expect(await problem(file('id,day\nA,3 nov 2021..\n'), l)).toMatch(/is not a date/);
  });

  it('is a layout error when two languages give one name to different months, naming both', () => {
    expect(usage(() => dated('d MMMM yyyy', { locale: ['cs', 'hr'] }))).toBe(
      'test: layout column "day": "format" MMMM: "listopad" is November in cs and October in hr: a date cannot say which (name fewer languages in "locale")',
    );
    // the same languages are no trouble to a format without names
    expect(() => dated('dd.MM.yyyy', { locale: ['cs', 'hr'] })).not.toThrow();
  });

  it('names an unknown or malformed language tag as a mistake of "locale"', () => {
    expect(usage(() => dated('d MMM yyyy', { locale: 'xx' }))).toBe(
      'test: layout "locale" "xx" is not a language whose month names Intl knows',
    );
    expect(usage(() => dated('d MMM yyyy', { locale: ['de', 'not a tag'] }))).toBe(
      'test: layout "locale" "not a tag" is not a BCP 47 language tag (like "de" or "fr-CH")',
    );
    expect(usage(() => dated('d MMM yyyy', { locale: [] }))).toMatch(/"locale" must be a BCP 47 language tag/);
    expect(usage(() => dated('d MMM yyyy', { locale: 5 }))).toMatch(/"locale" must be a BCP 47 language tag/);
  });

  it('keeps the locale, canonical, in the layout a preset extension starts from', () => {
    expect(dated('d MMM yyyy', { locale: ['DE-ch', 'fr'] }).locale).toEqual(['de-CH', 'fr']);
    expect(toLayoutJson(dated('d MMM yyyy', { locale: 'de' })).locale).toBe('de');
  });
});

describe('a format token the reader does not know', () => {
  it.each([
    ['dd MMMMM yyyy', '"MMMMM", which is not a token it reads: use MMMM (full month name), MMM (abbreviated), MM or M (number)'],
    ['dd/MM/YYYY', '"YYYY", which is not a token it reads: use yyyy: Y is the week-based year'],
    ['yyyy-MM-dd hhh:mm a', '"hhh", which is not a token it reads: use hh or h (a 12-hour clock, with a), HH or H'],
    ['yyyy-MM-dd KK:mm a', '"KK", which is not a token it reads: use hh or h (1 to 12, with a): an hour 0 to 11 is not read'],
    ['yyyy-MM-dd hh:mm aa', '"aa", which is not a token it reads: use a (one letter: AM/PM, or the column\'s "dayPeriods")'],
    ['EEE, dd MMM yyyy', '"EEE", which is not a token it reads: day names are not read'],
    ['yyyy-MM-DD', '"DD", which is not a token it reads: use dd or d: D is the day of the year'],
    [
      'yyyy-MM-dd HH:mm Q',
      `"Q", which is not a token it reads: quote text as 'Q' (tokens: yyyy yy MMMM MMM MM M dd d HH H hh h a mm ss SSS XXX XX X)`,
    ],
  ])('says which one in %j, and what to use instead', (format, said) => {
    expect(usage(() => dated(format, {}, 'timestamp'))).toContain(`"format" has ${said}`);
  });

  it('still refuses a month named twice, by number and by name', () => {
    expect(usage(() => dated('dd MMM MM yyyy'))).toBe('test: layout column "day": "format" names MM twice: "dd MMM MM yyyy"');
  });
});

describe('padded values and trim', () => {
  const padded = (trim: boolean) =>
    layout({
      columns: [
        { name: 'id', type: 'text', ...(trim ? { trim: true } : {}) },
        { name: 'note', type: 'text', required: false, ...(trim ? { trim: true } : {}) },
        { name: 'booked', type: 'date', format: 'dd.MM.yyyy', required: false, ...(trim ? { trim: true } : {}) },
      ],
      naturalKey: 'id',
    });

  it('with trim, removes spaces of every kind around a value before it is checked or loaded', async () => {
    const text = 'id,note,booked\n  T-1 , a note\u00a0,\t05.12.2025 \nT-2\u2009,\u202fx\u202f, 06.12.2025\n';
    expect(await values(file(text), padded(true))).toEqual([
      ['T-1', 'a note', '2025-12-05'],
      ['T-2', 'x', '2025-12-06'],
    ]);
  });

  it('without trim, refuses a padded key naming the column and trim, and loads padded text as written', async () => {
    expect(await problem(file('id,note,booked\n  T-1 ,,\n'), padded(false))).toBe(
      'line 2, field id: "  T-1 " begins with a space: "trim": true would remove the padding',
    );
    expect(await problem(file('id,note,booked\nT-1\u00a0,,\n'), padded(false))).toBe(
      'line 2, field id: "T-1\\u00a0" ends with a space (U+00A0): "trim": true would remove the padding',
    );
    expect(await values(file('id,note,booked\nT-1, a note ,\n'), padded(false))).toEqual([['T-1', ' a note ', null]]);
  });

  it('reads a blank optional value written as spaces as empty, with or without trim; a blank required one is missing', async () => {
    for (const trim of [false, true]) {
      expect(await values(file('id,note,booked\nT-1,   ,\u00a0\t \n'), padded(trim))).toEqual([['T-1', null, null]]);
      expect(await problem(file('id,note,booked\n  ,,\n'), padded(trim))).toBe('line 2, field id: required value is missing');
    }
  });

  it('says trim for a padded date in a key, not "is not a date"', async () => {
    const l = layout({ columns: [{ name: 'day', type: 'date' }], naturalKey: 'day' });
    expect(await problem(file('day\n 2025-12-05\n'), l)).toBe(
      'line 2, field day: " 2025-12-05" begins with a space: "trim": true would remove the padding',
    );
  });

  it('refuses a "trim" that is not a boolean', () => {
    expect(usage(() => layout({ columns: [{ name: 'id', type: 'text', trim: 'yes' }], naturalKey: 'id' }))).toBe(
      'test: layout column "id": "trim" must be true (spaces around a value removed) or false',
    );
  });
});

describe('a natural key with a timestamp', () => {
  const charges = () =>
    layout({
      columns: [
        { name: 'charge_id', from: 'id', type: 'text' },
        { name: 'created', from: 'Created', type: 'timestamp', format: 'yyyy-MM-dd HH:mm', timeZone: 'Europe/Berlin' },
        { name: 'created_text', from: 'Created', type: 'text' },
      ],
      naturalKey: ['charge_id', 'created'],
    });

  it('is allowed, and one header may feed a timestamp and a text column', async () => {
    expect(charges().naturalKey).toEqual(['charge_id', 'created']);
    expect(await values(file('id,Created\nch_1,2021-02-03 13:12\nch_1,2021-03-03 13:12\n'), charges())).toEqual([
      ['ch_1', '2021-02-03 13:12:00+01:00', '2021-02-03 13:12'],
      ['ch_1', '2021-03-03 13:12:00+01:00', '2021-03-03 13:12'],
    ]);
  });

  it('still refuses a header the file names twice without "occurrence"', async () => {
    expect(await problem(file('id,Created,Created\nch_1,2021-02-03 13:12,2021-02-03 13:12\n'), charges())).toBe(
      'line 1: header names "Created" twice (columns 2 and 3): say which with the column\'s "occurrence"',
    );
  });

  it('refuses an optional timestamp in a key: an empty part is kept as text', () => {
    expect(
      usage(() =>
        layout({
          columns: [
            { name: 'id', type: 'text' },
            { name: 'at', type: 'timestamp', timeZone: 'UTC', required: false },
          ],
          naturalKey: ['id', 'at'],
        }),
      ),
    ).toMatch(
      /^test: layout natural key column "at" is optional and of type timestamp: an empty one would be NULL.* "from": "at", "type": "text"/,
    );
  });

  it('tells one instant written with two offsets as one identity, and two instants apart', () => {
    expect(timestampIdentity('2021-03-01 10:00:00+01:00')).toBe(timestampIdentity('2021-03-01 09:00:00+00:00'));
    expect(timestampIdentity('2021-03-01 04:30:00-04:30')).toBe(timestampIdentity('2021-03-01 09:00:00+00:00'));
    expect(timestampIdentity('2021-03-01 09:00:00.5+00:00')).toBe(timestampIdentity('2021-03-01 09:00:00.500000+00:00'));
    expect(timestampIdentity('2021-03-01 09:00:00.000001+00:00')).not.toBe(timestampIdentity('2021-03-01 09:00:00+00:00'));
    expect(timestampIdentity('2021-03-01 10:00:00+01:00')).not.toBe(timestampIdentity('2021-03-01 10:00:00+00:00'));
    expect(timestampIdentity('0050-03-01 10:00:00+00:00')).not.toBe(timestampIdentity('1950-03-01 10:00:00+00:00'));
    expect(timestampIdentity('0001-01-01 00:30:00+01:00')).toBe(timestampIdentity('0000-12-31 23:30:00+00:00'));
  });
});
