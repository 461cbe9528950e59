import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';

/** Our key's passphrase: only ever in the environment, as SETTLE_PGP_PASSPHRASE. */
export const PGP_PASSPHRASE = 'correct horse battery staple';

export interface DeliveryFiles {
  /** our armoured private key (decrypts; protected by PGP_PASSPHRASE), for --pgp-key */
  readonly ourKey: string;
  /** the partner's armoured public key, for --pgp-verify-key */
  readonly partnerKey: string;
  readonly partnerFingerprint: string;
  /** the CSV gzipped at `level` (1 to 9: other bytes, the same content) */
  gzip(csv: string, level: number): Promise<Buffer>;
  /** the CSV encrypted to our key, signed by `signer` unless null */
  encrypted(csv: string, signer: 'partner' | 'stranger' | null): Promise<Buffer>;
}

/**
 * Real gzip and OpenPGP files made with Debian's tools, and the keys to read them: our key,
 * the partner's (signs) and a stranger's, generated once for the calling describe block.
 */
export function deliveryFiles(): DeliveryFiles {
  let scratch = '';
  const sh = (cmd: string, env: Record<string, string> = {}) =>
    execFileSync('/bin/sh', ['-c', cmd], { cwd: scratch, env: { ...process.env, ...env } });
  const home = (who: string) => join(scratch, `gnupg-${who}`);
  const gpg = (who: string, args: string) =>
    sh(`gpg --batch --quiet --yes --pinentry-mode loopback --trust-model always ${args}`, { GNUPGHOME: home(who) });
  let partnerFingerprint = '';

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'settle-delivery-files-'));
    for (const who of ['us', 'partner', 'stranger']) {
      await mkdir(home(who), { mode: 0o700 });
      const pass = who === 'us' ? PGP_PASSPHRASE : who;
      gpg(who, `--passphrase '${pass}' --quick-gen-key '${who} <${who}@example.com>' future-default default never`);
    }
    gpg('us', `--passphrase '${PGP_PASSPHRASE}' --armor --export-secret-keys -o us.sec.asc us@example.com`);
    gpg('us', '--armor --export -o us.pub.asc us@example.com');
    gpg('partner', '--armor --export -o partner.pub.asc partner@example.com');
    for (const who of ['partner', 'stranger']) gpg(who, `--import ${join(scratch, 'us.pub.asc')}`);
    partnerFingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(gpg('partner', '--with-colons --fingerprint partner@example.com').toString())![1]!;
  });

  return {
    get ourKey() {
      return join(scratch, 'us.sec.asc');
    },
    get partnerKey() {
      return join(scratch, 'partner.pub.asc');
    },
    get partnerFingerprint() {
      return partnerFingerprint;
    },
    async gzip(csv, level) {
      await writeFile(join(scratch, 'in.csv'), csv);
      sh(`rm -f in.csv.gz && gzip -${level} -n in.csv`);
      return readFile(join(scratch, 'in.csv.gz'));
    },
    async encrypted(csv, signer) {
      await writeFile(join(scratch, 'in.csv'), csv);
      const sign = signer ? `--passphrase ${signer} -u ${signer}@example.com --sign` : '';
      gpg(signer ?? 'partner', `-r us@example.com ${sign} --encrypt -o out in.csv`);
      return readFile(join(scratch, 'out'));
    },
  };
}
