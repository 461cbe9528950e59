import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { guessEncoding } from '../../src/layout/values/encodingGuess.js';
import { CsvRecordError, csvRecordBlocks } from '../../src/layout/reader/csvRecords.js';
import { sampleFile } from '../support/draftRoundTrip.js';

const fixture = (name: string) => `fixtures/statements/${name}`;

// the statements of fixtures/statements/, each written in its country's legacy encoding
const STATEMENTS = [
  ['icbc_statement_gb18030.csv', 'gb18030', '交易日期'],
  ['cathay_statement_big5.csv', 'big5', '交易日期'],
  ['mufg_statement_sjis.csv', 'shift_jis', '取引日'],
  ['kb_statement_euckr.csv', 'euc-kr', '거래일자'],
  ['sber_statement_cp1251.csv', 'windows-1251', 'Дата операции'],
  ['vtb_statement_koi8r.csv', 'koi8-r', 'Дата операции'],
] as const;

describe('the encoding of a file that is not UTF-8', () => {
  it.each(STATEMENTS)('names %s as %s', (name, encoding, firstHeader) => {
    const bytes = readFileSync(fixture(name));
    const guess = guessEncoding(bytes);
    expect(guess.encoding).toBe(encoding);
    expect(new TextDecoder(guess.encoding).decode(bytes)).toContain(firstHeader);
  });

  it('is sure of a clear reading, and says which else it could be when the other reading is near', () => {
    const chinese = guessEncoding(readFileSync(fixture('icbc_statement_gb18030.csv')));
    expect(chinese).toMatchObject({ encoding: 'gb18030', sure: true, alternatives: [] });
    expect(chinese.why).toMatch(/read as gb18030 it is Simplified Chinese text/);
    // Korean read as GB18030 is common Chinese characters: the detector's lead is not clear
    const korean = guessEncoding(readFileSync(fixture('kb_statement_euckr.csv')));
    expect(korean).toMatchObject({ encoding: 'euc-kr', sure: false, alternatives: ['gb18030'] });
  });

  it('keeps Latin text Latin: accents glued to ASCII letters are no Cyrillic or Chinese', () => {
    for (const text of ['2024-01-01,Déjà payé,550.56\n2024-01-02,Loyer,9433.01\n', '2024-01-01,Épargne,72.11\n2024-01-02,Gebühr,2189.13\n'])
      expect(guessEncoding(Buffer.from(text, 'latin1')).encoding).toBe('iso-8859-1');
  });

  it("check's hint names the same encoding, and how it reads the line", async () => {
    const path = sampleFile(readFileSync(fixture('sber_statement_cp1251.csv')), 'sber.csv');
    let error: unknown;
    try {
      for await (const block of csvRecordBlocks(path, { delimiter: ';', maxRecordBytes: 1 << 20 })) while (block.next());
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CsvRecordError);
    expect((error as Error).message).toMatch(
      /^line 1, column 1: not valid UTF-8 .*the file looks like windows-1251 \(it reads "Дата операци"\): set the layout's "encoding" to "windows-1251"$/,
    );
  });
});
