import { copyFile, mkdir, mkdtemp, readdir, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { rowsWithPrefix, SHARED_DEFAULT_LAYOUT, sharedFinanceDatabase, putIn, Workspace } from '../support/workspace.js';
import { TestSshd } from '../support/sshd.js';

const db = sharedFinanceDatabase();
let sshd: TestSshd;
beforeAll(async () => {
  sshd = await TestSshd.start();
});
afterAll(async () => sshd?.destroy());

const files = async (folder: string) => (await readdir(folder).catch(() => [])).sort();
const oneLine = (stderr: string) => stderr.trim().split('\n')[0]!;

/** Writes the config file as given, text and all (a key given twice cannot be written by JSON.stringify). */
async function configText(ws: Workspace, text: string): Promise<string> {
  const path = join(ws.root, 'config.json');
  await writeFile(path, text);
  return path;
}

/** Nothing in the ledger but, where said, the runs of partners that could not start. */
function ledgerUntouched(ws: Workspace) {
  expect(ws.ledgerFiles()).toEqual([]);
  expect(ws.events()).toEqual([]);
  expect(ws.query('SELECT * FROM moves')).toEqual([]);
}

let cases = 0;

describe('a config that is wrong anywhere is exit 2 before any partner runs', () => {
  it('a partner named twice in "partners": exit 2 naming both places by line and column, nothing in the ledger', async () => {
    const ws = await Workspace.create(db.url);
    const adyen = join(ws.root, 'adyen', 'intake');
    const second = join(ws.root, 'adyen-2', 'intake');
    await putIn(adyen, 'settle_20261101_a01.csv', sampleSettlement({ date: '2026-11-01', rows: 3, idPrefix: 'TWICEA' }).text);
    await putIn(second, 'settle_20261101_b01.csv', sampleSettlement({ date: '2026-11-01', rows: 3, idPrefix: 'TWICEB' }).text);
    const config = await configText(
      ws,
      [
        '{',
        `  "ledger": ${JSON.stringify(ws.ledger)},`,
        '  "stableFor": 0,',
        '  "partners": {',
        `    "adyen": { "intake": ${JSON.stringify(adyen)} },`,
        `    "stripe": { "intake": ${JSON.stringify(join(ws.root, 'stripe', 'intake'))} },`,
        `    "adyen": { "intake": ${JSON.stringify(second)} }`,
        '  }',
        '}',
      ].join('\n'),
    );
    const r = await ws.cli(['run', '--config', config]);
    expect(r.status).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      `settle-ingest: config file ${config}: "partners"."adyen" is given twice (line 5, column 5, and line 7, column 5): JSON would keep only the last and ignore the first: keep one`,
    );
    expect(r.stdout).toBe('');
    ledgerUntouched(ws);
    expect(ws.runs()).toEqual([]);
    expect(await files(adyen)).toEqual(['settle_20261101_a01.csv']);
    expect(await files(second)).toEqual(['settle_20261101_b01.csv']);

    // a syntax error says its line and column too, for every command that reads the config
    await configText(ws, `{\n  "ledger": ${JSON.stringify(ws.ledger)}\n  "stableFor": 0\n}\n`);
    for (const args of [['run'], ['report', 'runs']]) {
      const bad = await ws.cli([...args, '--config', config]);
      expect({ args, status: bad.status }).toEqual({ args, status: 2 });
      expect(oneLine(bad.stderr)).toBe(
        `settle-ingest: config file ${config} is not valid JSON: line 3, column 3: expected "," or "}" after a value in an object, found "\\""`,
      );
    }
    // status answers a monitor: UNKNOWN, saying where
    const status = await ws.cli(['status', '--config', config]);
    expect(status.status).toBe(3);
    expect(status.stdout + status.stderr).toMatch(/not valid JSON: line 3, column 3: /);
  });

  it('two partners whose intakes are one folder through a symlink: exit 2 naming both, nothing loaded', async () => {
    const ws = await Workspace.create(db.url);
    const adyen = join(ws.root, 'adyen', 'intake');
    await putIn(adyen, 'settle_20261102_a01.csv', sampleSettlement({ date: '2026-11-02', rows: 4, idPrefix: 'LINKED' }).text);
    await mkdir(join(ws.root, 'stripe'));
    await symlink(adyen, join(ws.root, 'stripe', 'intake'));
    const config = await configText(
      ws,
      JSON.stringify({
        ledger: ws.ledger,
        stableFor: 0,
        partners: { adyen: { intake: adyen }, stripe: { intake: join(ws.root, 'stripe', 'intake') } },
      }),
    );
    const r = await ws.cli(['run', '--config', config]);
    expect(r.status).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      `settle-ingest: partners "adyen" and "stripe" share one folder: adyen's intake ${adyen} and stripe's intake ${join(ws.root, 'stripe', 'intake')} are one folder, ${adyen} (links resolved): each partner needs folders of its own`,
    );
    ledgerUntouched(ws);
    expect(ws.runs()).toEqual([]);
    expect(await files(adyen)).toEqual(['settle_20261102_a01.csv']);
    expect(await rowsWithPrefix(db, 'LINKED')).toBe(0);
  });

  it.each([
    ['no SFTP credentials at all', {}, /partner "stripe": no SFTP credentials: set --sftp-key/],
    ['a key file that is no key', { sftpKey: 'not-a-key' }, /partner "stripe": SFTP key .*not-a-key cannot be used: /],
    ['a key file that is not there', { sftpKey: 'missing-key' }, /partner "stripe": SFTP key .*missing-key cannot be read: /],
    [
      'a known_hosts file that is not there',
      { sftpKey: 'key', knownHosts: 'missing_known_hosts' },
      /partner "stripe": known_hosts file .*missing_known_hosts cannot be read/,
    ],
  ])(
    'a local partner with a file, and an SFTP partner with %s: exit 2 before anything loads, the file still in its intake',
    async (_what, stripeAccess: Record<string, string>, message) => {
      const ws = await Workspace.create(db.url);
      const adyen = join(ws.root, 'adyen', 'intake');
      const prefix = `NOCRED${++cases}`;
      await putIn(adyen, 'settle_20261103_a01.csv', sampleSettlement({ date: '2026-11-03', rows: 5, idPrefix: prefix }).text);
      await writeFile(join(ws.root, 'not-a-key'), 'this is no private key\n');
      const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
      await mkdir(join(remote, 'intake'));
      const access = Object.fromEntries(Object.entries(stripeAccess).map(([k, v]) => [k, v === 'key' ? sshd.clientKey : v]));
      const config = await configText(
        ws,
        JSON.stringify({
          ledger: ws.ledger,
          stableFor: 0,
          layout: SHARED_DEFAULT_LAYOUT,
          partners: {
            adyen: { intake: adyen },
            stripe: { intake: sshd.url(join(remote, 'intake')), knownHosts: sshd.knownHosts, ...access },
          },
        }),
      );
      const r = await ws.cli(['run', '--config', config]);
      expect(r.status, r.stderr).toBe(2);
      expect(oneLine(r.stderr)).toMatch(message);
      expect(oneLine(r.stderr)).toMatch(/\(no partner was run: every partner's settings are checked before the first runs\)$/);
      expect(await files(adyen)).toEqual(['settle_20261103_a01.csv']);
      expect(await files(join(ws.root, 'adyen', 'archive'))).toEqual([]);
      expect(await rowsWithPrefix(db, prefix)).toBe(0);
      ledgerUntouched(ws);
      // the partner that could not start is kept as such, with its reason; the other was never begun
      expect(ws.runs().map((run) => [run.partner, run.status, run.exit_status, run.reason])).toEqual([
        ['stripe', 'not_started', 2, expect.stringMatching(message.source.replace(/^partner "stripe": /, ''))],
      ]);
    },
  );
});

describe('the SFTP key, checked before the run', () => {
  it('a key with a passphrase: refused without it (exit 2, nothing touched), taken with it', async () => {
    const ws = await Workspace.create(db.url);
    const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
    await putIn(
      join(remote, 'intake'),
      'settle_20261106_a01.csv',
      sampleSettlement({ date: '2026-11-06', rows: 3, idPrefix: 'LOCKED' }).text,
    );
    const key = join(ws.root, 'id_locked');
    await copyFile(sshd.clientKey, key);
    execFileSync('ssh-keygen', ['-q', '-p', '-P', '', '-N', 'opensesame', '-f', key]);
    const args = ['run', '--intake', sshd.url(join(remote, 'intake')), '--ledger', ws.ledger, '--stable-for', '0'];
    const access = ['--sftp-key', key, '--known-hosts', sshd.knownHosts];
    const refused = await ws.cli([...args, ...access]);
    expect(refused.status).toBe(2);
    expect(oneLine(refused.stderr)).toBe(
      `settle-ingest: SFTP key ${key} cannot be used: Encrypted private OpenSSH key detected, but no passphrase given (SETTLE_SFTP_KEY_PASSPHRASE for a key with a passphrase)`,
    );
    const wrong = await ws.cli([...args, ...access], { SETTLE_SFTP_KEY_PASSPHRASE: 'guess' });
    expect(wrong.status).toBe(2);
    expect(oneLine(wrong.stderr)).toMatch(/cannot be used: .*bad passphrase/);
    expect(await files(join(remote, 'intake'))).toEqual(['settle_20261106_a01.csv']);
    ledgerUntouched(ws);
    const taken = await ws.cli([...args, ...access], { SETTLE_SFTP_KEY_PASSPHRASE: 'opensesame' });
    expect(taken.status, taken.stderr).toBe(0);
    expect(await files(join(remote, 'archive'))).toEqual(['settle_20261106_a01.csv']);
    expect(await rowsWithPrefix(db, 'LOCKED')).toBe(3);
  });
});

describe('exit 2 only when nothing was touched', () => {
  it('a refusal only the server can give, after another partner loaded: exit 1, the partner named', async () => {
    const ws = await Workspace.create(db.url);
    const adyen = join(ws.root, 'adyen', 'intake');
    await putIn(adyen, 'settle_20261104_a01.csv', sampleSettlement({ date: '2026-11-04', rows: 6, idPrefix: 'AFTER' }).text);
    // stripe's folder is not on the server: only connecting can tell
    const remote = await mkdtemp(join(tmpdir(), 'settle-remote-'));
    const partners = {
      adyen: { intake: adyen },
      stripe: { intake: sshd.url(join(remote, 'intake')) },
    };
    const configOf = (order: string[]) =>
      configText(
        ws,
        JSON.stringify({
          ledger: ws.ledger,
          stableFor: 0,
          sftpKey: sshd.clientKey,
          knownHosts: sshd.knownHosts,
          layout: SHARED_DEFAULT_LAYOUT,
          partners: Object.fromEntries(order.map((name) => [name, partners[name as keyof typeof partners]])),
        }),
      );
    const config = await configOf(['adyen', 'stripe']);
    const r = await ws.cli(['run', '--config', config, '--json']);
    expect(r.status, r.stderr).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ loaded: 1, exit_status: 1 });
    expect(j.partners.map((p: { partner: string; status: string; exit_status: number }) => [p.partner, p.status, p.exit_status])).toEqual([
      ['adyen', 'finished', 0],
      ['stripe', 'not_started', 1],
    ]);
    expect(j.partners[1].error).toMatch(/intake .*\/intake does not exist on the server or is not a folder/);
    expect(await files(join(ws.root, 'adyen', 'archive'))).toEqual(['settle_20261104_a01.csv']);
    expect(await rowsWithPrefix(db, 'AFTER')).toBe(6);

    // the same when the refused partner comes first and the other loads after it
    await putIn(adyen, 'settle_20261105_a01.csv', sampleSettlement({ date: '2026-11-05', rows: 2, idPrefix: 'AFTER2' }).text);
    await configOf(['stripe', 'adyen']);
    const reversed = await ws.cli(['run', '--config', config]);
    expect(reversed.status, reversed.stderr).toBe(1);
    const lines = reversed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^stripe: run r-\S+ not started: .*\(could not start: .*does not exist on the server/);
    expect(lines[1]).toMatch(/^adyen: run r-\S+ done: loaded=1 /);
    expect(await rowsWithPrefix(db, 'AFTER2')).toBe(2);
  });
});
