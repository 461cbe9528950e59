import { RESERVED_COLUMNS } from '../model/layout.js';

/**
 * Unicode text as ASCII letters, script by script (Cyrillic, Greek, Arabic, Hebrew, kana, Hangul,
 * Han as its Mandarin reading, ...): any-ascii's function, loaded on demand (`loadRomanizer`).
 */
export type Romanize = (text: string) => string;

/**
 * any-ascii: one table, per character, for every script, so a header's name never depends on
 * the text around it; its module decodes only the 256-character blocks a text uses (about 8 ms
 * of CPU to load and name a statement's header, where `transliteration` builds its whole table
 * first: about 75 ms). Loaded only when a draft is made, so no other command starts slower:
 * the bundle keeps it in a chunk of its own.
 */
export async function loadRomanizer(): Promise<Romanize> {
  return (await import('any-ascii')).default;
}

/**
 * Header words every bank of a language writes, as the name the draft gives the English header
 * of that meaning, so that a statement's columns are named alike whichever language its bank
 * writes (`金额` → `amount`, as `Amount` is): the columns the draft's types, keys and a person's
 * SQL look for first. Kept to the commonest (keys: NFKC, lower case, `ё` as `е`); any other
 * header is romanized.
 */
const FINANCE_WORDS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    date: ['日期', 'дата', '日付', '날짜', '일자'],
    transaction_date: ['交易日期', 'дата операции', '取引日', '거래일자', '거래일'],
    time: ['时间', '時間'],
    transaction_time: ['交易时间', '交易時間', 'время операции', '거래일시'],
    amount: ['金额', '金額', 'сумма', '금액'],
    transaction_amount: ['交易金额', '交易金額', 'сумма операции', '거래금액'],
    balance: ['余额', '餘額', 'остаток', '残高', '잔액'],
    currency: ['币种', '幣別', '货币', '貨幣', 'валюта', '通貨', '통화'],
    description: ['摘要', 'описание', 'назначение платежа', '적요'],
    note: ['备注', '備註', '備考', 'примечание', '비고'],
    transaction_id: ['交易单号', '交易號', '流水号', '取引番号', '거래번호'],
    counterparty: ['交易对方', '對方', 'контрагент', '取引先', '거래처'],
  }).flatMap(([name, words]) => words.map((word): [string, string] => [word, name])),
);

const lookupKey = (text: string) => text.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/\s+/g, ' ').trim();

/** A header's words, with a bracketed part after them (`金额(元)`, `Сумма (RUB)`) apart. */
function headerParts(text: string): { words: string; bracketed?: string } {
  const m = /^(.*?)\s*\(([^()]*)\)$/.exec(lookupKey(text));
  return m && m[1] !== '' ? { words: m[1]!, bracketed: m[2]! } : { words: lookupKey(text) };
}

/**
 * The English name of a header word of `FINANCE_WORDS` (`金额(元)` → `amount`, its bracket
 * aside), or undefined: what the draft reads the header as when it guesses types and keys.
 */
export function financeMeaning(text: string): string | undefined {
  const { words } = headerParts(text);
  return FINANCE_WORDS.get(words);
}

/**
 * Text as lower-case ASCII words joined by `_`: letters and digits of any script romanized (each
 * Han character its own word, `交易时间` → `jiao_yi_shi_jian`; a word of kana, Hangul, Cyrillic
 * or Latin with its marks stays one word, `Straße` → `strasse`), everything else a separator.
 */
export function asciiWords(text: string, romanize: Romanize): string {
  const letters = text
    .normalize('NFKC')
    // symbols and punctuation part words (`€` is no `eur`, `№` no `no`), an apostrophe written too
    .replace(/[^\p{ASCII}\p{L}\p{N}\p{M}]|['`]/gu, ' ')
    .replace(/\p{Script=Han}/gu, ' $& ');
  return (
    romanize(letters)
      // an apostrophe the romanization writes (a Hebrew aleph, an Armenian aspirate) is inside a word
      .replace(/['`]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
  );
}

/** Header text a name is made from: a finance word's English name (its bracket romanized after it), else the header. */
function nameWords(text: string, romanize: Romanize): string {
  const meaning = financeMeaning(text);
  if (meaning === undefined) return asciiWords(text, romanize);
  const { bracketed } = headerParts(text);
  const after = bracketed === undefined ? '' : asciiWords(bracketed, romanize);
  return after === '' ? meaning : `${meaning}_${after}`;
}

/**
 * A header's text as a table column, by the layout's rules for a name (a lower-case SQL
 * identifier, no reserved name, none twice): `Transaction ID` → `transaction_id`, `Сумма` →
 * `amount`, `Назначение` → `naznachenie`, `거래점` → `geolaejeom`; a name already taken gets `_2`, `_3`, ...
 */
export function columnName(text: string, taken: Set<string>, romanize: Romanize): string {
  let name = nameWords(text, romanize).slice(0, 60).replace(/_+$/, '');
  if (name === '') name = 'column';
  if (/^[0-9]/.test(name)) name = `c_${name}`;
  if (RESERVED_COLUMNS.includes(name)) name = `${name}_value`;
  let unique = name;
  for (let i = 2; taken.has(unique); i++) unique = `${name}_${i}`;
  taken.add(unique);
  return unique;
}
