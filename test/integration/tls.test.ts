import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPostgres, type RunningPostgres } from '../support/postgresServer.js';
import { runCli } from '../support/cli.js';

/** A CA, and a server certificate it signed for 127.0.0.1 and localhost (not for 127.0.0.2). */
async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=settle test CA', '-keyout', 'ca.key', '-out', 'ca.crt');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr');
  await writeFile(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'san.ext',
    '-out',
    'server.crt',
  );
  return { ca: join(dir, 'ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
}

describe('a finance database with TLS on', () => {
  let dir: string;
  let server: RunningPostgres;
  let ca: string;
  let url: (host: string) => string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'settle-tls-'));
    await chmod(dir, 0o755);
    const certs = await makeCertificates(dir);
    ca = certs.ca;
    server = await startTestPostgres(dir, {
      // 127.0.0.2 too: the same server under a name its certificate does not carry
      flags: [
        '-c',
        'ssl=on',
        '-c',
        `ssl_cert_file=${certs.cert}`,
        '-c',
        `ssl_key_file=${certs.key}`,
        '-c',
        'listen_addresses=127.0.0.1,127.0.0.2',
      ],
      // the server refuses a key that its own user does not own, or that others may read
      beforeStart: async (dataDir) => {
        const owner = await stat(dataDir);
        await chown(certs.key, owner.uid, owner.gid);
        await chmod(certs.key, 0o600);
        await chmod(certs.cert, 0o644);
      },
    });
    await server.createDatabase('finance');
    url = (host: string) => {
      const u = new URL(server.url('finance'));
      u.hostname = host;
      u.search = `?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;
      return u.toString();
    };
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('connects with verify-full and the CA; refuses a host name the certificate does not carry (exit 2, one line)', async () => {
    const ledger = join(dir, 'ledger.sqlite');
    const ok = await runCli(['migrate', '--ledger', ledger], { DATABASE_URL: url('127.0.0.1') });
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^migrate done: finance schema settle at version \d+/);

    const wrong = await runCli(['migrate', '--ledger', ledger], { DATABASE_URL: url('127.0.0.2') });
    expect(wrong.status).toBe(2);
    const lines = wrong.stderr.trim().split('\n');
    expect(lines, wrong.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/refused its TLS certificate: .*127\.0\.0\.2.* \(check the host name, sslrootcert or PGSSLROOTCERT\)/);
  });

  it('sslmode=require (or prefer, verify-ca) in a URL is checked as verify-full, without a library warning; a refusal says so', async () => {
    const withMode = (mode: string, root: boolean) => {
      const u = new URL(url('127.0.0.1'));
      u.search = `?sslmode=${mode}${root ? `&sslrootcert=${encodeURIComponent(ca)}` : ''}`;
      return u.toString();
    };
    const ledger = join(dir, 'ledger3.sqlite');
    for (const mode of ['require', 'prefer', 'verify-ca']) {
      const ok = await runCli(['migrate', '--ledger', ledger], { DATABASE_URL: withMode(mode, true) });
      expect(ok.status, ok.stderr).toBe(0);
      expect(ok.stderr, mode).toBe('');
    }
    // without the CA the certificate is refused, as verify-full refuses it: one line, naming the mode as written
    const refused = await runCli(['migrate', '--ledger', ledger], { DATABASE_URL: withMode('require', false) });
    expect(refused.status).toBe(2);
    const lines = refused.stderr.trim().split('\n');
    expect(lines, refused.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      /refused its TLS certificate: .*; sslmode=require is checked as verify-full: the certificate must be signed by the CA of sslrootcert and name the host\)$/,
    );
  });

  it('PGSSLMODE=verify-full with PGSSLROOTCERT and the PG* variables, no URL', async () => {
    const u = new URL(server.url('finance'));
    const base = { PGPORT: u.port, PGUSER: u.username, PGPASSWORD: decodeURIComponent(u.password), PGDATABASE: 'finance' };
    const env = { ...base, PGSSLMODE: 'verify-full', PGSSLROOTCERT: ca };
    const ledger = join(dir, 'ledger2.sqlite');
    const ok = await runCli(['migrate', '--ledger', ledger], { ...env, PGHOST: 'localhost' });
    expect(ok.status, ok.stderr).toBe(0);
    const wrong = await runCli(['migrate', '--ledger', ledger], { ...env, PGHOST: '127.0.0.2' });
    expect(wrong.status).toBe(2);
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
    expect(wrong.stderr).toMatch(/refused its TLS certificate/);
  });
});
