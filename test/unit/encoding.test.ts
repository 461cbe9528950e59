import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { CsvRecordError, csvRecordBlocks } from '../../src/layout/reader/csvRecords.js';
import { lastRecordCutShort } from '../../src/layout/reader/lastRecord.js';
import type { Layout } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows, readSettlement } from '../../src/layout/reader/readSettlement.js';
import { decodeTail, TextChunks } from '../../src/layout/reader/textDecoding.js';
import { encodingName } from '../../src/layout/values/encodings.js';
import { endsWithTrailer } from '../../src/layout/reader/trailer.js';

const dir = mkdtempSync(join(tmpdir(), 'settle-enc-'));
let files = 0;
function file(content: Buffer): string {
  const path = join(dir, `f${files++}.csv`);
  writeFileSync(path, content);
  return path;
}

/** Text as a single-byte encoding writes it: each character's byte, taken from what the decoder reads each byte as. */
function singleByte(text: string, encoding: string): Buffer {
  const byChar = new Map<string, number>();
  // the streaming call: Node 20's one-shot decode reads windows-1252 as ISO-8859-1
  for (let b = 0; b < 256; b++) byChar.set(new TextDecoder(encoding).decode(Uint8Array.of(b), { stream: true }), b);
  return Buffer.from([...text].map((ch) => byChar.get(ch)!));
}

function utf16be(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  return le.swap16();
}

const LE_BOM = Buffer.from([0xff, 0xfe]);
const BE_BOM = Buffer.from([0xfe, 0xff]);

/** Every record's fields, read in chunks of `chunkBytes`. */
async function records(path: string, encoding: string | undefined, chunkBytes?: number, delimiter = ';'): Promise<string[][]> {
  const out: string[][] = [];
  const opts = { delimiter, maxRecordBytes: 1 << 20, ...(encoding ? { encoding } : {}), ...(chunkBytes ? { chunkBytes } : {}) };
  for await (const block of csvRecordBlocks(path, opts)) for (let r = block.next(); r !== null; r = block.next()) out.push(r.fields);
  return out;
}

async function readError(path: string, encoding: string | undefined, chunkBytes?: number): Promise<CsvRecordError> {
  try {
    await records(path, encoding, chunkBytes);
  } catch (err) {
    if (err instanceof CsvRecordError) return err;
    throw err;
  }
  throw new Error('expected the file to be refused');
}

const layoutOf = (raw: Record<string, unknown>): Layout =>
  parseLayout(
    {
      columns: [
        { name: 'id', from: 'Buchungstext', type: 'text' },
        { name: 'amount', from: 'Betrag', type: 'decimal' },
      ],
      naturalKey: 'id',
      ...raw,
    },
    'layout',
  );

const TEXT = 'Buchungstext;Empfänger;Betrag\nÜberweisung Müller;Café Zürich;12.50\nGebühr;Straße „Nord“ €;-1.00\n';
const ROWS = [
  ['Buchungstext', 'Empfänger', 'Betrag'],
  ['Überweisung Müller', 'Café Zürich', '12.50'],
  ['Gebühr', 'Straße „Nord“ €', '-1.00'],
];

describe('the layout key "encoding"', () => {
  it('takes the labels TextDecoder knows, kept as it names them; "utf-16" is by the BOM; UTF-8 is the default', () => {
    expect(layoutOf({ encoding: 'ISO-8859-1' }).encoding).toBe('windows-1252');
    expect(layoutOf({ encoding: 'latin1' }).encoding).toBe('windows-1252');
    expect(layoutOf({ encoding: 'iso-8859-15' }).encoding).toBe('iso-8859-15');
    expect(layoutOf({ encoding: 'windows-1250' }).encoding).toBe('windows-1250');
    expect(layoutOf({ encoding: 'utf-16le' }).encoding).toBe('utf-16le');
    expect(layoutOf({ encoding: 'UTF-16BE' }).encoding).toBe('utf-16be');
    expect(layoutOf({ encoding: 'utf-16' }).encoding).toBe('utf-16');
    expect(layoutOf({ encoding: 'utf-8' }).encoding).toBeUndefined();
    expect(layoutOf({}).encoding).toBeUndefined();
    expect(toLayoutJson(layoutOf({ encoding: 'windows-1250' })).encoding).toBe('windows-1250');
    expect(encodingName('klingon')).toBeUndefined();
  });

  it('refuses a label TextDecoder does not know, and one that is not a string, naming the key', () => {
    for (const encoding of ['klingon', 'replacement', 7, '']) {
      expect(() => layoutOf({ encoding })).toThrow(UsageError);
      expect(() => layoutOf({ encoding })).toThrow(/"encoding" must be an encoding label/);
    }
  });
});

describe('decoding in the stream', () => {
  const cases: [string, Buffer][] = [
    ['windows-1252', singleByte(TEXT, 'windows-1252')],
    ['iso-8859-15', singleByte(TEXT.replace(/[„“]/g, '"').replace('"Nord"', 'Nord'), 'iso-8859-15')],
    ['utf-16le', Buffer.concat([LE_BOM, Buffer.from(TEXT, 'utf16le')])],
    ['utf-16le', Buffer.from(TEXT, 'utf16le')],
    ['utf-16be', Buffer.concat([BE_BOM, utf16be(TEXT)])],
    ['utf-16be', utf16be(TEXT)],
    ['utf-16', Buffer.concat([LE_BOM, Buffer.from(TEXT, 'utf16le')])],
    ['utf-16', Buffer.concat([BE_BOM, utf16be(TEXT)])],
  ];

  it('reads the same records whatever the read size cuts, a BOM dropped', async () => {
    for (const [encoding, bytes] of cases) {
      const path = file(bytes);
      const whole = await records(path, encoding);
      const expected = encoding === 'iso-8859-15' ? ROWS.map((r) => r.map((f) => f.replace('Straße „Nord“ €', 'Straße Nord €'))) : ROWS;
      expect(whole, encoding).toEqual(expected);
      for (const chunkBytes of [1, 2, 3, 5, 7])
        expect(await records(path, encoding, chunkBytes), `${encoding} by ${chunkBytes}`).toEqual(whole);
    }
  });

  it('reads Central European letters in windows-1250, and € at 0xA4 in iso-8859-15', async () => {
    const czech = 'Protistrana;Částka\nŘízení dopravy, Plzeň;-1 234,50\nŠkoda Žďár;ů\n';
    expect(await records(file(singleByte(czech, 'windows-1250')), 'windows-1250')).toEqual([
      ['Protistrana', 'Částka'],
      ['Řízení dopravy, Plzeň', '-1 234,50'],
      ['Škoda Žďár', 'ů'],
    ]);
    expect(await records(file(Buffer.from([0x61, 0x3b, 0xa4, 0x0a])), 'iso-8859-15')).toEqual([['a', '€']]);
    expect(await records(file(Buffer.from([0x61, 0x3b, 0xa4, 0x0a])), 'iso-8859-1')).toEqual([['a', '¤']]);
  });

  it('refuses "utf-16" without a byte-order mark, and a BOM of the other byte order, saying which to set', async () => {
    const noBom = await readError(file(Buffer.from(TEXT, 'utf16le')), 'utf-16');
    expect([noBom.line, noBom.problem]).toEqual([1, 'not valid UTF-16']);
    expect(noBom.message).toMatch(/does not begin with a byte-order mark: set the layout's "encoding" to "utf-16le" or "utf-16be"/);
    const swapped = await readError(file(Buffer.concat([BE_BOM, utf16be(TEXT)])), 'utf-16le');
    expect(swapped.problem).toBe('not valid UTF-16LE');
    expect(swapped.message).toMatch(/byte-order mark says UTF-16BE: set the layout's "encoding" to "utf-16be"/);
  });

  it('names the line and field of a lone surrogate in UTF-16, and tells a file cut inside a character', async () => {
    const good = Buffer.from('a;b\nc;d\n', 'utf16le');
    const lone = Buffer.concat([good, Buffer.from('e;f', 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('g\n', 'utf16le')]);
    for (const chunkBytes of [undefined, 1, 3]) {
      const err = await readError(file(lone), 'utf-16le', chunkBytes);
      expect([err.line, err.column, err.problem, err.undecodable?.cut]).toEqual([3, 1, 'not valid UTF-16LE', false]);
    }
    const cut = await readError(file(Buffer.concat([good, Buffer.from('e;f', 'utf16le'), Buffer.from([0x67])])), 'utf-16le');
    expect([cut.line, cut.column, cut.undecodable?.cut]).toEqual([3, 1, true]);
  });
});

describe('a file that is not UTF-8 under a UTF-8 layout', () => {
  it('names the byte, the line and field, and the single-byte encodings it reads right in', async () => {
    const bytes = Buffer.concat([Buffer.from('Buchungstext;Betrag\nMiete;1.00\n'), singleByte('Café Müller;2.00\n', 'windows-1252')]);
    // the place is the same whatever the reads cut (the bytes shown are those of the read in hand)
    for (const chunkBytes of [1, 4]) {
      const err = await readError(file(bytes), undefined, chunkBytes);
      expect([err.line, err.column, err.problem]).toEqual([3, 0, 'not valid UTF-8']);
    }
    {
      const err = await readError(file(bytes), undefined);
      expect(err.message).toBe(
        'line 3, column 1: not valid UTF-8 (0xE9 in "Caf\\xE9 M\\xFCller;2.0"); the file looks like windows-1252 or iso-8859-1, or windows-1250 (each reads it "Café Müller;2.0"): set the layout\'s "encoding"',
      );
    }
  });

  it('names windows-1250 alone when clearly more of the line reads as letters in it', async () => {
    const bytes = Buffer.concat([Buffer.from('Protistrana;Castka\n'), singleByte('Ťažba Łódź;1,00\n', 'windows-1250')]);
    const err = await readError(file(bytes), undefined);
    expect(err.message).toMatch(
      /the file looks like windows-1250 \(it reads "Ťažba Łódź;1"\): set the layout's "encoding" to "windows-1250"$/,
    );
  });

  it('says UTF-16 for a UTF-16 byte-order mark, and for NULs beside each letter', async () => {
    const bom = await readError(file(Buffer.concat([LE_BOM, Buffer.from(TEXT, 'utf16le')])), undefined);
    expect(bom.message).toMatch(
      /^line 1, column 1: not valid UTF-8 .*begins with a UTF-16 byte-order mark: set the layout's "encoding" to "utf-16"$/,
    );
    const le = await readError(file(Buffer.from(TEXT, 'utf16le')), undefined);
    expect(le.message).toMatch(/looks like UTF-16 without a byte-order mark: set the layout's "encoding" to "utf-16le"$/);
    const be = await readError(file(utf16be(TEXT)), undefined);
    expect(be.message).toMatch(/looks like UTF-16 without a byte-order mark: set the layout's "encoding" to "utf-16be"$/);
  });

  it('never names a layout column for a bad byte in the header itself', async () => {
    const bytes = singleByte('Buchungstext;Empfänger;Betrag\nx;y;1.00\n', 'windows-1252');
    const { error } = await findBadRows(file(bytes), layoutOf({ delimiter: ';' }));
    expect(error?.message).toMatch(/^line 1, field column 2 of the header: not valid UTF-8 \(0xE4 in "ngstext;Empf\\xE4nger;Betrag"\)/);
    expect(error?.field).toBe('column 2 of the header');
  });
});

describe('every reader of text sees it decoded', () => {
  it('reads the header and rows of a windows-1252 file by its decoded names', async () => {
    const bytes = singleByte('Buchungstext;Empfänger;Betrag\nÜberweisung Müller;Café;12.50\n', 'windows-1252');
    const layout = parseLayout(
      {
        delimiter: ';',
        encoding: 'iso-8859-1',
        columns: [
          { name: 'text', from: 'Buchungstext', type: 'text' },
          { name: 'payee', from: 'Empfänger', type: 'text' },
          { name: 'amount', from: 'Betrag', type: 'decimal' },
        ],
        naturalKey: 'text',
      },
      'layout',
    );
    const rows = [];
    for await (const row of readSettlement(file(bytes), layout)) rows.push(row.values);
    expect(rows).toEqual([['Überweisung Müller', 'Café', '12.50']]);
  });

  it('finds a UTF-16 upload cut short by its characters, not its bytes', async () => {
    const layout = layoutOf({ delimiter: ';', encoding: 'utf-16' });
    const head = 'Buchungstext;Empfänger;Betrag\nA;Ä;1.00\n';
    const enc = (text: string) => Buffer.concat([LE_BOM, Buffer.from(text, 'utf16le')]);
    expect(await lastRecordCutShort(file(enc(head)), layout)).toBeUndefined();
    expect(await lastRecordCutShort(file(enc(`${head}B;Ö;2.00`)), layout)).toBeUndefined();
    expect(await lastRecordCutShort(file(enc(`${head}B;Ö`)), layout)).toEqual({ line: 3, fields: 2, expected: 3 });
    // a last character's two bytes, only one of them there yet
    const oneByte = Buffer.concat([enc(`${head}B;`), Buffer.from([0xd6])]);
    expect(await lastRecordCutShort(file(oneByte), layout)).toEqual({ line: 3, fields: 2, expected: 3 });
    // big-endian: the last byte is a line end's, yet the last character is U+010A, not a line end
    const be = layoutOf({ delimiter: ';', encoding: 'utf-16be' });
    expect(await lastRecordCutShort(file(utf16be(`${head}B;Ċ`)), be)).toEqual({ line: 3, fields: 2, expected: 3 });
    expect(await lastRecordCutShort(file(utf16be(`${head}B;Ċ;1.00`)), be)).toBeUndefined();
  });

  it('reads the trailer from a UTF-16 file’s end, and the tail of a file in its encoding', async () => {
    const layout = layoutOf({ delimiter: ';', encoding: 'utf-16', trailer: { firstField: 'Summe', rowCountField: 2 } });
    const bytes = Buffer.concat([LE_BOM, Buffer.from('Buchungstext;Betrag\nA;1.00\nSumme;1\n', 'utf16le')]);
    expect(await endsWithTrailer(file(bytes), layout)).toBe(true);
    // 0x80 is € in windows-1252 (Node's one-shot decode would read U+0080)
    const path = file(singleByte('x;Straße €\n', 'windows-1252'));
    expect(await decodeTail(path, 'windows-1252', 9)).toEqual({ text: 'Straße €\n', cut: false });
    // an odd start is moved back to a character's first byte
    const utf16 = file(Buffer.concat([LE_BOM, Buffer.from('abc', 'utf16le')]));
    expect(await decodeTail(utf16, 'utf-16', 3)).toEqual({ text: 'bc', cut: false });
  });
});

describe('TextChunks', () => {
  it('drops a UTF-8 BOM split across writes, and counts a lone start of one as nothing', () => {
    const chunks = new TextChunks();
    expect(chunks.write(Buffer.from([0xef])).text).toBe('');
    expect(chunks.write(Buffer.from([0xbb, 0xbf, 0x61])).text).toBe('a');
    expect(chunks.end()).toEqual({ text: '' });
    const lone = new TextChunks();
    expect(lone.write(Buffer.from([0xef, 0xbb])).text).toBe('');
    expect(lone.end()).toEqual({ text: '' });
  });
});
