import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN } from '../support/cli.js';
import { deliveryFiles, PGP_PASSPHRASE } from '../support/deliveryFiles.js';
import { TestSshd } from '../support/sshd.js';
import { parseSummary, rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Real files made with Debian's tools, and the keys to read them. */
const make = deliveryFiles();

const ALL = ['--pattern', 'settle_*'];
const pgpArgs = () => [...ALL, '--pgp-key', make.ourKey, '--pgp-verify-key', make.partnerKey];
const PASS = { SETTLE_PGP_PASSPHRASE: PGP_PASSPHRASE };

interface FileLoad {
  sha256: string;
  delivered_sha256: string;
  file_name: string;
}
const fileLoad = async (name: string) =>
  (await db.client.query<FileLoad>('SELECT sha256, delivered_sha256, file_name FROM settle.file_loads WHERE file_name = $1', [name]))
    .rows[0];
const contentHash = (ws: Workspace, name: string) =>
  ws.query<{ sha256: string; content_sha256: string | null }>('SELECT sha256, content_sha256 FROM processed_files WHERE name = ?', name)[0];

describe('compressed, zipped and encrypted deliveries', () => {
  it('loads a gzipped file; the same CSV gzipped again or zipped under new names is skipped naming the first', async () => {
    const ws = await Workspace.create(db.url);
    const csv = sampleSettlement({ date: '2026-06-01', rows: 40, idPrefix: 'GZ' }).text;
    const fast = await make.gzip(csv, 1);
    const best = await make.gzip(csv, 9);
    const zipped = await make.zip({ 'settle_20260601.csv': csv });
    expect(new Set([sha(fast), sha(best), sha(zipped)]).size).toBe(3);

    await ws.put('settle_20260601_a01.csv.gz', fast);
    const first = await ws.run(ALL);
    expect(first.status).toBe(0);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, rows: 40 });
    expect(await rowsWithPrefix(db, 'GZ')).toBe(40);
    // two identities: the claim on the delivered bytes, the file marker on the content
    expect(contentHash(ws, 'settle_20260601_a01.csv.gz')).toEqual({ sha256: sha(fast), content_sha256: sha(csv) });
    expect(await fileLoad('settle_20260601_a01.csv.gz')).toMatchObject({ sha256: sha(csv), delivered_sha256: sha(fast) });
    expect(await ws.read('archive', 'settle_20260601_a01.csv.gz')).toEqual(fast);

    await ws.put('settle_20260601_a02.csv.gz', best);
    await ws.put('settle_20260601_a03.zip', zipped);
    const again = await ws.run([...ALL, '--json']);
    expect(again.status).toBe(0);
    const j = JSON.parse(again.stdout);
    expect(j).toMatchObject({ loaded: 0, skipped: 2, rejected: 0 });
    for (const f of j.files)
      expect(f.duplicate_of).toMatchObject({ name: 'settle_20260601_a01.csv.gz', run: parseSummary(first.stdout).run });
    expect(await rowsWithPrefix(db, 'GZ')).toBe(40);
    expect(await ws.files('duplicates')).toEqual(['settle_20260601_a02.csv.gz', 'settle_20260601_a03.zip']);
    expect(await ws.read('duplicates', 'settle_20260601_a02.csv.gz')).toEqual(best);
    expect(await ws.read('duplicates', 'settle_20260601_a03.zip')).toEqual(zipped);
    expect(ws.ledgerFile('settle_20260601_a03.zip')).toMatchObject({ state: 'duplicate', sha256: sha(zipped) });

    // the content hash (or its first digits), or the first file's name, finds every delivery of it; audit agrees with both hashes
    for (const key of [sha(csv), sha(csv).slice(0, 10), 'settle_20260601_a01.csv.gz']) {
      const h = JSON.parse((await ws.cli(['history', key, '--ledger', ws.ledger, '--json'])).stdout);
      expect(new Set(h.events.map((e: { name: string }) => e.name))).toEqual(
        new Set(['settle_20260601_a01.csv.gz', 'settle_20260601_a02.csv.gz', 'settle_20260601_a03.zip']),
      );
    }
    const report = JSON.parse((await ws.cli(['report', 'run', '--ledger', ws.ledger, '--json'])).stdout);
    expect(report.decisions.map((d: { sha256: string; content_sha256: string }) => [d.sha256, d.content_sha256])).toEqual([
      [sha(best), sha(csv)],
      [sha(zipped), sha(csv)],
    ]);
    expect((await ws.cli(['audit', '--intake', ws.intake, '--ledger', ws.ledger])).status).toBe(0);
    // the weekly review says what matched: the content, inside other bytes
    const skips = JSON.parse((await ws.cli(['report', 'skips', '--ledger', ws.ledger, '--json'])).stdout);
    expect(skips.weeks[0].files).toEqual([
      expect.objectContaining({ name: 'settle_20260601_a02.csv.gz', sha256: sha(best), content_sha256: sha(csv), why: 'same content as' }),
      expect.objectContaining({ name: 'settle_20260601_a03.zip', sha256: sha(zipped), content_sha256: sha(csv), why: 'same content as' }),
    ]);
    // the same gzip bytes again under a new name: the ledger's match, on the delivered bytes
    await ws.put('settle_20260601_a04.csv.gz', fast);
    expect((await ws.run(ALL)).status).toBe(0);
    const review = (await ws.cli(['report', 'skips', '--ledger', ws.ledger])).stdout;
    expect(review).toMatch(/settle_20260601_a02\.csv\.gz .*same content as settle_20260601_a01\.csv\.gz/);
    expect(review).toMatch(/settle_20260601_a04\.csv\.gz .*same bytes as settle_20260601_a01\.csv\.gz/);
    expect(contentHash(ws, 'settle_20260601_a04.csv.gz')).toEqual({ sha256: sha(fast), content_sha256: sha(csv) });
    const last = JSON.parse((await ws.cli(['report', 'run', '--ledger', ws.ledger, '--json'])).stdout);
    expect(last.decisions[0]).toMatchObject({ name: 'settle_20260601_a04.csv.gz', sha256: sha(fast), content_sha256: sha(csv) });

    // check and reprocessing decode the delivered bytes too
    const checked = await ws.cli(['check', join(ws.archive, 'settle_20260601_a01.csv.gz')]);
    expect(checked.stdout).toContain('ok, 40 rows');
    const re = await ws.run([...ALL, '--reprocess', '--reason', 'layout fix', '--files', 'settle_20260601_a01.csv.gz', '--json']);
    expect(re.status).toBe(0);
    expect(JSON.parse(re.stdout).files[0]).toMatchObject({ outcome: 'reprocessed', rows: 40, previous_rows: 40 });
  });

  it('loads a PGP-encrypted and signed file with the right keys; the same CSV encrypted again is skipped', async () => {
    const ws = await Workspace.create(db.url);
    const csv = sampleSettlement({ date: '2026-06-02', rows: 25, idPrefix: 'PGP' }).text;
    const binary = await make.encrypted(csv, 'partner');
    const armoured = await make.encrypted(csv, 'partner', true);
    await ws.put('settle_20260602_a01.csv.pgp', binary);
    const first = await ws.run(pgpArgs(), PASS);
    expect(first.status, first.stderr).toBe(0);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 1, rows: 25 });
    expect(await rowsWithPrefix(db, 'PGP')).toBe(25);
    // encrypted stays encrypted in the archive: the bytes as delivered
    expect(await ws.read('archive', 'settle_20260602_a01.csv.pgp')).toEqual(binary);
    expect(contentHash(ws, 'settle_20260602_a01.csv.pgp')).toEqual({ sha256: sha(binary), content_sha256: sha(csv) });

    await ws.put('settle_20260602_a02.csv.asc', armoured);
    const again = await ws.run([...pgpArgs(), '--json'], PASS);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      loaded: 0,
      skipped: 1,
      files: [{ name: 'settle_20260602_a02.csv.asc', duplicate_of: { name: 'settle_20260602_a01.csv.pgp' } }],
    });
    expect(await ws.read('duplicates', 'settle_20260602_a02.csv.asc')).toEqual(armoured);

    // the first name again, encrypted anew: a resend of its content, not the load of its claim
    const third = await make.encrypted(csv, 'partner');
    await ws.put('settle_20260602_a01.csv.pgp', third);
    const same = await ws.run([...pgpArgs(), '--json'], PASS);
    expect(JSON.parse(same.stdout)).toMatchObject({ loaded: 0, skipped: 1, files: [{ outcome: 'skipped' }] });
    expect(ws.events().filter((e) => e.event === 'recovered')).toEqual([]);
    expect(ws.query('SELECT state FROM processed_files WHERE sha256 = ?', sha(third))).toEqual([{ state: 'duplicate' }]);
    expect(await rowsWithPrefix(db, 'PGP')).toBe(25);

    // layers within layers: gzipped then encrypted, zipped then encrypted: the same content again
    const gzipped = await make.encrypted(await make.gzip(csv, 6), 'partner');
    const zipped = await make.encrypted(await make.zip({ 'settle_20260602.csv': csv }), 'partner', true);
    await ws.put('settle_20260602_a03.csv.gz.pgp', gzipped);
    await ws.put('settle_20260602_a04.zip.asc', zipped);
    const nested = await ws.run([...pgpArgs(), '--json'], PASS);
    expect(nested.status, nested.stderr).toBe(0);
    expect(JSON.parse(nested.stdout)).toMatchObject({ loaded: 0, skipped: 2 });
    expect(contentHash(ws, 'settle_20260602_a03.csv.gz.pgp')).toEqual({ sha256: sha(gzipped), content_sha256: sha(csv) });
    expect(contentHash(ws, 'settle_20260602_a04.zip.asc')).toEqual({ sha256: sha(zipped), content_sha256: sha(csv) });
    expect(await ws.read('duplicates', 'settle_20260602_a04.zip.asc')).toEqual(zipped);
    expect(await rowsWithPrefix(db, 'PGP')).toBe(25);
  });

  it("settles a dead run's claim on a re-compressed resend as expired, not as the load of the content's first delivery", async () => {
    const ws = await Workspace.create(db.url);
    const csv = sampleSettlement({ date: '2026-06-07', rows: 8, idPrefix: 'STALE' }).text;
    const first = await make.gzip(csv, 1);
    const resend = await make.gzip(csv, 9);
    await ws.put('settle_20260607_a01.csv.gz', first);
    expect((await ws.run(ALL)).status).toBe(0);
    // a run died holding the resend's claim; the finance database has the content, from a01
    ws.stageDeadClaim('settle_20260607_a02.csv.gz', sha(resend));
    ws.withLedger((l) => l.prepare('UPDATE processed_files SET content_sha256 = ? WHERE sha256 = ?').run(sha(csv), sha(resend)));
    await ws.put('settle_20260607_a02.csv.gz', resend);
    const r = await ws.run([...ALL, '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 0, skipped: 1, stale: 1 });
    expect(ws.events().map((e) => e.event)).toContain('expired');
    expect(ws.events().map((e) => e.event)).not.toContain('recovered');
    expect(ws.ledgerFile('settle_20260607_a02.csv.gz')).toMatchObject({ state: 'duplicate' });
    expect(await rowsWithPrefix(db, 'STALE')).toBe(8);
  });

  it('rejects a file signed by another key, an unsigned one and a tampered one, naming why; nothing loads', async () => {
    const ws = await Workspace.create(db.url);
    const csv = (p: string) => sampleSettlement({ date: '2026-06-03', rows: 5, idPrefix: p }).text;
    const stranger = await make.encrypted(csv('STR'), 'stranger');
    const unsigned = await make.encrypted(csv('UNS'), null);
    const tampered = await make.encrypted(csv('TMP'), 'partner');
    tampered.writeUInt8(tampered.readUInt8(tampered.length - 30) ^ 0x01, tampered.length - 30);
    // signed, not encrypted: the signature is read, so the message names who signed what was altered
    const altered = await make.signed(csv('ALT'), 'partner');
    const at = altered.indexOf('ALT');
    altered.writeUInt8(altered.readUInt8(at) ^ 0x01, at);
    await ws.put('settle_20260603_altered.gpg', altered);
    await ws.put('settle_20260603_stranger.pgp', stranger);
    await ws.put('settle_20260603_unsigned.pgp', unsigned);
    await ws.put('settle_20260603_tampered.pgp', tampered);
    await ws.put('settle_20260603_plain.csv', csv('PLN'));
    const r = await ws.run(pgpArgs(), PASS);
    expect(r.status).toBe(1);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 0, rejected: 5 });
    const reason = (name: string) => ws.ledgerFile(name)?.reason ?? '';
    expect(reason('settle_20260603_stranger.pgp')).toContain(
      `signed by key ${make.strangerFingerprint}, not by the required key ${make.partnerFingerprint}`,
    );
    expect(reason('settle_20260603_unsigned.pgp')).toContain(`not signed: a signature by key ${make.partnerFingerprint} is required`);
    expect(reason('settle_20260603_tampered.pgp')).toMatch(/tampered/);
    expect(reason('settle_20260603_altered.gpg')).toContain(
      `its signature does not verify (tampered with, or damaged) (signed by key ${make.partnerFingerprint})`,
    );
    expect(reason('settle_20260603_plain.csv')).toContain('not an OpenPGP-signed delivery');
    expect(await ws.files('rejected')).toHaveLength(5);
    expect(await ws.read('rejected', 'settle_20260603_tampered.pgp')).toEqual(tampered);
    for (const p of ['STR', 'UNS', 'TMP', 'ALT', 'PLN']) expect(await rowsWithPrefix(db, p)).toBe(0);
  });

  it('a gzip rewritten in place while it was read and decoded: nothing of it loads, the new upload loads next run', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20260609_a01.csv.gz';
    const v1 = sampleSettlement({ date: '2026-06-09', rows: 4, idPrefix: 'RUP1' }).text;
    const v2 = sampleSettlement({ date: '2026-06-09', rows: 6, idPrefix: 'RUP2' }).text;
    await ws.put(name, await make.gzip(v1, 6));
    const v2Path = join(ws.root, 'v2.gz');
    await writeFile(v2Path, await make.gzip(v2, 6));
    // the partner's uploader rewrites the file the moment its last byte was read (and decoded)
    const rewrite = {
      SETTLE_TEST_FAULT: 'hook:after-download',
      SETTLE_TEST_HOOK: `cat "${v2Path}" > "${ws.intake}/$SETTLE_TEST_HOOK_FILE"`,
    };
    const first = await ws.run(ALL, rewrite);
    expect(first.status, first.stderr).toBe(0);
    expect(parseSummary(first.stdout)).toMatchObject({ loaded: 0, not_ready: 1 });
    expect(await rowsWithPrefix(db, 'RUP1')).toBe(0);
    expect(ws.ledgerFiles()).toEqual([]);
    expect(await ws.files('intake')).toEqual([name]);

    const second = await ws.run(ALL);
    expect(parseSummary(second.stdout)).toMatchObject({ loaded: 1, rows: 6 });
    expect([await rowsWithPrefix(db, 'RUP1'), await rowsWithPrefix(db, 'RUP2')]).toEqual([0, 6]);
    expect(await ws.read('archive', name)).toEqual(await readFile(v2Path));
  });

  it('leaves an encrypted file in the intake while no --pgp-key is set; a wrong passphrase is exit 2, nothing touched', async () => {
    const ws = await Workspace.create(db.url);
    const file = await make.encrypted(sampleSettlement({ date: '2026-06-04', rows: 3, idPrefix: 'NOKEY' }).text, 'partner');
    await ws.put('settle_20260604_a01.pgp', file);
    const r = await ws.run(ALL);
    expect(r.status).toBe(1);
    expect(parseSummary(r.stdout)).toMatchObject({ failed: 1, rejected: 0 });
    expect(r.stderr).toContain('no --pgp-key is configured');
    expect(await ws.files('intake')).toEqual(['settle_20260604_a01.pgp']);

    const wrong = await ws.run(pgpArgs(), { SETTLE_PGP_PASSPHRASE: 'wrong' });
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('cannot be unlocked with the configured passphrase');
    expect(wrong.stderr).not.toContain('wrong');
    expect(ws.runs()).toHaveLength(1);
    expect(await ws.files('intake')).toEqual(['settle_20260604_a01.pgp']);

    const config = await ws.cli(['config', '--json'], { ...PASS });
    expect(config.stdout).not.toContain(PGP_PASSPHRASE);
  });

  it('rejects a 10 MB gzip that inflates past the ratio limit, with bounded memory, and a zip of two CSVs naming both', async () => {
    const ws = await Workspace.create(db.url);
    const bomb = await make.gzipBomb();
    expect(bomb.length).toBeGreaterThan(9_000_000);
    await ws.put('settle_20260605_bomb.csv.gz', bomb);
    const both = await make.zip({ 'settle_20260605_x.csv': 'a\n', 'settle_20260605_y.csv': 'b\n' });
    await ws.put('settle_20260605_two.zip', both);

    // /usr/bin/time reports the run's peak resident memory (KiB) on its last stderr line
    const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, ...ws.runArgs(ALL)], {
      cwd: ws.root,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME!, DATABASE_URL: db.url },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(1);
    expect(parseSummary(r.stdout)).toMatchObject({ loaded: 0, rejected: 2 });
    const peakKiB = Number(r.stderr.trim().split('\n').at(-1));
    expect(peakKiB).toBeLessThan(150 * 1024);
    expect(ws.ledgerFile('settle_20260605_bomb.csv.gz')?.reason).toMatch(/inflates more than 100:1 .*a decompression bomb is not loaded/);
    expect(ws.ledgerFile('settle_20260605_two.zip')?.reason).toContain('2 members ("settle_20260605_x.csv", "settle_20260605_y.csv")');
    expect(sha(await ws.read('rejected', 'settle_20260605_bomb.csv.gz'))).toBe(sha(bomb)); // (a diff of 10 MB would not help)
    expect(await ws.files('rejected')).toEqual(['settle_20260605_bomb.csv.gz', 'settle_20260605_two.zip']);
  });

  it('rejects a delivery whose content is over --max-decoded-bytes', async () => {
    const ws = await Workspace.create(db.url);
    const csv = sampleSettlement({ date: '2026-06-06', rows: 200, idPrefix: 'BIG' }).text;
    await ws.put('settle_20260606_a01.csv.gz', await make.gzip(csv, 6));
    const r = await ws.run([...ALL, '--max-decoded-bytes', '4096']);
    expect(r.status).toBe(1);
    expect(ws.ledgerFile('settle_20260606_a01.csv.gz')).toMatchObject({ state: 'rejected' });
    expect(ws.ledgerFile('settle_20260606_a01.csv.gz')?.reason).toContain('over the limit of 4096 bytes (--max-decoded-bytes)');
    expect(await rowsWithPrefix(db, 'BIG')).toBe(0);
  });
});

describe('a gzipped delivery over SFTP', () => {
  it('is downloaded, decoded and hashed in one pass; a re-compressed resend is skipped; the server archive keeps the gzip', async () => {
    const sshd = await TestSshd.start();
    try {
      const ws = await Workspace.create(db.url);
      const root = await mkdtemp(join(tmpdir(), 'settle-remote-'));
      const intake = join(root, 'intake');
      const staging = join(root, 'staging');
      const seen = join(root, 'seen');
      await mkdir(intake);
      await mkdir(staging, { mode: 0o700 });
      await mkdir(seen);
      const csv = sampleSettlement({ date: '2026-06-08', rows: 12, idPrefix: 'SFTPGZ' }).text;
      const first = await make.gzip(csv, 1);
      const resend = await make.gzip(csv, 9);
      const old = new Date(Date.now() - 3600_000);
      for (const [name, bytes] of [
        ['settle_20260608_a01.csv.gz', first],
        ['settle_20260608_a02.csv.gz', resend],
      ] as const) {
        await writeFile(join(intake, name), bytes);
        await utimes(join(intake, name), old, old);
      }
      // The moment the last byte has been downloaded, the content is already decoded: the hook
      // keeps a copy of it, then empties the staged copy of the gzip, which nothing reads again.
      const atEndOfDownload = {
        SETTLE_TEST_FAULT: 'hook:after-download',
        SETTLE_TEST_HOOK: `for f in "${staging}"/settle-*/*; do case "$f" in
          *.content) cp "$f" "${seen}/$SETTLE_TEST_HOOK_FILE" ;;
          *) : > "$f" ;;
        esac; done`,
      };
      const args = ['run', '--intake', sshd.url(intake), '--ledger', ws.ledger, '--staging', staging, '--stable-for', '0', ...ALL];
      const r = await ws.cli([...args, '--sftp-key', sshd.clientKey, '--known-hosts', sshd.knownHosts, '--json'], atEndOfDownload);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ loaded: 1, skipped: 1, rows: 12 });
      expect(await readFile(join(seen, 'settle_20260608_a01.csv.gz'), 'utf8')).toBe(csv);
      expect(await readFile(join(seen, 'settle_20260608_a02.csv.gz'), 'utf8')).toBe(csv);
      expect(await rowsWithPrefix(db, 'SFTPGZ')).toBe(12);
      expect(await readFile(join(root, 'archive', 'settle_20260608_a01.csv.gz'))).toEqual(first);
      expect(await readdir(join(root, 'duplicates'))).toEqual(['settle_20260608_a02.csv.gz']);
      expect(await fileLoad('settle_20260608_a01.csv.gz')).toMatchObject({ sha256: sha(csv), delivered_sha256: sha(first) });
      expect(contentHash(ws, 'settle_20260608_a01.csv.gz')).toEqual({ sha256: sha(first), content_sha256: sha(csv) });
    } finally {
      await sshd.destroy();
    }
  });
});
