import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { deliveryFiles, PGP_PASSPHRASE } from '../support/deliveryFiles.js';
import { financeDatabase, parseSummary, rowsWithPrefix, Workspace, type FinanceDatabase } from '../support/workspace.js';

const opened: FinanceDatabase[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((d) => d.close()));
});

const A = 'settle_20261101_a.csv'; // loaded by the old set-up: its file marker is in the finance database
const B = 'settle_20261102_b.csv'; // loaded before file markers existed: every key is in the table, no marker of its bytes
const C = 'settle_20261103_c.csv'; // never loaded
const D = 'settle_20261104_d.csv'; // half loaded: the first 3 of its 6 rows are in the table

/**
 * A finance database with the old set-up's loads, and an archive of four files in the four
 * states. B's rows came in from a copy with CRLF line ends, D's first half from a shorter copy:
 * the table holds their keys, but no file marker has their archived bytes.
 */
async function oldArchive() {
  const db = await financeDatabase();
  opened.push(db);
  const a = sampleSettlement({ date: '2026-11-01', rows: 30, idPrefix: 'OLD-A' }).text;
  const b = { date: '2026-11-02', rows: 5, idPrefix: 'OLD-B' };
  const c = sampleSettlement({ date: '2026-11-03', rows: 4, idPrefix: 'OLD-C' }).text;
  const d = { date: '2026-11-04', idPrefix: 'OLD-D' };

  const old = await Workspace.create(db.url);
  await old.put('settle_20261101_a.csv', a);
  await old.put('settle_20261102_b_crlf.csv', sampleSettlement({ ...b, eol: '\r\n' }).text);
  await old.put('settle_20261104_d_first_half.csv', sampleSettlement({ ...d, rows: 3 }).text);
  expect(parseSummary((await old.run()).stdout)).toMatchObject({ loaded: 3, rows: 38 });

  const archive = await mkdtemp(join(tmpdir(), 'settle-old-archive-'));
  await writeFile(join(archive, A), a);
  await writeFile(join(archive, B), sampleSettlement(b).text);
  await writeFile(join(archive, C), c);
  await writeFile(join(archive, D), sampleSettlement({ ...d, rows: 6 }).text);
  return { db, archive, c };
}

interface AdoptJson {
  version: number;
  run: string;
  dry_run: boolean;
  exit_status: number;
  files: {
    name: string;
    sha256: string | null;
    content_sha256: string | null;
    outcome: string;
    evidence?: string;
    rows: number | null;
    present_rows?: number;
    same_as?: string;
    message: string;
  }[];
  [count: string]: unknown;
}

async function adopt(ws: Workspace, archive: string, extra: string[] = [], env: Record<string, string> = {}) {
  const r = await ws.cli(['adopt', '--archive', archive, '--ledger', ws.ledger, '--json', ...extra], env);
  return { status: r.status, json: JSON.parse(r.stdout) as AdoptJson, stderr: r.stderr };
}

const outcomes = (j: AdoptJson) => j.files.map((f) => [f.name, f.outcome, f.evidence ?? null, f.rows]);

describe('adopt --archive', () => {
  it('records only what the finance database shows loaded, reports the rest by name (exit 1), and a run then loads the rest', async () => {
    const { db, archive, c } = await oldArchive();
    const ws = await Workspace.create(db.url);
    const r = await adopt(ws, archive);
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ version: 1, dry_run: false, adopted: 2, not_loaded: 1, partly_loaded: 1, exit_status: 1 });
    expect(outcomes(r.json)).toEqual([
      [A, 'adopted', 'file-marker', 30],
      [B, 'adopted', 'natural-keys', 5],
      [C, 'not-loaded', null, 4],
      [D, 'partly-loaded', null, 6],
    ]);
    const byName = Object.fromEntries(r.json.files.map((f) => [f.name, f]));
    expect(byName[C]!.message).toMatch(/^not loaded: leave it for a run \(move it back to the intake\) or use --assume-loaded/);
    expect(byName[D]).toMatchObject({ present_rows: 3, message: expect.stringMatching(/^partly loaded: 3 of 6 rows/) });

    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.row_count])).toEqual([
      [A, 'loaded', 30],
      [B, 'loaded', 5],
    ]);
    expect(ws.events().filter((e) => e.name === C || e.name === D)).toEqual([]);
    expect(ws.runs()).toEqual([expect.objectContaining({ run_id: r.json.run, loaded: 2, exit_status: 1 })]);

    // the never-loaded file comes back under a new name: the run loads it, it is no resend
    await ws.put('settle_20261103_c_again.csv', c);
    const run = await ws.run(['--json']);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout).files).toEqual([
      expect.objectContaining({ name: 'settle_20261103_c_again.csv', outcome: 'loaded', rows: 4 }),
    ]);
    const rows = await db.client.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'OLD-C-%'`);
    expect(rows.rows[0].n).toBe(4);

    // adopting again records nothing new and still reports the two by name
    const again = await adopt(ws, archive);
    expect(again.status).toBe(1);
    expect(outcomes(again.json).map(([name, outcome]) => [name, outcome])).toEqual([
      [A, 'known'],
      [B, 'known'],
      [C, 'known'], // loaded by the run meanwhile, under its new name
      [D, 'partly-loaded'],
    ]);
  });

  it('with occurrence keys, the n-th identical row of a file is the n-th in the table: a third coffee the table lacks is partly loaded, never adopted', async () => {
    const db = await financeDatabase();
    opened.push(db);
    const card = JSON.parse(await readFile(new URL('../../fixtures/statements/card-statement.config.json', import.meta.url), 'utf8')) as {
      layout: unknown;
      pattern: string;
    };
    // the old set-up loaded the day from a copy with CRLF line ends: two identical coffees, occurrences 1 and 2
    const day = (await readFile(new URL('../../fixtures/statements/card_2026-03-17_0600.csv', import.meta.url), 'utf8')).replaceAll(
      '\r\n',
      '\n',
    );
    const old = await Workspace.forLayout(db.url, card.layout, card.pattern);
    await old.ws.put('card_2026-03-17_0600_crlf.csv', day.replaceAll('\n', '\r\n'));
    expect(parseSummary((await old.ws.run(['--config', old.config])).stdout)).toMatchObject({ loaded: 1, rows: 3 });

    const archive = await mkdtemp(join(tmpdir(), 'settle-old-archive-'));
    await writeFile(join(archive, 'card_2026-03-17_0600.csv'), day);
    // the same day with a third identical coffee: its key is in the table, its third occurrence is not
    await writeFile(join(archive, 'card_2026-03-17_0600_third.csv'), `${day}16.03.2026,CAFE LUMEN,-3.50\n`);
    const ws = await Workspace.create(db.url);
    const r = await adopt(ws, archive, ['--config', old.config]);
    expect(r.status, r.stderr).toBe(1);
    expect(outcomes(r.json).sort()).toEqual([
      ['card_2026-03-17_0600.csv', 'adopted', 'natural-keys', 3],
      ['card_2026-03-17_0600_third.csv', 'partly-loaded', null, 4],
    ]);
    expect(r.json.files.find((f) => f.name === 'card_2026-03-17_0600_third.csv')).toMatchObject({
      present_rows: 3,
      message: expect.stringMatching(
        /^partly loaded: 3 of 4 rows. \(booking_date, merchant, amount\) values with their occurrence are in \S+ \(first missing: line 5\)/,
      ),
    });
    expect(ws.ledgerFiles().map((f) => [f.name, f.state, f.row_count])).toEqual([['card_2026-03-17_0600.csv', 'loaded', 3]]);
  });

  it('--dry-run reports what would be adopted and writes nothing to the ledger', async () => {
    const { db, archive } = await oldArchive();
    const ws = await Workspace.create(db.url);
    const r = await adopt(ws, archive, ['--dry-run']);
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ dry_run: true, would_adopt: 2, adopted: 0 });
    expect(outcomes(r.json).map(([name, outcome]) => [name, outcome])).toEqual([
      [A, 'would-adopt'],
      [B, 'would-adopt'],
      [C, 'not-loaded'],
      [D, 'partly-loaded'],
    ]);
    const text = await ws.cli(['adopt', '--archive', archive, '--ledger', ws.ledger, '--dry-run']);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain(`would adopt ${A}: its file marker is in settle.file_loads`);
    expect(text.stdout).toContain(`${C}: not loaded: leave it for a run (move it back to the intake) or use --assume-loaded`);
    expect(text.stdout).toContain(`${D}: partly loaded: 3 of 6 rows`);
    expect(text.stdout).toMatch(/^adopt \S+ dry run \(nothing recorded\): adopted=0 would_adopt=2 known=0 not_loaded=1 partly_loaded=1 /m);
    expect(ws.ledgerFiles()).toEqual([]);
    expect(ws.events()).toEqual([]);
    expect(ws.runs()).toEqual([]);
  });

  it('--assume-loaded --reason adopts a file on the operator’s word, with reason and operator in the ledger, but never a half-loaded one', async () => {
    const { db, archive } = await oldArchive();
    const ws = await Workspace.create(db.url);
    const reason = 'loaded by hand from the partner portal, ticket FIN-77';
    const r = await adopt(ws, archive, ['--assume-loaded', '--reason', reason], { SUDO_USER: 'alice', SUDO_UID: '1000' });
    expect(r.status).toBe(1); // D is still a discrepancy
    expect(outcomes(r.json)).toEqual([
      [A, 'adopted', 'file-marker', 30],
      [B, 'adopted', 'natural-keys', 5],
      [C, 'adopted', 'operator', null],
      [D, 'partly-loaded', null, 6],
    ]);
    expect(ws.ledgerFiles().map((f) => [f.name, f.state])).toEqual([
      [A, 'loaded'],
      [B, 'loaded'],
      [C, 'loaded'],
    ]);
    const ofC = ws.events().filter((e) => e.name === C);
    expect(ofC.map((e) => e.event)).toContain('loaded');
    expect(ofC).toContainEqual(
      expect.objectContaining({
        run_id: r.json.run,
        event: 'loaded',
        details: expect.objectContaining({ adopted: true, reason, operator: 'alice' }),
      }),
    );
    const history = await ws.cli(['history', C, '--ledger', ws.ledger]);
    expect(history.stdout).toContain(`${reason}; by alice`);
  });

  it('--assume-loaded needs --reason, and --reason needs --assume-loaded (exit 2, nothing recorded)', async () => {
    const { db, archive } = await oldArchive();
    const ws = await Workspace.create(db.url);
    const base = ['adopt', '--archive', archive, '--ledger', ws.ledger];
    expect((await ws.cli([...base, '--assume-loaded'])).status).toBe(2);
    expect((await ws.cli([...base, '--assume-loaded', '--reason', '  '])).status).toBe(2);
    const r = await ws.cli([...base, '--reason', 'why not']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--reason goes with --assume-loaded/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(ws.runs()).toEqual([]);
  });

  it('--pattern limits the archived files considered', async () => {
    const { db, archive } = await oldArchive();
    const ws = await Workspace.create(db.url);
    const r = await adopt(ws, archive, ['--pattern', 'settle_2026110[12]_*.csv']);
    expect(r.status).toBe(0);
    expect(outcomes(r.json).map(([name, outcome]) => [name, outcome])).toEqual([
      [A, 'adopted'],
      [B, 'adopted'],
    ]);
    expect(ws.ledgerFiles().map((f) => f.name)).toEqual([A, B]);
  });

  it('reports repeated bytes in an archive (a past double load, exit 1) and makes a later resend a skip', async () => {
    const db = await financeDatabase();
    opened.push(db);
    const old = await Workspace.create(db.url);
    const a01 = sampleSettlement({ date: '2026-11-01', rows: 30, idPrefix: 'ADOPT' }).text;
    await old.put('settle_20261101_a01.csv', a01);
    expect(parseSummary((await old.run()).stdout)).toMatchObject({ loaded: 1 });
    await mkdir(old.archive, { recursive: true });
    await copyFile(join(old.archive, 'settle_20261101_a01.csv'), join(old.archive, 'settle_20261101_a02.csv')); // loaded twice back then

    const fresh = await Workspace.create(db.url);
    const r = await adopt(fresh, old.archive);
    expect(r.status).toBe(1);
    expect(r.json.files).toEqual([
      expect.objectContaining({ name: 'settle_20261101_a01.csv', outcome: 'adopted', rows: 30 }),
      expect.objectContaining({ name: 'settle_20261101_a02.csv', outcome: 'content-duplicate', same_as: 'settle_20261101_a01.csv' }),
    ]);
    expect(fresh.ledgerFiles().map((f) => [f.name, f.state])).toEqual([['settle_20261101_a01.csv', 'loaded']]);

    await fresh.put('settle_20261101_a03.csv', a01);
    const run = await fresh.run(['--json']);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout).files[0]).toMatchObject({ outcome: 'skipped', duplicate_of: { name: 'settle_20261101_a01.csv' } });
  });

  it('needs --archive (exit 2)', async () => {
    const db = await financeDatabase();
    opened.push(db);
    const ws = await Workspace.create(db.url);
    expect((await ws.cli(['adopt', '--ledger', ws.ledger])).status).toBe(2);
  });
});

describe('adopt --archive with gzipped and encrypted files', () => {
  const make = deliveryFiles();
  const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  const ALL = ['--pattern', 'settle_*'];
  const withKeys = () => [...ALL, '--pgp-key', make.ourKey, '--pgp-verify-key', make.partnerKey];
  const PASS = { SETTLE_PGP_PASSPHRASE: PGP_PASSPHRASE };
  const hashes = (ws: Workspace) =>
    ws.query<{ name: string; sha256: string; content_sha256: string | null; state: string; row_count: number | null }>(
      'SELECT name, sha256, content_sha256, state, row_count FROM processed_files ORDER BY id',
    );

  it.each(['sqlite', 'postgres'] as const)(
    'adopts a gzipped file by its content’s file marker with both hashes (%s ledger); a plain copy is the same content, a re-compressed resend is then skipped',
    async (store) => {
      const db = await financeDatabase();
      opened.push(db);
      const csv = sampleSettlement({ date: '2026-12-01', rows: 30, idPrefix: 'GZA' }).text;
      const old = await Workspace.create(db.url);
      await old.put('settle_20261201_a01.csv', csv);
      expect(parseSummary((await old.run()).stdout)).toMatchObject({ loaded: 1 });
      const gz = await make.gzip(csv, 9);
      const GZ = 'settle_20261201_a01.csv.gz';
      const PLAIN = 'settle_20261201_a02.csv';
      const archive = await mkdtemp(join(tmpdir(), 'settle-old-archive-'));
      await writeFile(join(archive, GZ), gz);
      await writeFile(join(archive, PLAIN), csv);

      const ws = await Workspace.create(db.url, { ledger: store });
      const r = await adopt(ws, archive, ALL);
      expect(r.status).toBe(1); // the plain copy: the old process loaded this content twice
      expect(r.json).toMatchObject({ adopted: 1, content_duplicate: 1, undecodable: 0 });
      expect(r.json.files).toEqual([
        expect.objectContaining({
          name: GZ,
          outcome: 'adopted',
          evidence: 'file-marker',
          rows: 30,
          sha256: sha(gz),
          content_sha256: sha(csv),
        }),
        expect.objectContaining({ name: PLAIN, outcome: 'content-duplicate', same_as: GZ, message: `has the same content as ${GZ}` }),
      ]);
      expect(hashes(ws)).toEqual([{ name: GZ, sha256: sha(gz), content_sha256: sha(csv), state: 'loaded', row_count: 30 }]);
      expect(ws.events().find((e) => e.event === 'loaded')?.details).toMatchObject({
        adopted: true,
        evidence: 'file-marker',
        contentSha256: sha(csv),
        layers: ['gzip'],
      });

      // the plain copy on its own is known: the ledger has its content, inside the gzip
      const again = await adopt(ws, archive, ['--pattern', `*_a02.csv`]);
      expect(again.status).toBe(0);
      expect(again.json.files).toEqual([expect.objectContaining({ name: PLAIN, outcome: 'known', rows: 30 })]);
      expect(hashes(ws)).toHaveLength(1);

      // the partner resends the content gzipped anew: a duplicate, nothing loaded twice
      const resend = await make.gzip(csv, 1);
      await ws.put('settle_20261201_a03.csv.gz', resend);
      const run = await ws.run([...ALL, '--json']);
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ loaded: 0, skipped: 1, files: [{ outcome: 'skipped' }] });
      expect(await ws.files('intake')).toEqual([]);
      expect(await ws.read('duplicates', 'settle_20261201_a03.csv.gz')).toEqual(resend);
      expect(await rowsWithPrefix(db, 'GZA')).toBe(30);
    },
  );

  it('names an encrypted file it cannot decode (no --pgp-key; not signed by the partner) and adopts nothing of it, not even on the operator’s word', async () => {
    const db = await financeDatabase();
    opened.push(db);
    const csv = sampleSettlement({ date: '2026-12-02', rows: 6, idPrefix: 'PGPA' }).text;
    const forged = sampleSettlement({ date: '2026-12-03', rows: 4, idPrefix: 'PGPF' }).text;
    // the old process loaded both with CRLF line ends: every key is in the table, no file marker of these contents
    const old = await Workspace.create(db.url);
    await old.put('settle_20261202_crlf.csv', sampleSettlement({ date: '2026-12-02', rows: 6, idPrefix: 'PGPA', eol: '\r\n' }).text);
    await old.put('settle_20261203_crlf.csv', sampleSettlement({ date: '2026-12-03', rows: 4, idPrefix: 'PGPF', eol: '\r\n' }).text);
    expect(parseSummary((await old.run()).stdout)).toMatchObject({ loaded: 2 });
    const SIGNED = 'settle_20261202_a01.csv.pgp';
    const STRANGER = 'settle_20261203_a01.csv.pgp';
    const signed = await make.encrypted(csv, 'partner');
    const archive = await mkdtemp(join(tmpdir(), 'settle-old-archive-'));
    await writeFile(join(archive, SIGNED), signed);
    await writeFile(join(archive, STRANGER), await make.encrypted(forged, 'stranger'));
    const ws = await Workspace.create(db.url);

    const noKey = await adopt(ws, archive, [...ALL, '--assume-loaded', '--reason', 'loaded by the old cron, FIN-90']);
    expect(noKey.status).toBe(1);
    expect(noKey.json).toMatchObject({ adopted: 0, undecodable: 2, exit_status: 1 });
    for (const f of noKey.json.files) {
      expect(f).toMatchObject({ outcome: 'undecodable', content_sha256: null, rows: null });
      expect(f.message).toMatch(
        /^cannot be decoded: it is OpenPGP-encrypted \(for key [0-9A-F]+\) and no --pgp-key is configured; not adopted/,
      );
      expect(f.message).toContain('--assume-loaded cannot adopt it either');
    }
    expect(ws.ledgerFiles()).toEqual([]);
    const text = await ws.cli(['adopt', '--archive', archive, '--ledger', ws.ledger, ...ALL]);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain(`${SIGNED}: cannot be decoded: it is OpenPGP-encrypted`);
    expect(text.stdout).toMatch(/ unreadable=0 undecodable=2 /);
    expect(text.stderr).not.toMatch(/\n\s+at /);

    // with the keys: the partner's file is adopted by its keys, the stranger's is named, never adopted
    const r = await adopt(ws, archive, withKeys(), PASS);
    expect(r.status).toBe(1);
    expect(r.json.files).toEqual([
      expect.objectContaining({
        name: SIGNED,
        outcome: 'adopted',
        evidence: 'natural-keys',
        rows: 6,
        sha256: sha(signed),
        content_sha256: sha(csv),
      }),
      expect.objectContaining({
        name: STRANGER,
        outcome: 'undecodable',
        message: expect.stringContaining(`not by the required key ${make.partnerFingerprint} (--pgp-verify-key)`),
      }),
    ]);
    expect(hashes(ws)).toEqual([{ name: SIGNED, sha256: sha(signed), content_sha256: sha(csv), state: 'loaded', row_count: 6 }]);

    // adopted on its keys, so no file marker has its content: the ledger alone knows it. The
    // partner encrypts it anew, and later sends it plain: both are that content's resends, skipped
    const again = await make.encrypted(csv, 'partner');
    await ws.put('settle_20261202_a02.csv.pgp', again);
    const resent = await ws.run([...withKeys(), '--json'], PASS);
    expect(resent.status, resent.stderr).toBe(0);
    expect(JSON.parse(resent.stdout)).toMatchObject({
      loaded: 0,
      skipped: 1,
      rejected: 0,
      files: [{ name: 'settle_20261202_a02.csv.pgp', outcome: 'skipped', duplicate_of: { name: SIGNED } }],
    });
    await ws.put('settle_20261202_a03.csv', csv);
    const plain = await ws.run([...ALL, '--json']);
    expect(JSON.parse(plain.stdout)).toMatchObject({ loaded: 0, skipped: 1, rejected: 0 });
    expect(await ws.files('duplicates')).toEqual(['settle_20261202_a02.csv.pgp', 'settle_20261202_a03.csv']);
    expect(await ws.files('rejected')).toEqual([]);
    expect(await rowsWithPrefix(db, 'PGPA')).toBe(6);
    const review = (await ws.cli(['report', 'skips', '--ledger', ws.ledger])).stdout;
    expect(review).toMatch(/settle_20261202_a03\.csv .*same content as settle_20261202_a01\.csv\.pgp/);
  });
});
