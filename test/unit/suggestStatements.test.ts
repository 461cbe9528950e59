import { describe, expect, it } from 'vitest';
import { draftRoundTrip } from '../support/draftRoundTrip.js';

const fixture = (name: string) => `fixtures/statements/${name}`;

describe('layout suggest on statements in the legacy encodings of the world', () => {
  it.each([
    ['cathay_statement_big5.csv', 'big5'],
    ['mufg_statement_sjis.csv', 'shift_jis'],
    ['kb_statement_euckr.csv', 'euc-kr'],
    ['sber_statement_cp1251.csv', 'windows-1251'],
    ['vtb_statement_koi8r.csv', 'koi8-r'],
  ])('drafts %s in %s, and the file checks with the draft', async (name, encoding) => {
    const { s, layout, checked } = await draftRoundTrip(fixture(name), name);
    expect(layout).toMatchObject({ encoding });
    expect(s.encoding?.encoding).toBe(encoding);
    expect(checked.error).toBeNull();
    expect(checked.rows).toBe(20);
  });

  it('says an unsure encoding is unsure, naming the alternative', async () => {
    const { s } = await draftRoundTrip(fixture('kb_statement_euckr.csv'), 'kb.csv');
    expect(s.draft!.unsure.join('\n')).toMatch(/the encoding: .*euc-kr.*; else gb18030/);
  });

  it('types 19- and 20-digit account numbers as text, never as amounts', async () => {
    const { s } = await draftRoundTrip(fixture('sber_statement_cp1251.csv'), 'sber.csv');
    const account = s.draft!.columns.find((c) => c.header === 'Счёт')!;
    expect(account.type).toBe('text');
    expect(account.why).toMatch(/account or card numbers/);
  });
});
