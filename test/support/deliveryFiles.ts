import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll } from 'vitest';

/** Our key's passphrase: only ever in the environment, as SETTLE_PGP_PASSPHRASE. */
export const PGP_PASSPHRASE = 'correct horse battery staple';

type Signer = 'partner' | 'stranger';

export interface DeliveryFiles {
  /** our armoured private key (decrypts; protected by PGP_PASSPHRASE), for --pgp-key */
  readonly ourKey: string;
  /** the partner's armoured public key, for --pgp-verify-key */
  readonly partnerKey: string;
  readonly partnerFingerprint: string;
  /** a key nobody configured: its signatures are not the partner's */
  readonly strangerFingerprint: string;
  /** the content gzipped at `level` (1 to 9: other bytes, the same content) */
  gzip(content: string | Buffer, level: number): Promise<Buffer>;
  /** a zip of these members (name: text) */
  zip(members: Record<string, string>): Promise<Buffer>;
  /** the content encrypted to our key (binary, or armoured with `armor`), signed by `signer` unless null */
  encrypted(content: string | Buffer, signer: Signer | null, armor?: boolean): Promise<Buffer>;
  /** the content signed by `signer`, neither encrypted nor compressed (its text is in the clear) */
  signed(content: string, signer: Signer): Promise<Buffer>;
  /** 100 gzip members of 100 MB of zeros each: 10 MB delivered, 10 GB inflated */
  gzipBomb(): Promise<Buffer>;
}

/**
 * Real gzip, zip and OpenPGP files made with Debian's tools, and the keys to read them: our
 * key, the partner's (signs) and a stranger's, generated once for the calling describe block.
 */
export function deliveryFiles(): DeliveryFiles {
  let scratch = '';
  const sh = (cmd: string, env: Record<string, string> = {}) =>
    execFileSync('/bin/sh', ['-c', cmd], { cwd: scratch, env: { ...process.env, ...env } });
  const home = (who: string) => join(scratch, `gnupg-${who}`);
  const gpg = (who: string, args: string) =>
    sh(`gpg --batch --quiet --yes --pinentry-mode loopback --trust-model always ${args}`, { GNUPGHOME: home(who) });
  const fingerprint = (who: string) =>
    /^fpr:+([0-9A-F]{40}):/m.exec(gpg(who, `--with-colons --fingerprint ${who}@example.com`).toString())![1]!;
  /** `cmd` run on the content as `in` in the scratch folder; its result is `out` */
  const made = async (content: string | Buffer, cmd: () => void) => {
    await writeFile(join(scratch, 'in'), content);
    sh('rm -f out');
    cmd();
    return readFile(join(scratch, 'out'));
  };
  const fingerprints = { partner: '', stranger: '' };

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
    fingerprints.partner = fingerprint('partner');
    fingerprints.stranger = fingerprint('stranger');
  });

  return {
    get ourKey() {
      return join(scratch, 'us.sec.asc');
    },
    get partnerKey() {
      return join(scratch, 'partner.pub.asc');
    },
    get partnerFingerprint() {
      return fingerprints.partner;
    },
    get strangerFingerprint() {
      return fingerprints.stranger;
    },
    gzip: (content, level) => made(content, () => sh(`gzip -${level} -n -c in > out`)),
    async zip(members) {
      for (const [name, text] of Object.entries(members)) await writeFile(join(scratch, name), text);
      return made('', () => sh(`rm -f out.zip && zip -q out.zip ${Object.keys(members).join(' ')} && mv out.zip out`));
    },
    encrypted: (content, signer, armor = false) =>
      made(content, () => {
        const sign = signer ? `--passphrase ${signer} -u ${signer}@example.com --sign` : '';
        gpg(signer ?? 'partner', `${armor ? '--armor' : ''} -r us@example.com ${sign} --encrypt -o out in`);
      }),
    signed: (content, signer) =>
      made(content, () => gpg(signer, `--passphrase ${signer} -u ${signer}@example.com --compress-algo none --sign -o out in`)),
    gzipBomb: () =>
      made('', () => sh('head -c 100000000 /dev/zero | gzip -9 > member.gz && for i in $(seq 100); do cat member.gz; done > out')),
  };
}
