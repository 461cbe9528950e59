import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestSshd } from '../support/sshd.js';
import { financeDatabase, putIn, Workspace } from '../support/workspace.js';

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await TestSshd.start();
});
afterAll(async () => sshd?.destroy());

/** `sha256sum -c` run in a folder, as an auditor runs it: each line's verdict, and its exit status. */
function sha256sumCheck(sums: string, folder: string): { status: number; lines: string[] } {
  try {
    const out = execFileSync('sha256sum', ['-c', sums], { cwd: folder, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, lines: out.trim().split('\n').sort() };
  } catch (err) {
    const e = err as { status: number; stdout: string };
    return { status: e.status, lines: e.stdout.trim().split('\n').sort() };
  }
}

describe('an evidence pack of three partners, one on an SFTP server', () => {
  it("holds a SHA256SUMS per partner that sha256sum -c verifies in that partner's archive folder, and its README says how for each", async () => {
    const own = await financeDatabase(); // its own: the audit inside the pack checks every load in it
    const ws = await Workspace.create(own.url);
    try {
      const remote = await mkdtemp(join(tmpdir(), 'settle-evidence-remote-')); // the folder the SFTP server serves
      const stripe = join(ws.root, 'stripe');
      const bank = join(ws.root, 'bank');
      const bankArchive = join(ws.root, 'kept', 'bank-archive'); // an archive not beside its intake
      await putIn(join(remote, 'in'), 'settle_20261201_a01.csv', sampleSettlement({ date: '2026-12-01', rows: 3, idPrefix: 'EVA' }).text);
      await putIn(join(stripe, 'in'), 'settle_20261201_s01.csv', sampleSettlement({ date: '2026-12-01', rows: 2, idPrefix: 'EVS' }).text);
      await putIn(join(bank, 'in'), 'settle_20261201_b01.csv', sampleSettlement({ date: '2026-12-01', rows: 4, idPrefix: 'EVB' }).text);
      const config = await ws.partnersConfig(
        {
          adyen: { intake: sshd.url(join(remote, 'in')) },
          stripe: { intake: join(stripe, 'in') },
          bank: { intake: join(bank, 'in'), archive: bankArchive },
        },
        { sftpKey: sshd.clientKey, knownHosts: sshd.knownHosts },
      );
      const run = await ws.cli(['run', '--config', config, '--json']);
      expect(run.status, run.stderr).toBe(0);
      expect(await readdir(join(remote, 'archive'))).toEqual(['settle_20261201_a01.csv']);

      const today = new Date().toISOString().slice(0, 10);
      const out = join(ws.root, 'evidence');
      const made = await ws.cli(['report', 'evidence', '--config', config, '--from', today, '--to', today, '--out', out, '--json']);
      expect(made.status, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout)).toMatchObject({ loads: 3 });
      const files = (await readdir(out)).sort();
      expect(files).toEqual([
        'MANIFEST',
        'README.txt',
        'SHA256SUMS.adyen',
        'SHA256SUMS.bank',
        'SHA256SUMS.stripe',
        'audit.json',
        'audit.txt',
        'events.csv',
        'loads.csv',
      ]);
      // the manifest covers each partner's checksums
      const manifest = sha256sumCheck(join(out, 'MANIFEST'), out);
      expect(manifest.status).toBe(0);
      expect(manifest.lines).toEqual(expect.arrayContaining(['SHA256SUMS.adyen: OK', 'SHA256SUMS.bank: OK', 'SHA256SUMS.stripe: OK']));

      // each in its own archive folder; the SFTP one in the folder the server serves as /…/archive
      expect(sha256sumCheck(join(out, 'SHA256SUMS.stripe'), join(stripe, 'archive'))).toEqual({
        status: 0,
        lines: ['settle_20261201_s01.csv: OK'],
      });
      expect(sha256sumCheck(join(out, 'SHA256SUMS.bank'), bankArchive)).toEqual({ status: 0, lines: ['settle_20261201_b01.csv: OK'] });
      expect(sha256sumCheck(join(out, 'SHA256SUMS.adyen'), join(remote, 'archive'))).toEqual({
        status: 0,
        lines: ['settle_20261201_a01.csv: OK'],
      });
      // one partner's list verifies nowhere else: each names its own files only
      expect(sha256sumCheck(join(out, 'SHA256SUMS.bank'), join(stripe, 'archive')).status).toBe(1);

      const readme = await readFile(join(out, 'README.txt'), 'utf8');
      expect(readme).toContain(`cd ${join(stripe, 'archive')} && sha256sum -c /path/to/this/pack/SHA256SUMS.stripe`);
      expect(readme).toContain(`cd ${bankArchive} && sha256sum -c /path/to/this/pack/SHA256SUMS.bank`);
      expect(readme).toContain(`sftp://${sshd.user}@127.0.0.1:${sshd.port}${join(remote, 'archive')}`);
      expect(readme).toContain(`sftp -r -P ${sshd.port} ${sshd.user}@127.0.0.1:${join(remote, 'archive')} /tmp/adyen-archive`);
      expect(readme).toContain('cd /tmp/adyen-archive && sha256sum -c /path/to/this/pack/SHA256SUMS.adyen');
    } finally {
      await own.close();
    }
  });
});
