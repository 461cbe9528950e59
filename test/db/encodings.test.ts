import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSummary, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A German bank's statement shape: `;`, decimal comma, umlauts in the header and the values. */
const LAYOUT = {
  table: 'bank_statement_rows',
  delimiter: ';',
  decimalMark: ',',
  groupSeparator: '.',
  columns: [
    { name: 'booked', from: 'Buchungstag', type: 'date', format: 'dd.MM.yyyy' },
    { name: 'reference', from: 'Referenz', type: 'text' },
    { name: 'payee', from: 'Empfänger', type: 'text' },
    { name: 'purpose', from: 'Verwendungszweck', type: 'text', required: false },
    { name: 'amount', from: 'Betrag (€)', type: 'decimal' },
  ],
  naturalKey: 'reference',
};

const TEXT = [
  'Buchungstag;Referenz;Empfänger;Verwendungszweck;Betrag (€)',
  '01.03.2026;{P}-1;Müller & Söhne GmbH;Miete März;-1.250,00',
  '02.03.2026;{P}-2;Café Zürich;„Bewirtung“ – Team;-38,90',
  '03.03.2026;{P}-3;Straßenbahn AG;;12,50',
  '',
].join('\r\n');
const text = (prefix: string) => TEXT.replaceAll('{P}', prefix);

/** Text as windows-1252 writes it, each character's byte found by the decoder itself (streaming: see textDecoding.ts). */
function windows1252(value: string): Buffer {
  const byChar = new Map<string, number>();
  for (let b = 0; b < 256; b++) byChar.set(new TextDecoder('windows-1252').decode(Uint8Array.of(b), { stream: true }), b);
  return Buffer.from([...value].map((ch) => byChar.get(ch)!));
}

const utf16le = (value: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(value, 'utf16le')]);

async function workspace(encoding: string | undefined) {
  const ws = await Workspace.create(db.url);
  const config = join(ws.root, 'bank.json');
  await writeFile(config, JSON.stringify({ layout: { ...LAYOUT, ...(encoding ? { encoding } : {}) }, pattern: 'statement_*.csv' }));
  const migrated = await ws.cli(['migrate', '--config', config, '--ledger', ws.ledger]);
  expect(migrated.status, migrated.stderr).toBe(0);
  return { ws, config, run: (more: string[] = []) => ws.run(['--config', config, ...more]) };
}

async function loaded(prefix: string) {
  const r = await db.client.query(
    `SELECT to_char(booked, 'YYYY-MM-DD') AS booked, reference, payee, purpose, amount::text FROM settle.bank_statement_rows WHERE reference LIKE $1 ORDER BY source_line`,
    [`${prefix}-%`],
  );
  return r.rows;
}

const EXPECTED = (prefix: string) => [
  { booked: '2026-03-01', reference: `${prefix}-1`, payee: 'Müller & Söhne GmbH', purpose: 'Miete März', amount: '-1250.00' },
  { booked: '2026-03-02', reference: `${prefix}-2`, payee: 'Café Zürich', purpose: '„Bewirtung“ – Team', amount: '-38.90' },
  { booked: '2026-03-03', reference: `${prefix}-3`, payee: 'Straßenbahn AG', purpose: null, amount: '12.50' },
];

describe('files in an encoding other than UTF-8', () => {
  it.each([
    ['windows-1252', 'W1252', windows1252],
    ['iso-8859-1', 'L1', windows1252],
    ['utf-16', 'U16', utf16le],
  ] as const)('loads a %s file decoded, its archive copy and hashes the bytes as received', async (encoding, prefix, encode) => {
    const { ws, run } = await workspace(encoding);
    const name = `statement_${prefix}.csv`;
    const bytes = encode(text(prefix));
    await ws.put(name, bytes);
    const r = await run();
    expect(r.status, r.stderr).toBe(0);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 1, rows: 3, rejected: 0 });
    expect(await loaded(prefix)).toEqual(EXPECTED(prefix));
    expect((await ws.read('archive', name)).equals(bytes)).toBe(true);
    const [file] = ws.query<{ sha256: string; content_sha256: string | null; state: string }>(
      'SELECT sha256, content_sha256, state FROM processed_files WHERE name = ?',
      name,
    );
    expect(file).toMatchObject({ state: 'loaded', sha256: sha(bytes) });
    expect([null, sha(bytes)]).toContain(file!.content_sha256);
    const loads = await db.client.query('SELECT sha256, delivered_sha256 FROM settle.file_loads WHERE file_name = $1', [name]);
    expect(loads.rows).toEqual([{ sha256: sha(bytes), delivered_sha256: sha(bytes) }]);
  });

  it('rejects a windows-1252 file under a UTF-8 layout, naming the line, the byte and the key to set; nothing loaded', async () => {
    const { ws, config, run } = await workspace(undefined);
    const name = 'statement_NOENC.csv';
    const bytes = windows1252(text('NOENC'));
    await ws.put(name, bytes);
    const r = await run(['--json']);
    expect(r.status).toBe(1);
    const error: string = JSON.parse(r.stdout).files[0].error;
    expect(error).toMatch(/^line 1, field column 3 of the header: not valid UTF-8 \(0xE4 in ".*Empf\\xE4nger/);
    expect(error).toMatch(/the file looks like windows-1252 or iso-8859-1.*: set the layout's "encoding"$/);
    expect(await ws.files('rejected')).toEqual([name]);
    expect((await ws.read('rejected', name)).equals(bytes)).toBe(true);
    expect(await loaded('NOENC')).toEqual([]);
    // `check` reads it as the run does: the same message; with the encoding set, ok
    // under a name the config's pattern takes (check judges the name as a run would)
    const copy = join(ws.root, 'statement_copy.csv');
    await writeFile(copy, bytes);
    const checked = await ws.cli(['check', '--config', config, copy]);
    expect([checked.status, checked.stdout.trim()]).toEqual([1, `${copy}: rejected: ${error}`]);
    const right = join(ws.root, 'right.json');
    await writeFile(right, JSON.stringify({ layout: { ...LAYOUT, encoding: 'windows-1252' }, pattern: 'statement_*.csv' }));
    const ok = await ws.cli(['check', '--config', right, copy]);
    expect([ok.status, ok.stdout.trim()]).toEqual([0, `${copy}: ok, 3 rows`]);
  });

  it('leaves a UTF-16 upload paused mid-line in the intake as not ready, and loads it once whole', async () => {
    const { ws, run } = await workspace('utf-16');
    const name = 'statement_PAUSE.csv';
    const whole = text('PAUSE');
    // cut inside the last record's third field, and inside a character's two bytes
    const cut = utf16le(whole.slice(0, whole.indexOf('Straßenbahn') + 5)).subarray(0, -1);
    await ws.put(name, cut);
    const paused = await run(['--json']);
    expect(paused.status, paused.stderr).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ not_ready: 1, loaded: 0, rejected: 0 });
    expect(await ws.files('intake')).toEqual([name]);
    expect(ws.ledgerFile(name)).toBeUndefined();
    await ws.put(name, utf16le(whole));
    const done = await run();
    expect(done.status, done.stderr).toBe(0);
    expect(parseSummary(done.stdout)).toMatchObject({ loaded: 1, rows: 3 });
    expect(await loaded('PAUSE')).toEqual(EXPECTED('PAUSE'));
  });
});
